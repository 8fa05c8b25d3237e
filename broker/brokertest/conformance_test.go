package brokertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// memory is a small in-memory adapter that keeps every rule of the suite,
// unless told to break one (flaw).
type memory struct {
	flaw string

	mu     sync.Mutex
	queues map[string][]*entry
	tag    uint64
	n      int
	moves  map[string]broker.MoveTask // by source queue
	// wire, when set, records what a server's wire would show: a publish
	// the queue stored confirms its body, an ack removes one (the fault
	// checks read it).
	wire *brokertest.WireLedger
}

type entry struct {
	body  string
	tag   uint64
	taken bool
	from  string // the queue it was dead-lettered from
}

// The rules a flawed memory adapter breaks, and the subtest that must
// catch each.
var flaws = []struct{ flaw, caught string }{
	{"ack-two", "classic/consume"},             // Ack removes the next message too
	{"plain-not-found", "classic/inspect"},     // a missing queue is a plain error
	{"peek-reorders", "classic/peek"},          // Peek visits newest first
	{"peek-takes", "classic/peek"},             // Peek removes the last message
	{"publish-short", "classic/publish"},       // Publish drops the last result
	{"unroutable-plain", "unroutable"},         // a return is not ErrUnroutable
	{"purge-miscounts", "classic/purge"},       // Purge reports one less
	{"release-drops", "classic/consume"},       // Release removes the message
	{"limit-ignored", "classic/consume-limit"}, // Limit is not kept
	{"refuses-consume", "classic/consume"},     // an undeclared ErrUnsupported
	{"limit-rotates", "classic/peek-limit"},    // a limited peek leaves what it read at the back
	{"origin-wrong", "origin"},                 // Origin names another queue
	{"origin-guesses", "no-origin"},            // Origin of a message never dead-lettered
	{"move-loses", "server-side-move"},         // a move drops a message
	{"move-silent", "server-side-move"},        // a move reports no progress
}

func newMemory(flaw string) *memory {
	return &memory{flaw: flaw, queues: map[string][]*entry{}, moves: map[string]broker.MoveTask{}}
}

func (m *memory) System() broker.System { return "memory" }
func (m *memory) String() string        { return "memory:" }
func (m *memory) Close() error          { return nil }

func (m *memory) Traits(broker.Queue) broker.Traits {
	return broker.Traits{PeekAll: broker.PeekHold}
}

func (m *memory) notFound(op, q string) error {
	if m.flaw == "plain-not-found" {
		return fmt.Errorf("no queue %s", q)
	}
	return &broker.Error{Kind: broker.ErrNotFound, Op: op, Msg: "queue `" + q + "` does not exist"}
}

func (m *memory) make(msgs []brokertest.Fill) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	q := fmt.Sprintf("q%d", m.n)
	m.queues[q] = []*entry{}
	for _, f := range msgs {
		m.tag++
		m.queues[q] = append(m.queues[q], &entry{body: f.Body, tag: m.tag})
	}
	return q
}

func (m *memory) Queue(_ context.Context, q string) (broker.Queue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.queues[q]
	if !ok {
		return broker.Queue{}, m.notFound("inspect", q)
	}
	return broker.Queue{System: "memory", Name: q, Kind: broker.KindClassic, Depth: int64(len(es))}, nil
}

func (m *memory) Peek(_ context.Context, q string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	m.mu.Lock()
	es, ok := m.queues[q]
	es = slices.Clone(es)
	if ok && m.flaw == "peek-takes" && len(es) > 0 {
		m.queues[q] = m.queues[q][:len(es)-1]
	}
	if ok && m.flaw == "limit-rotates" && opts.Limit > 0 && opts.Limit < len(es) {
		m.queues[q] = append(slices.Clone(es[opts.Limit:]), es[:opts.Limit]...)
	}
	m.mu.Unlock()
	rep := broker.PeekReport{Mode: broker.PeekHold}
	if !ok {
		return rep, m.notFound("peek", q)
	}
	if m.flaw == "peek-reorders" {
		slices.Reverse(es)
	}
	for _, e := range es {
		if opts.Limit > 0 && rep.Read >= int64(opts.Limit) {
			break
		}
		rep.Read++
		m := &broker.Message{ID: e.body, System: "memory", Queue: q, Body: []byte(e.body)}
		if e.from != "" {
			m.Death = &broker.Death{Queue: e.from, Reason: "rejected"}
		}
		if err := visit(m); err != nil {
			if errors.Is(err, broker.ErrStop) {
				return rep, nil
			}
			return rep, err
		}
	}
	return rep, nil
}

type sub struct {
	m     *memory
	q     string
	limit int64
	n     int64
	held  []uint64
}

func (m *memory) Consume(_ context.Context, q string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.queues[q]; !ok {
		return nil, m.notFound("consume", q)
	}
	if m.flaw == "refuses-consume" {
		return nil, &broker.Error{Kind: broker.ErrUnsupported, Op: "consume", Msg: "not today"}
	}
	lim := opts.Limit
	if m.flaw == "limit-ignored" {
		lim = 0
	}
	return &sub{m: m, q: q, limit: lim}, nil
}

