package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// outcome is what a reader made of an input: each message encoded again
// (so that NaN headers compare), its line, and the error that ended it.
type outcome struct {
	lines []string
	err   string
}

func (o outcome) String() string {
	return fmt.Sprintf("%d messages, err %q", len(o.lines), o.err)
}

func encoded(t testing.TB, m *broker.Message, line int) string {
	b, err := Marshal(m, "", time.Time{})
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	return fmt.Sprintf("%d %s", line, b)
}

// sequential reads data with Reader.Next, the reference.
func sequential(t testing.TB, data []byte) outcome {
	r, err := NewReader(bytes.NewReader(data), "t.jsonl")
	if err != nil {
		return outcome{err: err.Error()}
	}
	defer r.Close()
	var o outcome
	for {
		m, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				o.err = err.Error()
			}
			return o
		}
		o.lines = append(o.lines, encoded(t, m, r.Line()))
	}
}

// parallel reads data with the parallel reader.
func parallel(t testing.TB, data []byte) outcome {
	return parallelSize(t, data, false, batchSize)
}

// parallelSize reads data with the parallel reader in batches of size,
// lending messages or not. Each message is encoded before the next is
// asked for, as long as a lent message is valid.
func parallelSize(t testing.TB, data []byte, lending bool, size int) outcome {
	r, err := NewReader(bytes.NewReader(data), "t.jsonl")
	if err != nil {
		return outcome{err: err.Error()}
	}
	defer r.Close()
	p := readParallelSize(r, nil, lending, size)
	defer p.Close()
	var o outcome
	for {
		m, line, err := p.Next(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				o.err = err.Error()
			}
			return o
		}
		o.lines = append(o.lines, encoded(t, m, line))
	}
}

// checkSame fails unless the parallel reader, with the usual batches and
// with tiny ones that cut nearly every line, reads data as Reader does.
func checkSame(t *testing.T, data []byte) {
	t.Helper()
	want := sequential(t, data)
	for _, lending := range []bool{false, true} {
		for _, size := range []int{batchSize, 64, 1} {
			got := parallelSize(t, data, lending, size)
			if want.err != got.err || len(want.lines) != len(got.lines) {
				t.Fatalf("parallel reader (lending %v, batches of %d): %v; sequential: %v", lending, size, got, want)
			}
			for i := range want.lines {
				if want.lines[i] != got.lines[i] {
					t.Fatalf("message %d differs (lending %v, batches of %d):\nparallel   %.300s\nsequential %.300s", i, lending, size, got.lines[i], want.lines[i])
				}
			}
		}
	}
}

