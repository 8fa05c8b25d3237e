package inspect

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

// BenchmarkStatsArchive aggregates the archive named by DLQ_BENCH_ARCHIVE
// (see scripts/bench/inspect.sh) by reason, as `dlq stats` does.
func BenchmarkStatsArchive(b *testing.B) {
	path := os.Getenv("DLQ_BENCH_ARCHIVE")
	if path == "" {
		b.Skip("DLQ_BENCH_ARCHIVE not set: scripts/bench/inspect.sh generates one")
	}
	a, err := archive.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	g, _ := ParseGroupBy("reason")
	var read int64
	for b.Loop() {
		res, _, err := CollectStats(context.Background(), a, "", broker.PeekOptions{}, StatsOptions{GroupBy: g})
		if err != nil {
			b.Fatal(err)
		}
		read += res.Read
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkArchiveRead is the archive reader alone, for comparison.
func BenchmarkArchiveRead(b *testing.B) {
	path := os.Getenv("DLQ_BENCH_ARCHIVE")
	if path == "" {
		b.Skip("DLQ_BENCH_ARCHIVE not set")
	}
	a, err := archive.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	for _, bc := range []struct {
		name string
		peek func(context.Context, string, broker.PeekOptions, func(*broker.Message) error) (broker.PeekReport, error)
	}{{"given", a.Peek}, {"lent", a.PeekReused}} {
		b.Run(bc.name, func(b *testing.B) {
			var read int64
			for b.Loop() {
				rep, err := bc.peek(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				read += rep.Read
			}
			b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkReason is the reason extraction of one 1 KiB JSON body.
func BenchmarkReason(b *testing.B) {
	m := rabbitMsg()
	m.Headers = nil
	m.Body = []byte(`{"order_id":"ord-1","customer":{"id":"c-1","tier":"t1"},"amount":12.5,"error":{"code":400,"message":"card declined"},"note":"` + string(make([]byte, 0)) + `` + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + `"}`)
	for b.Loop() {
		if Reason(m) != "card declined" {
			b.Fatal("wrong reason")
		}
	}
}

// BenchmarkDocument builds the filter document of one message.
func BenchmarkDocument(b *testing.B) {
	m := rabbitMsg()
	for b.Loop() {
		_ = DocumentAt(m, t0)
	}
}

// BenchmarkShape is the shape of one failure reason with ids, a UUID and a
// URL.
func BenchmarkShape(b *testing.B) {
	var s shaper
	r := `Inventory service returned 503 for SKU-4821 calling https://inventory.internal/v2/items/4821?warehouse=7 (request 1b4e28ba-2fa1-11d2-883f-0016d3cca427)`
	for b.Loop() {
		s.shape(r)
	}
	if len(s.vals) != 5 {
		b.Fatalf("values %q", s.vals)
	}
}

// BenchmarkStatsShapes counts 10,000 reasons from five templates with
// variable parts by shape, then mines and reports the groups.
func BenchmarkStatsShapes(b *testing.B) {
	var msgs []*broker.Message
	for i := range 10000 {
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint(i), Headers: map[string]any{"x-exception-message": fmt.Sprintf(
			[]string{"Customer cus_%d not found", "Read timed out after %dms", "duplicate key (id)=(%d)", "503 for SKU-%d", "bad date \"%d/13/2024\""}[i%5], i)}})
	}
	ctx := context.Background()
	for b.Loop() {
		s := NewStats("q", StatsOptions{NoDuplicates: true, Now: t0})
		for _, m := range msgs {
			if err := s.Add(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		if n := len(s.Result().Groups); n != 5 {
			b.Fatalf("%d groups", n)
		}
	}
	b.ReportMetric(float64(len(msgs)*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