func (s *sub) Next(context.Context) (*broker.Delivery, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.limit > 0 && s.n >= s.limit {
		return nil, io.EOF
	}
	for _, e := range s.m.queues[s.q] {
		if !e.taken {
			e.taken = true
			s.n++
			s.held = append(s.held, e.tag)
			return &broker.Delivery{Message: &broker.Message{ID: e.body, System: "memory", Queue: s.q, Body: []byte(e.body)},
				Receipt: broker.Receipt{Tag: e.tag}}, nil
		}
	}
	return nil, io.EOF
}

func (s *sub) settle(rs []broker.Receipt, remove bool) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for _, r := range rs {
		s.held = slices.DeleteFunc(s.held, func(t uint64) bool { return t == r.Tag })
		es := s.m.queues[s.q]
		for i, e := range es {
			if e.tag != r.Tag {
				continue
			}
			if !remove {
				e.taken = false
				break
			}
			if s.m.wire != nil {
				s.m.wire.Remove(e.body, "ack of")
			}
			n := 1
			if s.m.flaw == "ack-two" && i+1 < len(es) {
				n = 2
			}
			s.m.queues[s.q] = slices.Delete(es, i, i+n)
			break
		}
	}
}

func (s *sub) Ack(_ context.Context, rs ...broker.Receipt) error {
	s.settle(rs, true)
	return nil
}

func (s *sub) Release(_ context.Context, rs ...broker.Receipt) error {
	s.settle(rs, s.m.flaw == "release-drops")
	return nil
}

func (s *sub) Close() error {
	var rs []broker.Receipt
	for _, t := range s.held {
		rs = append(rs, broker.Receipt{Tag: t})
	}
	s.settle(rs, false)
	return nil
}

func (m *memory) Publish(_ context.Context, msgs []broker.Outgoing) ([]error, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := make([]error, len(msgs))
	for i, o := range msgs {
		switch {
		case o.Dest.Kind == broker.ToExchange:
			errs[i] = &broker.Error{Kind: broker.ErrUnroutable, Op: "publish", Msg: "no queue is bound"}
			if m.flaw == "unroutable-plain" {
				errs[i] = errors.New("returned")
			}
		case m.queues[o.Dest.Queue] == nil:
			errs[i] = m.notFound("publish", o.Dest.Queue)
		case m.flaw == "publish-unconfirmed" && i == len(msgs)-1:
			// Reported published, never stored: an adapter that takes a
			// publish for done before the broker confirmed it.
		default:
			m.tag++
			m.queues[o.Dest.Queue] = append(m.queues[o.Dest.Queue], &entry{body: string(o.Message.Body), tag: m.tag})
			if m.wire != nil {
				m.wire.Confirm(string(o.Message.Body))
			}
		}
	}
	if m.flaw == "publish-short" {
		errs = errs[:len(errs)-1]
	}
	return errs, nil
}

func (m *memory) Purge(_ context.Context, q string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.queues[q]
	if !ok {
		return 0, m.notFound("purge", q)
	}
	m.queues[q] = []*entry{}
	n := int64(len(es))
	if m.flaw == "purge-miscounts" {
		n--
	}
	return n, nil
}

// deadLetters makes a work queue and a dead-letter queue of n messages
// dead-lettered from it.
func (m *memory) deadLetters(_ brokertest.TB, n int) (string, broker.Destination) {
	src := m.make(nil)
	dlq := m.make(nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range n {
		m.tag++
		m.queues[dlq] = append(m.queues[dlq], &entry{body: fmt.Sprintf("dead-%d", i), tag: m.tag, from: src})
	}
	return dlq, broker.Destination{Kind: broker.ToQueue, Queue: src}
}

func (m *memory) Origin(_ context.Context, q string, msg *broker.Message) (broker.Destination, error) {
	switch {
	case msg.Death != nil && m.flaw == "origin-wrong":
		return broker.Destination{Kind: broker.ToQueue, Queue: q, Via: "death"}, nil
	case msg.Death != nil:
		return broker.Destination{Kind: broker.ToQueue, Queue: msg.Death.Queue, Via: "death"}, nil
	case m.flaw == "origin-guesses":
		return broker.Destination{Kind: broker.ToQueue, Queue: "q1", Via: "a guess"}, nil
	}
	return broker.Destination{}, &broker.Error{Kind: broker.ErrNotFound, Op: "origin", Msg: "the message was never dead-lettered"}
}

// StartMove moves the whole queue at once and remembers the task.
func (m *memory) StartMove(_ context.Context, q string, dest broker.Destination, _ broker.MoveOptions) (broker.MoveTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.queues[q]
	if !ok {
		return broker.MoveTask{}, m.notFound("move", q)
	}
	moved := int64(len(es))
	if m.flaw == "move-loses" {
		es = es[1:]
	}
	for _, e := range es {
		e.from = ""
	}
	m.queues[dest.Queue] = append(m.queues[dest.Queue], es...)
	m.queues[q] = []*entry{}
	task := broker.MoveTask{Handle: "move-" + q, Source: q, Destination: dest.String(), State: broker.MoveCompleted, Moved: &moved, ToMove: &moved}
	if m.flaw == "move-silent" {
		task.Moved, task.ToMove = nil, nil
	}
	m.moves[q] = task
	return task, nil
}

func (m *memory) MoveStatus(_ context.Context, q string) ([]broker.MoveTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.moves[q]; ok {
		return []broker.MoveTask{t}, nil
	}
	return nil, nil
}

func (m *memory) CancelMove(_ context.Context, q, _ string) (broker.MoveTask, error) {
	t, _ := m.MoveStatus(context.Background(), q)
	if len(t) == 0 {
		return broker.MoveTask{}, m.notFound("cancel move", q)
	}
	return t[0], nil
}

func memoryHarness(m *memory) brokertest.Harness {
	return brokertest.Harness{
		Broker: m,
		Settle: 50 * time.Millisecond, // its counts are exact at once
		Kinds: []brokertest.Kind{{Name: "classic", Kind: broker.KindClassic,
			Make: func(_ brokertest.TB, msgs []brokertest.Fill) string { return m.make(msgs) }}},
		Count: func(_ brokertest.TB, q string) int64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return int64(len(m.queues[q]))
		},
		Contents: func(_ brokertest.TB, q string) []string {
			m.mu.Lock()
			defer m.mu.Unlock()
			var b []string
			for _, e := range m.queues[q] {
				b = append(b, e.body)
			}
			return b
		},
		DeadLetters: m.deadLetters,
		Unroutable: func(brokertest.TB) broker.Destination {
			return broker.Destination{Kind: broker.ToExchange, Exchange: "nowhere"}
		},
	}
}

