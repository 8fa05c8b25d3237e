package tui

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/inspect"
)

// timedWriter is the terminal: it keeps what the program wrote and when.
type timedWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes []time.Time
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, time.Now())
	return w.buf.Write(p)
}

// waitWriteAfter waits for the first write after t0.
func (w *timedWriter) waitWriteAfter(b *testing.B, n int, d time.Duration) time.Time {
	deadline := time.Now().Add(d)
	for {
		w.mu.Lock()
		var at time.Time
		if len(w.writes) > n {
			at = w.writes[n]
		}
		w.mu.Unlock()
		if !at.IsZero() {
			return at
		}
		if time.Now().After(deadline) {
			b.Fatal("no frame after a key")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func (w *timedWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// viewProbe notes when a View first holds each marker: the renderer writes
// only the cells that changed, so the text itself may never appear whole in
// the output.
type viewProbe struct {
	Model
	markers []string
	seen    []*atomic.Int64 // unix nanos of the first View holding marker i
}

func (p viewProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	p.Model = m.(Model)
	return p, cmd
}

func (p viewProbe) View() tea.View {
	v := p.Model.View()
	for i, mk := range p.markers {
		if p.seen[i].Load() == 0 && strings.Contains(v.Content, mk) {
			p.seen[i].Store(time.Now().UnixNano())
		}
	}
	return v
}

// frameAt waits until the probe saw its marker, then returns the time of
// the first write after that View: when the frame reached the terminal.
func frameAt(b *testing.B, seen *atomic.Int64, out *timedWriter, d time.Duration) time.Time {
	deadline := time.Now().Add(d)
	for {
		if ns := seen.Load(); ns != 0 {
			at := time.Unix(0, ns)
			out.mu.Lock()
			for _, w := range out.writes {
				if !w.Before(at) {
					out.mu.Unlock()
					return w
				}
			}
			out.mu.Unlock()
		}
		if time.Now().After(deadline) {
			b.Fatal("the frame never came")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// writeArchive writes n realistic dead letters to an archive file.
func writeArchive(b *testing.B, path string, n int) {
	w, err := archive.NewWriter(path, archive.WriterOptions{Source: archive.Source{System: broker.RabbitMQ, Queue: "orders.dlq"}})
	if err != nil {
		b.Fatal(err)
	}
	for i, m := range sampleMessages("orders.dlq", n) {
		m.Position = ""
		if err := w.Write(m); err != nil {
			b.Fatal(err)
		}
		if i%10_000 == 0 {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTUIArchive100k measures, on the real program and renderer, the
// time to the first frame that shows messages of a 100,000-message archive,
// and the key-to-frame latency while scrolling it (down and page down).
// Targets: first frame < 300 ms; median key-to-frame < 16 ms.
func BenchmarkTUIArchive100k(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "dlq-100k.jsonl")
	writeArchive(b, path, n)

	var first, all []time.Duration
	var lat []time.Duration
	for b.Loop() {
		ab, err := archive.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		backend := Backend{
			Name:    "file://" + path,
			Queues:  ab.Queues,
			Reason:  inspect.Reason,
			Compile: nil,
			Peek: func(ctx context.Context, queue string, visit func(*broker.Message) error) (broker.PeekReport, error) {
				return ab.Peek(ctx, queue, broker.PeekOptions{}, func(m *broker.Message) error { return visit(m.Clone()) })
			},
		}
		out := &timedWriter{}
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		seen := []*atomic.Int64{{}, {}}
		m := viewProbe{Model: New(ctx, backend, Options{Queue: "orders.dlq", Refresh: -1, Limit: n}, nil), markers: []string{"row 1/", "100000 read"}, seen: seen}
		p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(out), tea.WithoutSignals(),
			tea.WithWindowSize(120, 40), tea.WithColorProfile(colorprofile.ANSI256), tea.WithFPS(120))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := p.Run(); err != nil {
				b.Error(err)
			}
		}()
		first = append(first, frameAt(b, seen[0], out, 10*time.Second).Sub(start))
		all = append(all, frameAt(b, seen[1], out, 60*time.Second).Sub(start))
		for i := range 300 {
			k := tea.KeyPressMsg{Code: tea.KeyDown}
			if i%10 == 9 {
				k = tea.KeyPressMsg{Code: tea.KeyPgDown}
			}
			before := out.count()
			t0 := time.Now()
			p.Send(k)
			lat = append(lat, out.waitWriteAfter(b, before, 5*time.Second).Sub(t0))
		}
		p.Quit()
		<-done
		cancel()
		ab.Close()
	}
	slices.Sort(lat)
	med := lat[len(lat)/2]
	p95 := lat[len(lat)*95/100]
	b.ReportMetric(ms(median(first)), "ms-first-frame")
	b.ReportMetric(ms(median(all)), "ms-all-100k-read")
	b.ReportMetric(ms(med), "ms-key-to-frame-p50")
	b.ReportMetric(ms(p95), "ms-key-to-frame-p95")
	b.Logf("100,000-message archive: first frame %v, all read %v, key-to-frame median %v p95 %v max %v (targets: < 300ms, < 16ms)",
		median(first).Round(time.Millisecond), median(all).Round(time.Millisecond), med.Round(10*time.Microsecond), p95.Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkMessagesView is the cost of drawing one frame of the message list
// with 100,000 rows loaded (only the visible rows are drawn).
func BenchmarkMessagesView(b *testing.B) {
	f := newFake()
	rows := make([]*row, 0, 100_000)
	for i, m := range sampleMessages("big", 100_000) {
		rows = append(rows, newRow(m, i, deathReason, nil))
	}
	m := New(context.Background(), f.backend(false), Options{Refresh: -1, Now: func() time.Time { return testNow }}, nil)
	m.c.width, m.c.height = 120, 40
	m.screen = screenMessages
	m.msgs.queue = "big"
	m.msgs.rows = rows
	for b.Loop() {
		var mm tea.Model = m
		mm, _ = mm.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
		m = mm.(Model)
		_ = m.View()
	}
}