// bigArchive is n records as dlq writes them, of varied sizes (so that
// batches end anywhere in a line) and shapes (with and without headers,
// death history, attributes; text, base64, empty and missing bodies, so
// that a reused message must forget the one before), with blank, CRLF and
// header lines sprinkled in.
func bigArchive(n int) string {
	var b strings.Builder
	b.WriteString(hdr + "\n")
	first := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	for i := range n {
		pad := strings.Repeat("x", (i*7919)%3000)
		m := &broker.Message{
			ID: fmt.Sprintf("m-%d", i), System: broker.RabbitMQ, Queue: fmt.Sprintf("q%d", i%3),
			Body: []byte(fmt.Sprintf(`{"n":%d,"reason":"r%d","pad":"%s"}`, i, i%5, pad)),
		}
		if i%3 != 0 {
			m.Headers = map[string]any{"n": int64(i), "x-exception-message": fmt.Sprintf("e%d", i%4)}
		}
		if i%4 == 1 {
			// x-death as RabbitMQ sends it: an array of tables, of varying
			// length, so that reused tables and arrays must be emptied.
			var deaths []any
			for j := range i%3 + 1 {
				d := map[string]any{"count": int64(j + 1), "reason": "rejected", "queue": fmt.Sprintf("q%d", j),
					"routing-keys": []any{"a", fmt.Sprintf("k%d", i%(j+2))}, "time": first.Add(time.Duration(i) * time.Second)}
				if (i/4+j)%2 == 0 {
					d["exchange"] = "x"
				}
				deaths = append(deaths, d)
			}
			if m.Headers == nil {
				m.Headers = map[string]any{}
			}
			m.Headers["x-death"] = deaths
			m.Headers["x-first-death-queue"] = "q0"
		}
		if i%5 != 0 {
			m.Death = &broker.Death{Reason: "rejected", Queue: "src", Count: 1, First: first, RoutingKeys: []string{fmt.Sprintf("k%d", i%2)}}
			if i%7 == 0 {
				m.Death.History = []broker.DeathEntry{{Reason: "expired", Queue: "a", Count: 2, RoutingKeys: []string{"x", "y"}}, {Reason: "rejected", Queue: "b", Count: 1}}
			}
		}
		switch i % 11 {
		case 1:
			m.Body = []byte{0, 1, 2, byte(i)}
		case 2:
			m.Body = []byte{}
		case 3:
			m.Body = nil
		case 4:
			m.System = broker.SQS
			m.Attributes = map[string]broker.Attribute{"err": {DataType: "String", StringValue: "bad"}, "b": {DataType: "Binary", BinaryValue: []byte{9}}}
			m.SystemAttributes = map[string]string{"ApproximateReceiveCount": "3"}
		case 5:
			m.Properties = broker.Properties{MessageID: m.ID, ContentType: "application/json", Timestamp: first}
		}
		line, err := Marshal(m, "", time.Time{})
		if err != nil {
			panic(err)
		}
		b.Write(line)
		switch {
		case i%97 == 0:
			b.WriteString("\r\n\n")
		case i%1001 == 0:
			b.WriteString("\n" + hdr + "\n")
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestParallelReaderKeepsOrder(t *testing.T) {
	// More decoders than CPUs, so that batches finish out of order.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	data := bigArchive(5000) // some 8 MiB: 30-odd batches
	got := parallel(t, []byte(data))
	if got.err != "" || len(got.lines) != 5000 {
		t.Fatalf("parallel reader: %v, want 5000 messages and no error", got)
	}
	for i, l := range got.lines {
		if !strings.Contains(l, fmt.Sprintf(`"id":"m-%d"`, i)) {
			t.Fatalf("message %d out of order: %.80s", i, l)
		}
	}
	checkSame(t, []byte(data))

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(data))
	zw.Close()
	checkSame(t, gz.Bytes())
}

func TestParallelReaderErrors(t *testing.T) {
	big := bigArchive(3000)
	lines := strings.SplitAfter(big, "\n")
	at := func(n int, bad string) string { // replace line n (1-based)
		l := append([]string(nil), lines...)
		l[n-1] = bad + "\n"
		return strings.Join(l, "")
	}
	tests := map[string]string{
		"no header":             `{"id":"a"}` + "\n",
		"not json":              "hello\n",
		"blank then no header":  strings.Repeat(" \n", batchSize/2+7) + `{"id":"a"}` + "\n",
		"future version":        `{"dlq_archive":2}` + "\n",
		"future version later":  hdr + "\n" + `{"id":"a"}` + "\n" + `{"dlq_archive":9}` + "\n",
		"malformed middle":      hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":` + "\n" + `{"id":"c"}` + "\n",
		"wrong type":            hdr + "\n" + `{"id":"a","delivery_count":"x"}` + "\n",
		"bad header value":      hdr + "\n\n" + `{"id":"a","headers":{"h":{"type":"nope","value":1}}}` + "\n",
		"torn last line":        hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":"b","bo`,
		"torn then newline":     hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":"b","bo` + "\n",
		"torn then blank":       hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":"b","bo` + "\n\n",
		"array line":            hdr + "\n[1]\n",
		"bad base64":            hdr + "\n" + `{"id":"a","body":"!!","body_encoding":"base64"}` + "\n",
		"empty":                 "",
		"blank only":            "\n \n\t\n",
		"no final newline":      hdr + "\n" + `{"id":"a"}`,
		"deep malformed":        at(2500, `{"id":`),
		"deep not an object":    at(1777, `"x"`),
		"deep future version":   at(2999, `{"dlq_archive":7}`),
		"deep torn last line":   big + `{"id":"z","bo`,
		"first line in batch 2": at(1, strings.Repeat(" ", batchSize+10)+hdr),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) { checkSame(t, []byte(data)) })
	}
	t.Run("truncated gzip", func(t *testing.T) {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write([]byte(big))
		zw.Close()
		checkSame(t, gz.Bytes()[:gz.Len()*2/3])
	})
}

func TestParallelReaderLongLines(t *testing.T) {
	long := strings.Repeat("y", 3*batchSize+123) // several grown buffers
	data := hdr + "\n" + `{"id":"a","body":"` + long + `"}` + "\n" + `{"id":"b"}` + "\n" + `{"id":"c","body":"` + long[:batchSize] + `"}`
	checkSame(t, []byte(data))
	got := parallel(t, []byte(data))
	if got.err != "" || len(got.lines) != 3 || !strings.Contains(got.lines[0], long) {
		t.Fatalf("long lines: %v", got)
	}
}

func TestParallelReaderTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	r, err := NewReader(io.MultiReader(strings.NewReader(hdr+"\n"+`{"id":"a"}`+"\n\n"), endless('z')), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := readParallel(r, nil, false)
	defer p.Close()
	var ids []string
	for {
		m, _, err := p.Next(context.Background())
		if err != nil {
			want := fmt.Sprintf("archive t.jsonl line 4: longer than %d MiB", MaxLine>>20)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want %q", err, want)
			}
			break
		}
		ids = append(ids, m.ID)
	}
	if len(ids) != 1 {
		t.Errorf("read %v before the error, want [a]", ids)
	}
}

type endless byte

func (e endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(e)
	}
	return len(b), nil
}

// waitGoroutines fails unless the number of goroutines falls back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left running, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

func TestPeekEarlyStopEndsReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(bigArchive(3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	base := runtime.NumGoroutine()

	rep, err := a.Peek(context.Background(), "", broker.PeekOptions{Limit: 5}, func(*broker.Message) error { return nil })
	if err != nil || rep.Read != 5 {
		t.Fatalf("limit: read %d, err %v; want 5, nil", rep.Read, err)
	}
	waitGoroutines(t, base)

	n := 0
	_, err = a.Peek(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error {
		if n++; n == 700 {
			return broker.ErrStop
		}
		return nil
	})
	if err != nil || n != 700 {
		t.Fatalf("stop: visited %d, err %v; want 700, nil", n, err)
	}
	waitGoroutines(t, base)

	boom := errors.New("boom")
	_, err = a.Peek(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("visit error: %v", err)
	}
	waitGoroutines(t, base)

	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	_, err = a.Peek(ctx, "", broker.PeekOptions{}, func(*broker.Message) error {
		if n++; n == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 10 {
		t.Fatalf("cancel: visited %d, err %v; want 10, context.Canceled", n, err)
	}
	waitGoroutines(t, base)
}

func TestPeekPositionsAndQueues(t *testing.T) {
	data := bigArchive(2000)
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The reference: line numbers from the sequential reader.
	want := map[string]string{}
	r, _ := NewReader(strings.NewReader(data), "x")
	for {
		m, err := r.Next()
		if err != nil {
			break
		}
		if m.Queue == "q1" {
			want[m.ID] = fmt.Sprintf("line %d", r.Line())
		}
	}
	var got []string
	_, err = a.Peek(context.Background(), "q1", broker.PeekOptions{}, func(m *broker.Message) error {
		if m.Position != want[m.ID] {
			t.Fatalf("%s at %q, want %q", m.ID, m.Position, want[m.ID])
		}
		got = append(got, m.ID)
		return nil
	})
	if err != nil || len(got) != len(want) {
		t.Fatalf("q1: %d messages (err %v), want %d", len(got), err, len(want))
	}
	for i := 1; i < len(got); i++ {
		var a, b int
		fmt.Sscanf(got[i-1], "m-%d", &a)
		fmt.Sscanf(got[i], "m-%d", &b)
		if a >= b {
			t.Fatalf("out of order: %s before %s", got[i-1], got[i])
		}
	}
}

// FuzzParallelReader checks that the parallel reader gives exactly what
// Reader.Next gives — messages, line numbers and the error — on any input.
func FuzzParallelReader(f *testing.F) {
	f.Add([]byte(hdr + "\n" + `{"id":"a","body":"x"}` + "\n\n" + `{"id":"b"`))
	f.Add([]byte(hdr + "\r\n" + `{"id":"a"}` + "\n" + hdr + "\n" + `[`))
	f.Add([]byte(" \n" + `{"dlq_archive":3}`))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte(hdr + "\n" + `{"id":"a","properties":{"message_id":"a"},"headers":{"s":{"type":"string","value":"v"},"t":{"type":"table","value":{"u":{"type":"string","value":"v"}}}}}` + "\n" +
		`{"id":"b","properties":{"message_id":"ab"},"headers":{"s":{"type":"string","value": "w\u00e9"}},"body":""}` + "\n" + `{"id":"c","body":"AAE=","body_encoding":"base64"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := sequential(t, data)
		for _, lending := range []bool{false, true} {
			for _, size := range []int{batchSize, 16, 1} {
				got := parallelSize(t, data, lending, size)
				if want.err != got.err || strings.Join(want.lines, "\n") != strings.Join(got.lines, "\n") {
					t.Fatalf("parallel reader (lending %v, batches of %d): %v; sequential: %v", lending, size, got, want)
				}
			}
		}
	})
}

func TestPeekReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(bigArchive(3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	base := runtime.NumGoroutine()

	// The same messages as Peek, in the same order.
	var want, got []string
	if _, err := a.Peek(context.Background(), "q2", broker.PeekOptions{}, func(m *broker.Message) error {
		want = append(want, encoded(t, m, 0)+m.Position)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PeekReused(context.Background(), "q2", broker.PeekOptions{}, func(m *broker.Message) error {
		got = append(got, encoded(t, m, 0)+m.Position)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 1000 {
		t.Fatalf("PeekReused read %d messages, Peek %d, or they differ", len(got), len(want))
	}

	// It allocates far less, since messages are reused.
	count := func(peek func(context.Context, string, broker.PeekOptions, func(*broker.Message) error) (broker.PeekReport, error)) float64 {
		return testing.AllocsPerRun(2, func() {
			if _, err := peek(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}) / 3000
	}
	fresh, lent := count(a.Peek), count(a.PeekReused)
	if lent > fresh/2 {
		t.Errorf("PeekReused makes %.1f allocations a message, Peek %.1f: want at most half", lent, fresh)
	}
	t.Logf("allocations a message: Peek %.1f, PeekReused %.1f", fresh, lent)

	// Stopping early ends every goroutine.
	n := 0
	if _, err := a.PeekReused(context.Background(), "", broker.PeekOptions{}, func(*broker.Message) error {
		if n++; n == 100 {
			return broker.ErrStop
		}
		return nil
	}); err != nil || n != 100 {
		t.Fatalf("stop: visited %d, err %v", n, err)
	}
	waitGoroutines(t, base)
}
