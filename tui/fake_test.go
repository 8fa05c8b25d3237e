package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

var testNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// fakeBackend serves fixed queues and messages and records every mutating
// call. Expect* marks calls a test requires; verify fails when one never
// happened.
type fakeBackend struct {
	mu       sync.Mutex
	queues   []broker.Queue
	messages map[string][]*broker.Message
	queueErr error

	redrives []ActionRequest
	discards []ActionRequest
	exports  []ActionRequest
	replaces []ReplaceRequest
	// block makes Redrive wait for ctx to be cancelled, reporting progress.
	block bool

	expect map[string]bool
}

func (f *fakeBackend) expectCall(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.expect == nil {
		f.expect = map[string]bool{}
	}
	f.expect[name] = false
}

func (f *fakeBackend) called(name string) {
	if _, ok := f.expect[name]; ok {
		f.expect[name] = true
	}
}

func (f *fakeBackend) verify(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, done := range f.expect {
		if !done {
			t.Errorf("expected a call to %s, none happened", name)
		}
	}
}

func (f *fakeBackend) backend(readOnly bool) Backend {
	b := Backend{
		Name: "amqp://dlq@rabbit.test/",
		Queues: func(ctx context.Context) ([]broker.Queue, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return append([]broker.Queue(nil), f.queues...), f.queueErr
		},
		Peek: func(ctx context.Context, queue string, visit func(*broker.Message) error) (broker.PeekReport, error) {
			f.mu.Lock()
			msgs := f.messages[queue]
			f.mu.Unlock()
			var rep broker.PeekReport
			for _, m := range msgs {
				if err := visit(m.Clone()); err != nil {
					return rep, err
				}
				rep.Read++
			}
			return rep, nil
		},
		Compile: fakeCompile,
		Reason: func(m *broker.Message) string {
			var b struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(m.Body, &b) == nil && b.Error != "" {
				return b.Error
			}
			return deathReason(m)
		},
		Shape: inspect.ShapeOf,
		Group: fakeGroup,
		Export: func(ctx context.Context, req ActionRequest, p func(Progress)) (Result, error) {
			f.mu.Lock()
			f.exports = append(f.exports, req)
			f.called("export")
			f.mu.Unlock()
			return Result{Done: int64(len(req.IDs)), Summary: fmt.Sprintf("exported %d to %s", len(req.IDs), req.Archive)}, nil
		},
		ReadOnly: readOnly,
	}
	if readOnly {
		return b
	}
	b.Redrive = func(ctx context.Context, req ActionRequest, p func(Progress)) (Result, error) {
		f.mu.Lock()
		f.redrives = append(f.redrives, req)
		f.called("redrive")
		block := f.block
		f.mu.Unlock()
		if block {
			for i := int64(0); ; i++ {
				p(Progress{Done: i, Total: 1000})
				select {
				case <-ctx.Done():
					return Result{Done: i}, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		n := int64(len(req.IDs))
		p(Progress{Done: n, Total: n})
		return Result{Done: n, Summary: fmt.Sprintf("moved %d messages to %s", n, req.Dest)}, nil
	}
	b.Discard = func(ctx context.Context, req ActionRequest, p func(Progress)) (Result, error) {
		f.mu.Lock()
		f.discards = append(f.discards, req)
		f.called("discard")
		f.mu.Unlock()
		return Result{Done: int64(len(req.IDs)), Summary: fmt.Sprintf("discarded %d (archived to %s)", len(req.IDs), req.Archive)}, nil
	}
	b.Replace = func(ctx context.Context, req ReplaceRequest) (Result, error) {
		f.mu.Lock()
		f.replaces = append(f.replaces, req)
		f.called("replace")
		f.mu.Unlock()
		return Result{Done: 1}, nil
	}
	return b
}

// fakeCompile understands the few filters the tests use: `.body.FIELD OP N`
// and `.body.FIELD == "S"`.
func fakeCompile(expr string) (Matcher, error) {
	var field, op, val string
	if _, err := fmt.Sscanf(expr, ".body.%s %s %s", &field, &op, &val); err != nil {
		return nil, fmt.Errorf("syntax error at position 1: %q", expr)
	}
	return func(m *broker.Message) (bool, error) {
		var body map[string]any
		if err := json.Unmarshal(m.Body, &body); err != nil {
			return false, nil
		}
		got, _ := json.Marshal(body[field])
		switch op {
		case "==":
			return string(got) == val, nil
		case ">":
			var a, b float64
			fmt.Sscan(string(got), &a)
			fmt.Sscan(val, &b)
			return a > b, nil
		}
		return false, fmt.Errorf("unsupported op %s", op)
	}, nil
}

func i64(n int64) *int64 { return &n }

func sampleMessages(queue string, n int) []*broker.Message {
	reasons := []string{"payment declined", "schema mismatch: missing field amount", "timeout calling inventory"}
	out := make([]*broker.Message, n)
	for i := range n {
		t := testNow.Add(-time.Duration(i+1) * 37 * time.Minute)
		body := fmt.Sprintf(`{"order_id":%d,"amount":%d,"currency":"EUR","status":"failed","error":%q}`, 1000+i, (i*73)%250, reasons[i%3])
		out[i] = &broker.Message{
			ID:     fmt.Sprintf("msg-%05d", i),
			System: broker.RabbitMQ,
			Queue:  queue,
			Body:   []byte(body),
			Headers: map[string]any{
				"tenant":                 "acme",
				"x-death":                []any{map[string]any{"reason": "rejected", "queue": "orders", "count": int64(1)}},
				"x-first-death-reason":   "rejected",
				"x-first-death-queue":    "orders",
				"x-first-death-exchange": "orders",
			},
			Properties: broker.Properties{ContentType: "application/json", MessageID: fmt.Sprintf("msg-%05d", i), DeliveryMode: 2},
			Exchange:   "dlx",
			RoutingKey: "order.created",
			Death: &broker.Death{
				Reason: "rejected", Queue: "orders", Exchange: "orders", RoutingKeys: []string{"order.created"},
				Count: int64(1 + i%3), First: t, Last: t.Add(time.Minute), FirstReason: "rejected", FirstQueue: "orders",
				History: []broker.DeathEntry{
					{Reason: "rejected", Queue: "orders", Exchange: "orders", RoutingKeys: []string{"order.created"}, Count: int64(1 + i%3), Time: t},
				},
			},
			Timestamp: t.Add(-time.Minute),
		}
		if i%3 == 1 {
			// a retry ladder: died in orders.retry first
			out[i].Death.History = append([]broker.DeathEntry{{Reason: "expired", Queue: "orders.retry", Exchange: "retry", RoutingKeys: []string{"order.created"}, Count: 1, Time: t.Add(30 * time.Second)}}, out[i].Death.History...)
		}
	}
	return out
}

func newFake() *fakeBackend {
	queues := []broker.Queue{
		{System: broker.RabbitMQ, Name: "orders", Kind: broker.KindQuorum, Depth: 12, InFlight: i64(3), Consumers: i64(4), DeadLetterQueues: []string{"orders.dlq"},
			DeadLetterSources: []string{"orders.retry"}},
		{System: broker.RabbitMQ, Name: "orders.dlq", Kind: broker.KindClassic, Depth: 6, InFlight: i64(0), Consumers: i64(0), DeadLetterSources: []string{"orders"}},
		{System: broker.RabbitMQ, Name: "payments.dlq", Kind: broker.KindClassic, Depth: 0, InFlight: i64(0), Consumers: i64(0)},
		{System: broker.RabbitMQ, Name: "payments", Kind: broker.KindClassic, Depth: 1500, InFlight: i64(20), Consumers: i64(8)},
		// A retry step the application publishes to: its messages expire
		// back into orders.
		{System: broker.RabbitMQ, Name: "orders.retry", Kind: broker.KindClassic, Depth: 2, InFlight: i64(0), Consumers: i64(0), MessageTTL: 30 * time.Second,
			DeadLetterQueues: []string{"orders"}},
	}
	broker.AssignRoles(queues, nil)
	return &fakeBackend{
		queues:   queues,
		messages: map[string][]*broker.Message{"orders.dlq": sampleMessages("orders.dlq", 6)},
	}
}

// probe wraps the model so that tests can wait on the frame as the user
// sees it (styles stripped), rather than on the renderer's byte stream.
type probe struct {
	Model
	frame *atomic.Pointer[string]
}

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	p.Model = m.(Model)
	return p, cmd
}

func (p probe) View() tea.View {
	v := p.Model.View()
	s := stripStyles(v.Content)
	p.frame.Store(&s)
	return v
}

// frameReader hands each new frame to teatest.WaitFor, whole.
type frameReader struct {
	frame   *atomic.Pointer[string]
	sent    *string
	pending []byte
}

func (r *frameReader) Read(b []byte) (int, error) {
	if len(r.pending) == 0 {
		cur := r.frame.Load()
		if cur == nil || cur == r.sent {
			return 0, io.EOF
		}
		r.sent = cur
		// WaitFor accumulates; a marker tells where the latest frame starts.
		r.pending = []byte("\x00FRAME\x00" + *cur)
	}
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

const termW, termH = 100, 30

type harness struct {
	t     *testing.T
	tm    *teatest.TestModel
	frame *atomic.Pointer[string]
}

func start(t *testing.T, b Backend, opts Options) *harness {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.Refresh == 0 {
		opts.Refresh = -1
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	frame := &atomic.Pointer[string]{}
	m := probe{Model: New(ctx, b, opts, nil), frame: frame}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(termW, termH))
	return &harness{t: t, tm: tm, frame: frame}
}

// waitFor waits until the latest frame contains every string.
func (h *harness) waitFor(want ...string) {
	h.t.Helper()
	h.waitFrame(func(frame string) bool {
		for _, w := range want {
			if !strings.Contains(frame, w) {
				return false
			}
		}
		return true
	})
}

// waitFrame waits until ok holds for the latest frame.
func (h *harness) waitFrame(ok func(frame string) bool) {
	h.t.Helper()
	teatest.WaitFor(h.t, &frameReader{frame: h.frame}, func(b []byte) bool {
		i := bytes.LastIndex(b, []byte("\x00FRAME\x00"))
		return i >= 0 && ok(string(b[i:]))
	}, teatest.WithDuration(patience), teatest.WithCheckInterval(5*time.Millisecond))
}

func (h *harness) key(keys ...string) {
	for _, k := range keys {
		h.tm.Send(keyMsg(k))
	}
}

func (h *harness) typeText(s string) { h.tm.Type(s) }

// final quits and returns the model as it ended.
func (h *harness) final() Model {
	h.t.Helper()
	if err := h.tm.Quit(); err != nil {
		h.t.Fatal(err)
	}
	fm := h.tm.FinalModel(h.t, teatestFinalTimeout())
	return fm.(probe).Model
}

// patience is how long a test waits for the UI to show what it expects. A
// wrong UI never shows it; a machine busy with other work can take long.
const patience = 2 * time.Minute

func teatestFinalTimeout() teatest.FinalOpt { return teatest.WithFinalTimeout(patience) }

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	}
	if strings.HasPrefix(k, "ctrl+") {
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// fakeGroup groups with inspect, as the cmd layer does, at the tests' clock.
func fakeGroup(ctx context.Context, spec string, msgs []*broker.Message) (Grouping, error) {
	res, of, err := inspect.GroupMessages(ctx, spec, msgs, testNow)
	if err != nil {
		return Grouping{}, err
	}
	out := Grouping{Total: int(res.Total), TrendStep: human.Seconds(res.TrendStepSeconds)}
	for _, g := range res.Groups {
		r := GroupRow{Key: strings.Join(g.Values, " · "), ID: g.ID, Count: int(g.Count), LastHour: g.LastHour, Trend: inspect.Sparkline(g.Trend), Hot: inspect.HotText(g.Hot, 3)}
		if g.Oldest != nil {
			r.Oldest, r.Newest = *g.Oldest, *g.Newest
		}
		out.Groups = append(out.Groups, r)
	}
	out.Of = of
	return out, nil
}
