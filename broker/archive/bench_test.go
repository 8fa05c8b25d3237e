package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// benchArchive writes n realistic RabbitMQ dead letters (1 KiB JSON bodies,
// x-death headers) once per benchmark.
func benchArchive(b *testing.B, name string, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), name)
	w, err := NewWriter(path, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 900)
	reasons := []string{"rejected", "expired", "maxlen", "delivery_limit"}
	for i := range n {
		r := reasons[i%len(reasons)]
		m := &broker.Message{
			ID: fmt.Sprintf("m-%d", i), System: broker.RabbitMQ, Queue: "orders.dlq",
			Body: []byte(fmt.Sprintf(`{"order_id":%d,"reason":%q,"pad":%q}`, i, r, pad)),
			Headers: map[string]any{
				"x-death": []any{map[string]any{"count": int64(1), "reason": r, "queue": "orders.q",
					"exchange": "orders.x", "routing-keys": []any{"order.created"}, "time": t0}},
				"x-first-death-reason": r, "x-first-death-queue": "orders.q",
			},
			Properties: broker.Properties{ContentType: "application/json", DeliveryMode: 2, MessageID: fmt.Sprintf("m-%d", i), Timestamp: t0},
			Death:      &broker.Death{Reason: r, Queue: "orders.q", Exchange: "orders.x", Count: 1, First: t0, Last: t0},
			Timestamp:  t0,
		}
		if err := w.Write(m); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReader decodes every message of a 100,000-message archive.
func BenchmarkReader(b *testing.B) {
	const n = 100_000
	for _, name := range []string{"a.jsonl", "a.jsonl.gz"} {
		b.Run(name, func(b *testing.B) {
			path := benchArchive(b, name, n)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				r, err := OpenReader(path)
				if err != nil {
					b.Fatal(err)
				}
				count := 0
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					count++
				}
				r.Close()
				if count != n {
					b.Fatalf("read %d, want %d", count, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkQueues lists the queues of a 100,000-message archive (one pass).
func BenchmarkQueues(b *testing.B) {
	path := benchArchive(b, "a.jsonl", 100_000)
	a, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := a.Queues(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkWriter appends messages and flushes every 100, as an export does.
func BenchmarkWriter(b *testing.B) {
	w, err := NewWriter(filepath.Join(b.TempDir(), "w.jsonl"), WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	m := fullMessage()
	b.ReportAllocs()
	for i := range b.N {
		if err := w.Write(m); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPeek visits every message of a 100,000-message archive, given
// away (Peek) and lent (PeekReused, as `dlq stats` reads).
func BenchmarkPeek(b *testing.B) {
	const n = 100_000
	path := benchArchive(b, "a.jsonl", n)
	a, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		peek func(context.Context, string, broker.PeekOptions, func(*broker.Message) error) (broker.PeekReport, error)
	}{{"given", a.Peek}, {"lent", a.PeekReused}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := bc.peek(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error { return nil })
				if err != nil || rep.Read != n {
					b.Fatalf("read %d, err %v", rep.Read, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