// recorder is a brokertest.TB that records what fails and what is
// skipped instead of failing the test that runs the suite.
type recorder struct {
	name     string
	log      *record
	failed   bool
	cleanups []func()
}

type record struct {
	mu      sync.Mutex
	fails   []string // "path: message"
	skipped []string
	passed  []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Logf(string, ...any) {
}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.fails = append(r.log.fails, r.name+": "+fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.log.mu.Lock()
	r.log.skipped = append(r.log.skipped, r.name+": "+fmt.Sprintf(format, args...))
	r.log.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) Run(name string, f func(brokertest.TB)) bool {
	c := &recorder{name: strings.TrimPrefix(r.name+"/"+name, "/"), log: r.log}
	done := make(chan bool)
	go func() {
		finished := false
		defer func() {
			for i := len(c.cleanups) - 1; i >= 0; i-- {
				c.cleanups[i]()
			}
			done <- finished
		}()
		f(c)
		finished = true
	}()
	if <-done && !c.failed {
		r.log.mu.Lock()
		r.log.passed = append(r.log.passed, c.name)
		r.log.mu.Unlock()
	}
	if c.failed {
		r.failed = true
	}
	return !c.failed
}

func runSuite(h brokertest.Harness) *record {
	r := &recorder{log: &record{}}
	r.Run("", func(t brokertest.TB) { brokertest.Check(t, h) })
	return r.log
}

// The suite passes an adapter that keeps every rule, and really runs its
// checks: each capability the adapter has passes, each it lacks is
// skipped with the reason.
func TestConformanceOfAGoodAdapter(t *testing.T) {
	log := runSuite(memoryHarness(newMemory("")))
	if len(log.fails) > 0 {
		t.Fatalf("the suite failed an adapter that keeps its rules:\n%s", strings.Join(log.fails, "\n"))
	}
	for _, want := range []string{"broker", "classic/inspect", "classic/peek", "classic/peek-limit", "classic/consume",
		"classic/consume-limit", "classic/publish", "classic/purge", "unroutable", "origin", "no-origin", "server-side-move"} {
		if !slices.Contains(log.passed, want) {
			t.Errorf("subtest %s did not pass (passed: %q; skipped: %q)", want, log.passed, log.skipped)
		}
	}
	for _, want := range []string{"classic/list: memory does not implement broker.QueueLister or broker.Namer",
		"route: memory does not implement broker.RouteChecker",
		"refused: memory has no destination that refuses a valid message (Harness.Refusing is nil)"} {
		if !slices.Contains(log.skipped, want) {
			t.Errorf("no skip %q; skipped:\n%s", want, strings.Join(log.skipped, "\n"))
		}
	}
}

// The suite fails an adapter that breaks a rule, in the subtest of that
// rule.
func TestConformanceCatchesABrokenAdapter(t *testing.T) {
	for _, tt := range flaws {
		t.Run(tt.flaw, func(t *testing.T) {
			log := runSuite(memoryHarness(newMemory(tt.flaw)))
			if !slices.ContainsFunc(log.fails, func(f string) bool { return strings.HasPrefix(f, tt.caught+": ") }) {
				t.Errorf("an adapter with flaw %s passed %s; failures:\n%s", tt.flaw, tt.caught, strings.Join(log.fails, "\n"))
			}
		})
	}
}
