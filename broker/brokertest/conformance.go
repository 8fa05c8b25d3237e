package brokertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// Harness connects Conformance to one adapter and the server behind it. It
// makes queues, fills them and reads them back out of band: through the
// server's own client or the file itself, never through the adapter under
// test, so that the suite sees what the adapter really did.
type Harness struct {
	// Broker is the adapter under test, open on the server. Conformance
	// does not close it.
	Broker broker.Broker
	// Kinds are the queue kinds the adapter offers (classic, quorum,
	// stream; standard, FIFO; an archive's queue); each gets the
	// per-queue checks.
	Kinds []Kind
	// Count returns how many messages queue holds (ready, in flight and
	// unacknowledged alike), read out of band. The suite polls it until it
	// settles, so a count that lags (management statistics, SQS's
	// approximate numbers) is fine.
	Count func(t TB, queue string) int64
	// Contents returns the bodies of every message in queue, in queue
	// order, read out of band. It may take them: the suite calls it last.
	Contents func(t TB, queue string) []string
	// DeadLetters makes a work queue and its dead-letter queue, puts n
	// messages into the dead-letter queue as the broker dead-letters them,
	// and returns the dead-letter queue and where its messages came from.
	// Nil when the adapter resolves no origins.
	DeadLetters func(t TB, n int) (dlq string, origin broker.Destination)
	// Unroutable makes a destination that exists but routes to no queue
	// (RabbitMQ: an exchange without bindings); nil when the broker has
	// no such thing.
	Unroutable func(t TB) broker.Destination
	// Refusing makes a destination that refuses what is published to it
	// (RabbitMQ: a full queue with overflow reject-publish); nil when the
	// broker has none.
	Refusing func(t TB) broker.Destination
	// Secret is the password the adapter was opened with; String must
	// not show it.
	Secret string
	// Settle is how long a count may take to come to what the suite
	// expects; 0 means 90 seconds (management statistics lag, and the
	// machines that run the tests are loaded).
	Settle time.Duration
}

// Kind is one kind of queue the adapter offers.
type Kind struct {
	// Name names the subtests: "classic", "fifo".
	Name string
	// Kind is what QueueInspector must report for the queue; "" skips
	// that comparison.
	Kind broker.QueueKind
	// Make makes a queue of this kind, holding msgs in order, that is
	// removed when the test ends, and returns its name as the adapter
	// takes it. Group is for queues that keep order by group (SQS FIFO);
	// others ignore it.
	Make func(t TB, msgs []Fill) string
	// Unsupported names the capabilities the adapter refuses for this
	// kind with broker.ErrUnsupported ("consume", "purge"), with why. The
	// suite skips them only when the adapter does refuse so; a refusal of
	// a capability not named here is a failure.
	Unsupported map[string]string
	// Unchanging: reading the queue and settling its deliveries change
	// nothing (an archive): Ack removes no message.
	Unchanging bool
}

// Fill is one message a Kind.Make puts into its queue.
type Fill struct {
	Body  string
	Group string
}

// TB is what Conformance and a Harness need of a test: testing.TB's
// methods, and Run for subtests. A test of the suite itself passes a
// recorder instead of a *testing.T.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(f func())
	// Run runs f as a subtest named name and reports whether it passed
	// (a skipped subtest passes).
	Run(name string, f func(t TB)) bool
}

type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(TB)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}

// NameTB is Name for a TB: a queue or exchange name unique to this run.
func NameTB(t TB, prefix string) string { return name(t.Name(), prefix) }

// AsTB adapts a *testing.T to TB, for harness helpers that want to run
// outside Conformance.
func AsTB(t *testing.T) TB { return testingT{t} }

// Conformance checks an adapter against the rules every adapter keeps, the
// way testing/fstest.TestFS checks a file system: it type-asserts each
// capability interface of package broker and, for every capability the
// adapter has, runs subtests against the real server behind h. A
// capability the adapter lacks is skipped with the reason, never passed.
//
//	func TestConformance(t *testing.T) {
//		brokertest.Conformance(t, brokertest.Harness{Broker: b, Kinds: …, Count: …, Contents: …})
//	}
func Conformance(t *testing.T, h Harness) {
	t.Helper()
	Check(testingT{t}, h)
}

// Check is Conformance on any TB.
func Check(t TB, h Harness) {
	t.Helper()
	if h.Broker == nil || h.Count == nil || h.Contents == nil || len(h.Kinds) == 0 {
		t.Fatalf("brokertest.Harness needs Broker, Count, Contents and at least one Kind")
	}
	s := &suite{h: h, b: h.Broker}
	t.Run("broker", s.identity)
	for _, k := range h.Kinds {
		t.Run(k.Name, func(t TB) { s.kind(t, k) })
	}
	t.Run("unroutable", s.unroutable)
	t.Run("refused", s.refused)
	t.Run("route", s.route)
	t.Run("origin", s.origin)
	t.Run("no-origin", s.noOrigin)
	t.Run("server-side-move", s.move)
	t.Run("exchange-names", s.exchangeNames)
	t.Run("server-version", func(t TB) {
		sv, ok := s.b.(broker.ServerVersioner)
		if !ok {
			s.lacks(t, "ServerVersioner")
		}
		if v, err := sv.ServerVersion(ctx(t)); err != nil || v == "" {
			t.Errorf("ServerVersion() = %q, %v; want the server's version", v, err)
		}
	})
	t.Run("flow", func(t TB) {
		if _, ok := s.b.(broker.FlowWatcher); !ok {
			s.lacks(t, "FlowWatcher")
		}
		t.Skipf("flow control needs a blocked broker, which the shared test servers must not be: the fault tests block their own (connection-blocked)")
	})
	t.Run("unreadable", func(t TB) {
		if _, ok := s.b.(broker.UnreadableTaker); !ok {
			s.lacks(t, "UnreadableTaker")
		}
		t.Skipf("a message the client cannot decode is made by a broker-specific trick: the adapter's own tests cover TakeUnreadable")
	})
}

type suite struct {
	h Harness
	b broker.Broker
}

func (s *suite) settle() time.Duration {
	if s.h.Settle > 0 {
		return s.h.Settle
	}
	return 90 * time.Second
}

func ctx(t TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func (s *suite) lacks(t TB, iface string) {
	t.Helper()
	t.Skipf("%s does not implement broker.%s", s.b.System(), iface)
}

// unsupported skips t when err is the adapter's documented refusal of
// capability for kind k, and fails it when the refusal is not documented.
func unsupported(t TB, k Kind, capability string, err error) {
	t.Helper()
	if !errors.Is(err, broker.ErrUnsupported) {
		return
	}
	if why, ok := k.Unsupported[capability]; ok {
		t.Skipf("%s queues refuse %s (%s): %v", k.Name, capability, why, err)
	}
	t.Fatalf("%s: %v: the adapter refuses %s for %s queues, which the harness does not declare (Kind.Unsupported)", capability, err, capability, k.Name)
}

// declaredUnsupported fails t when the harness declared capability
// unsupported but the adapter did it.
func declaredUnsupported(t TB, k Kind, capability string) {
	t.Helper()
	if why, ok := k.Unsupported[capability]; ok {
		t.Errorf("%s worked on a %s queue, but the harness declares it unsupported (%s)", capability, k.Name, why)
	}
}

// waitCount polls the harness's out-of-band count of queue until it is
// want, and fails t with the last count when it never is.
func (s *suite) waitCount(t TB, queue string, want int64, why string) {
	t.Helper()
	deadline := time.Now().Add(s.settle())
	wait := 20 * time.Millisecond
	for {
		got := s.h.Count(t, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d: %s", queue, got, want, why)
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// fills returns n messages with bodies unique to this run, in two groups.
func fills(n int) []Fill {
	var r [4]byte
	_, _ = rand.Read(r[:])
	tag := hex.EncodeToString(r[:])
	f := make([]Fill, n)
	for i := range f {
		f[i] = Fill{Body: fmt.Sprintf("conformance-%s-%02d", tag, i), Group: fmt.Sprintf("g%d", i%2)}
	}
	return f
}

func bodiesOf(f []Fill) []string {
	b := make([]string, len(f))
	for i, x := range f {
		b[i] = x.Body
	}
	return b
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// groupOrder returns, for each group of f, the bodies of got that belong to
// it, in got's order, and what they should be (f's order).
func groupOrder(f []Fill, got []string) (want, have []string) {
	group := map[string]string{}
	for _, x := range f {
		group[x.Body] = x.Group
	}
	in := map[string]bool{}
	for _, b := range got {
		in[b] = true
	}
	for _, g := range []string{"g0", "g1"} {
		for _, x := range f {
			if x.Group == g && in[x.Body] {
				want = append(want, x.Body)
			}
		}
		for _, b := range got {
			if group[b] == g {
				have = append(have, b)
			}
		}
	}
	return want, have
}

func missing(t TB) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "dlqt-conformance-missing-" + hex.EncodeToString(r[:])
}

// notFound fails t unless err says, as a typed broker error, that a queue
// is missing.
func notFound(t TB, op string, err error) {
	t.Helper()
	var be *broker.Error
	switch {
	case err == nil:
		t.Errorf("%s of a missing queue: no error, want broker.ErrNotFound", op)
	case !errors.Is(err, broker.ErrNotFound):
		t.Errorf("%s of a missing queue: %v (%T), want broker.ErrNotFound", op, err, err)
	case !errors.As(err, &be):
		t.Errorf("%s of a missing queue: %v (%T), want a *broker.Error that says why", op, err, err)
	}
}

func (s *suite) identity(t TB) {
	if s.b.System() == "" {
		t.Errorf("System() is empty")
	}
	str := s.b.String()
	if str == "" {
		t.Errorf("String() is empty: it names the broker in output and audit records")
	}
	if s.h.Secret != "" && strings.Contains(str, s.h.Secret) {
		t.Errorf("String() shows the password: it must be redacted")
	}
}

func (s *suite) kind(t TB, k Kind) {
	t.Run("inspect", func(t TB) { s.inspect(t, k) })
	t.Run("list", func(t TB) { s.list(t, k) })
	t.Run("peek", func(t TB) { s.peek(t, k) })
	t.Run("peek-limit", func(t TB) { s.peekLimit(t, k) })
	t.Run("consume", func(t TB) { s.consume(t, k) })
	t.Run("consume-limit", func(t TB) { s.consumeLimit(t, k) })
	t.Run("publish", func(t TB) { s.publish(t, k) })
	t.Run("purge", func(t TB) { s.purge(t, k) })
}

// inspect: Queue describes the queue with its kind and depth; a missing
// queue is ErrNotFound.
func (s *suite) inspect(t TB, k Kind) {
	qi, ok := s.b.(broker.QueueInspector)
	if !ok {
		s.lacks(t, "QueueInspector")
	}
	f := fills(3)
	q := k.Make(t, f)
	c := ctx(t)
	deadline := time.Now().Add(s.settle())
	for {
		got, err := qi.Queue(c, q)
		if err != nil {
			t.Fatalf("Queue(%s): %v", q, err)
		}
		if got.Name != q {
			t.Errorf("Queue(%s).Name = %q", q, got.Name)
		}
		if k.Kind != "" && got.Kind != k.Kind {
			t.Errorf("Queue(%s).Kind = %q, want %q", q, got.Kind, k.Kind)
		}
		if got.System != s.b.System() {
			t.Errorf("Queue(%s).System = %q, want %q", q, got.System, s.b.System())
		}
		// The depth may lag (SQS's numbers are approximate, a stream's
		// come from statistics); it must come to the truth.
		if got.Depth == int64(len(f)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Queue(%s).Depth = %d, want %d", q, got.Depth, len(f))
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err := qi.Queue(c, missing(t))
	notFound(t, "Queue", err)
}

// list: the queue is listed by Queues and by QueueNames.
func (s *suite) list(t TB, k Kind) {
	ql, lists := s.b.(broker.QueueLister)
	nm, names := s.b.(broker.Namer)
	if !lists && !names {
		s.lacks(t, "QueueLister or broker.Namer")
	}
	q := k.Make(t, fills(1))
	c := ctx(t)
	if lists {
		qs, err := ql.Queues(c)
		if err != nil {
			t.Fatalf("Queues: %v", err)
		}
		if !slices.ContainsFunc(qs, func(x broker.Queue) bool { return x.Name == q }) {
			t.Errorf("Queues lists %d queues, not %s", len(qs), q)
		}
	}
	if names {
		ns, err := nm.QueueNames(c, q)
		if err != nil {
			t.Fatalf("QueueNames(%s): %v", q, err)
		}
		if !slices.Contains(ns, q) || !slices.IsSorted(ns) {
			t.Errorf("QueueNames(%s) = %q: want it sorted, with %s", q, ns, q)
		}
		for _, n := range ns {
			if !strings.HasPrefix(n, q) {
				t.Errorf("QueueNames(%s) lists %s, without the prefix", q, n)
			}
		}
	}
}

// ordered reports whether a peek in mode promises queue order.
func ordered(mode broker.PeekMode) bool {
	return mode == broker.PeekHold || mode == broker.PeekRotate || mode == broker.PeekStream
}

// peek: a whole peek in the mode the traits name visits every message (or
// says how many were out of reach) once, in queue order where the mode
// keeps it, and leaves every message where it was.
func (s *suite) peek(t TB, k Kind) {
	p, ok := s.b.(broker.Peeker)
	if !ok {
		s.lacks(t, "Peeker")
	}
	f := fills(6)
	q := k.Make(t, f)
	s.waitCount(t, q, int64(len(f)), "filled")
	tr := broker.TraitsOf(s.b, broker.Queue{Name: q, Kind: k.Kind, Depth: int64(len(f))})
	c := ctx(t)
	var got []string
	rep, err := p.Peek(c, q, broker.PeekOptions{Mode: tr.PeekAll}, func(m *broker.Message) error {
		got = append(got, string(m.Body))
		if m.Queue != q {
			t.Errorf("peeked message %s has Queue %q, want %q", m.Body, m.Queue, q)
		}
		if m.ID == "" {
			t.Errorf("peeked message %s has no ID", m.Body)
		}
		return nil
	})
	if err != nil {
		unsupported(t, k, "peek", err)
		t.Fatalf("Peek(%s): %v", q, err)
	}
	if rep.Read != int64(len(got)) {
		t.Errorf("Peek reports %d read, visited %d", rep.Read, len(got))
	}
	// An SQS FIFO queue shows only the head of each group; the rest must
	// be counted as out of reach, never silently left out.
	if rep.Read+rep.OutOfReach != int64(len(f)) {
		t.Errorf("Peek read %d, %d out of reach, of %d messages", rep.Read, rep.OutOfReach, len(f))
	}
	want := bodiesOf(f)
	if len(got) == len(want) || rep.OutOfReach == 0 {
		w, g := want, got
		if !ordered(rep.Mode) {
			w, g = sorted(want), sorted(got)
		}
		if d := testdiff.Lines(w, g); d != "" {
			t.Errorf("Peek (mode %s) visited, not as queued:\n%s", rep.Mode, d)
		}
	} else {
		in := map[string]bool{}
		for _, b := range want {
			in[b] = true
		}
		for _, b := range got {
			if !in[b] {
				t.Errorf("Peek visited %q, which the queue never held", b)
			}
			delete(in, b)
		}
	}
	if tr.Ordered {
		if w, g := groupOrder(f, got); !slices.Equal(w, g) {
			t.Errorf("Peek visited a group out of order:\n%s", testdiff.Lines(w, g))
		}
	}
	s.waitCount(t, q, int64(len(f)), "a peek takes nothing")
	after := s.h.Contents(t, q)
	switch {
	case ordered(rep.Mode):
		if d := testdiff.Lines(want, after); d != "" {
			t.Errorf("after a %s peek the queue holds, not in its order:\n%s", rep.Mode, d)
		}
	case tr.Ordered:
		if w, g := groupOrder(f, after); !slices.Equal(w, g) {
			t.Errorf("after a peek a group is out of order:\n%s", testdiff.Lines(w, g))
		}
	default:
		if d := testdiff.Lines(sorted(want), sorted(after)); d != "" {
			t.Errorf("after a peek the queue holds:\n%s", d)
		}
	}
	_, err = p.Peek(c, missing(t), broker.PeekOptions{}, func(*broker.Message) error { return nil })
	notFound(t, "Peek", err)
}

// peekLimit: a limit and ErrStop end a peek early, without error, and
// take nothing.
func (s *suite) peekLimit(t TB, k Kind) {
	p, ok := s.b.(broker.Peeker)
	if !ok {
		s.lacks(t, "Peeker")
	}
	f := fills(4)
	q := k.Make(t, f)
	s.waitCount(t, q, int64(len(f)), "filled")
	c := ctx(t)
	n := 0
	rep, err := p.Peek(c, q, broker.PeekOptions{Limit: 2}, func(*broker.Message) error { n++; return nil })
	if err != nil {
		unsupported(t, k, "peek", err)
		t.Fatalf("Peek(%s, limit 2): %v", q, err)
	}
	if n > 2 || rep.Read != int64(n) {
		t.Errorf("Peek with limit 2 visited %d, reports %d read", n, rep.Read)
	}
	s.waitCount(t, q, int64(len(f)), "a peek with a limit takes nothing")
	n = 0
	rep, err = p.Peek(c, q, broker.PeekOptions{}, func(*broker.Message) error { n++; return broker.ErrStop })
	if err != nil {
		t.Errorf("Peek stopped by ErrStop: %v, want no error", err)
	}
	if n != 1 || rep.Read != 1 {
		t.Errorf("Peek stopped by ErrStop at the first message visited %d, reports %d read; want 1, 1", n, rep.Read)
	}
	s.waitCount(t, q, int64(len(f)), "a stopped peek takes nothing")
}

// consume: Ack removes exactly the message acknowledged, Release returns
// one, Close returns every unsettled one.
func (s *suite) consume(t TB, k Kind) {
	co, ok := s.b.(broker.Consumer)
	if !ok {
		s.lacks(t, "Consumer")
	}
	f := fills(4)
	q := k.Make(t, f)
	s.waitCount(t, q, int64(len(f)), "filled")
	c := ctx(t)
	sub, err := co.Consume(c, q, broker.ConsumeOptions{Prefetch: 10, Idle: 5 * time.Second})
	if err != nil {
		unsupported(t, k, "consume", err)
		t.Fatalf("Consume(%s): %v", q, err)
	}
	declaredUnsupported(t, k, "consume")
	closed := false
	defer func() {
		if !closed {
			_ = sub.Close()
		}
	}()
	next := func() *broker.Delivery {
		t.Helper()
		d, err := sub.Next(c)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if !slices.Contains(bodiesOf(f), string(d.Message.Body)) {
			t.Fatalf("Next gave %q, which the queue never held", d.Message.Body)
		}
		return d
	}
	acked := next()
	released := next()
	if string(acked.Message.Body) == string(released.Message.Body) {
		t.Fatalf("Next gave %q twice, before either was settled", acked.Message.Body)
	}
	if err := sub.Ack(c, acked.Receipt); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := sub.Release(c, released.Receipt); err != nil {
		t.Fatalf("Release: %v", err)
	}
	held := next() // unsettled: Close returns it
	if ext, ok := sub.(broker.Extender); ok {
		// Hidden for longer, it still comes back at Close.
		if err := ext.Extend(c, time.Minute, held.Receipt); err != nil {
			t.Errorf("Extend: %v", err)
		}
	}
	closed = true
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	want := bodiesOf(f)
	if !k.Unchanging {
		want = slices.DeleteFunc(want, func(b string) bool { return b == string(acked.Message.Body) })
	}
	s.waitCount(t, q, int64(len(want)), "one message was acknowledged; one released; one left unsettled at Close")
	if d := testdiff.Lines(sorted(want), sorted(s.h.Contents(t, q))); d != "" {
		t.Errorf("after Ack of %s the queue holds:\n%s", acked.Message.Body, d)
	}
	_, err = co.Consume(c, missing(t), broker.ConsumeOptions{Idle: time.Second})
	if err == nil {
		t.Errorf("Consume of a missing queue: no error, want broker.ErrNotFound")
	} else {
		notFound(t, "Consume", err)
	}
}

// consumeLimit: a subscription stops with io.EOF after Limit deliveries.
func (s *suite) consumeLimit(t TB, k Kind) {
	co, ok := s.b.(broker.Consumer)
	if !ok {
		s.lacks(t, "Consumer")
	}
	f := fills(4)
	q := k.Make(t, f)
	s.waitCount(t, q, int64(len(f)), "filled")
	c := ctx(t)
	sub, err := co.Consume(c, q, broker.ConsumeOptions{Prefetch: 10, Limit: 2, Idle: 5 * time.Second})
	if err != nil {
		unsupported(t, k, "consume", err)
		t.Fatalf("Consume(%s, limit 2): %v", q, err)
	}
	defer sub.Close()
	var n int
	for ; n < 10; n++ {
		if _, err := sub.Next(c); err != nil {
			if !isEOF(err) {
				t.Fatalf("Next: %v", err)
			}
			break
		}
	}
	if n != 2 {
		t.Errorf("a subscription with limit 2 gave %d deliveries before io.EOF", n)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.waitCount(t, q, int64(len(f)), "Close returns what was not settled")
}

// publish: one result per message, each confirmed message in the queue.
func (s *suite) publish(t TB, k Kind) {
	pub, ok := s.b.(broker.Publisher)
	if !ok {
		s.lacks(t, "Publisher")
	}
	q := k.Make(t, nil)
	tr := broker.TraitsOf(s.b, broker.Queue{Name: q, Kind: k.Kind})
	f := fills(3)
	out := make([]broker.Outgoing, len(f))
	for i, x := range f {
		out[i] = broker.Outgoing{Message: &broker.Message{Queue: q, System: s.b.System(), Body: []byte(x.Body),
			Properties: broker.Properties{MessageID: x.Body, ContentType: "text/plain"}},
			Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}}
		if tr.Ordered {
			out[i].GroupID = x.Group
			out[i].DeduplicationID = x.Body
		}
	}
	c := ctx(t)
	errs, err := pub.Publish(c, out)
	if err != nil {
		unsupported(t, k, "publish", err)
		t.Fatalf("Publish: %v", err)
	}
	if len(errs) != len(out) {
		t.Fatalf("Publish of %d messages gave %d results, want one a message", len(out), len(errs))
	}
	for i, e := range errs {
		if e != nil {
			unsupported(t, k, "publish", e)
			t.Errorf("Publish of message %d: %v", i, e)
		}
	}
	declaredUnsupported(t, k, "publish")
	s.waitCount(t, q, int64(len(f)), "every message was confirmed")
	got := s.h.Contents(t, q)
	if d := testdiff.Lines(sorted(bodiesOf(f)), sorted(got)); d != "" {
		t.Errorf("after Publish the queue holds:\n%s", d)
	}
	if tr.Ordered {
		if w, g := groupOrder(f, got); !slices.Equal(w, g) {
			t.Errorf("Publish put a group out of order:\n%s", testdiff.Lines(w, g))
		}
	}
	if tr.FilesOnly {
		// An archive opened for appending takes every destination into
		// its own file: no queue is missing.
		return
	}
	errs, err = pub.Publish(c, []broker.Outgoing{{Message: &broker.Message{Body: []byte("to nowhere")},
		Dest: broker.Destination{Kind: broker.ToQueue, Queue: missing(t)}, GroupID: "g0", DeduplicationID: "to-nowhere"}})
	if err == nil && len(errs) != 1 {
		t.Fatalf("Publish of 1 message gave %d results", len(errs))
	}
	if err == nil {
		err = errs[0]
	}
	// RabbitMQ's default exchange returns a message for a missing queue
	// as unroutable; the others say the queue is not there.
	if errors.Is(err, broker.ErrUnroutable) {
		var be *broker.Error
		if !errors.As(err, &be) {
			t.Errorf("Publish to a missing queue: %v (%T), want a *broker.Error", err, err)
		}
		return
	}
	notFound(t, "Publish", err)
}

// purge: Purge removes every message and says how many.
func (s *suite) purge(t TB, k Kind) {
	pu, ok := s.b.(broker.Purger)
	if !ok {
		s.lacks(t, "Purger")
	}
	f := fills(3)
	q := k.Make(t, f)
	s.waitCount(t, q, int64(len(f)), "filled")
	c := ctx(t)
	n, err := pu.Purge(c, q)
	if err != nil {
		unsupported(t, k, "purge", err)
		t.Fatalf("Purge(%s): %v", q, err)
	}
	declaredUnsupported(t, k, "purge")
	if n != int64(len(f)) {
		t.Errorf("Purge reports %d removed, want %d", n, len(f))
	}
	s.waitCount(t, q, 0, "purged")
	_, err = pu.Purge(c, missing(t))
	notFound(t, "Purge", err)
}

func (s *suite) publishOne(t TB, dest broker.Destination) error {
	t.Helper()
	pub, ok := s.b.(broker.Publisher)
	if !ok {
		s.lacks(t, "Publisher")
	}
	errs, err := pub.Publish(ctx(t), []broker.Outgoing{{Message: &broker.Message{Body: []byte("conformance"), System: s.b.System()}, Dest: dest}})
	if err != nil {
		t.Fatalf("Publish to %s: %v (a failure of the whole call; want one result for the message)", dest, err)
	}
	if len(errs) != 1 {
		t.Fatalf("Publish of 1 message to %s gave %d results", dest, len(errs))
	}
	return errs[0]
}

// unroutable: a message no queue takes is broker.ErrUnroutable, typed.
func (s *suite) unroutable(t TB) {
	if s.h.Unroutable == nil {
		t.Skipf("%s has no destination that exists and routes nowhere (Harness.Unroutable is nil)", s.b.System())
	}
	dest := s.h.Unroutable(t)
	err := s.publishOne(t, dest)
	var be *broker.Error
	if !errors.Is(err, broker.ErrUnroutable) || !errors.As(err, &be) {
		t.Errorf("Publish to %s, which routes nowhere: %v (%T), want a *broker.Error of broker.ErrUnroutable", dest, err, err)
	}
}

// refused: a message the broker refuses is a typed broker error,
// broker.ErrConflict (what exists refuses what was asked).
func (s *suite) refused(t TB) {
	if s.h.Refusing == nil {
		t.Skipf("%s has no destination that refuses a valid message (Harness.Refusing is nil)", s.b.System())
	}
	dest := s.h.Refusing(t)
	err := s.publishOne(t, dest)
	var be *broker.Error
	if !errors.Is(err, broker.ErrConflict) || !errors.As(err, &be) {
		t.Errorf("Publish to %s, which refuses it: %v (%T), want a *broker.Error of broker.ErrConflict", dest, err, err)
	}
}

// route: RouteChecker tells a destination that takes messages from one
// that does not, without publishing.
func (s *suite) route(t TB) {
	rc, ok := s.b.(broker.RouteChecker)
	if !ok {
		s.lacks(t, "RouteChecker")
	}
	c := ctx(t)
	q := s.h.Kinds[0].Make(t, nil)
	if ok, err := rc.Routable(c, broker.Destination{Kind: broker.ToQueue, Queue: q}); err != nil || !ok {
		t.Errorf("Routable(queue:%s) = %t, %v; want true", q, ok, err)
	}
	if ok, err := rc.Routable(c, broker.Destination{Kind: broker.ToQueue, Queue: missing(t)}); err != nil || ok {
		t.Errorf("Routable of a missing queue = %t, %v; want false", ok, err)
	}
	if s.h.Unroutable != nil {
		dest := s.h.Unroutable(t)
		if ok, err := rc.Routable(c, dest); err != nil || ok {
			t.Errorf("Routable(%s), which routes nowhere, = %t, %v; want false", dest, ok, err)
		}
	}
	s.waitCount(t, q, 0, "Routable publishes nothing")
}

// exchangeNames: an exchange is listed by its name's prefix.
func (s *suite) exchangeNames(t TB) {
	en, ok := s.b.(broker.ExchangeNamer)
	if !ok {
		s.lacks(t, "ExchangeNamer")
	}
	if s.h.Unroutable == nil {
		t.Skipf("the harness makes no exchange (Harness.Unroutable is nil)")
	}
	dest := s.h.Unroutable(t)
	if dest.Kind != broker.ToExchange {
		t.Skipf("the harness's unroutable destination %s is not an exchange", dest)
	}
	ns, err := en.ExchangeNames(ctx(t), dest.Exchange)
	if err != nil {
		t.Fatalf("ExchangeNames(%s): %v", dest.Exchange, err)
	}
	if !slices.Equal(ns, []string{dest.Exchange}) {
		t.Errorf("ExchangeNames(%s) = %q, want just it", dest.Exchange, ns)
	}
}

// deadLetters peeks the dead letters the harness made.
func (s *suite) deadLetters(t TB, n int) (string, broker.Destination, []*broker.Message) {
	t.Helper()
	if s.h.DeadLetters == nil {
		t.Skipf("the harness makes no dead letters (Harness.DeadLetters is nil)")
	}
	dlq, origin := s.h.DeadLetters(t, n)
	s.waitCount(t, dlq, int64(n), "dead-lettered")
	p, ok := s.b.(broker.Peeker)
	if !ok {
		return dlq, origin, nil
	}
	var ms []*broker.Message
	if _, err := p.Peek(ctx(t), dlq, broker.PeekOptions{}, func(m *broker.Message) error {
		ms = append(ms, m.Clone())
		return nil
	}); err != nil {
		t.Fatalf("Peek(%s): %v", dlq, err)
	}
	if len(ms) != n {
		t.Fatalf("Peek(%s) read %d dead letters, want %d", dlq, len(ms), n)
	}
	return dlq, origin, ms
}

// origin: every dead letter resolves to where it came from, and says what
// record chose it.
func (s *suite) origin(t TB) {
	or, ok := s.b.(broker.OriginResolver)
	if !ok {
		s.lacks(t, "OriginResolver")
	}
	dlq, want, ms := s.deadLetters(t, 2)
	if ms == nil {
		t.Skipf("without a Peeker the suite cannot read the dead letters to resolve")
	}
	for _, m := range ms {
		got, err := or.Origin(ctx(t), dlq, m)
		if err != nil {
			t.Errorf("Origin of %s: %v", m.Body, err)
			continue
		}
		if got.Via == "" {
			t.Errorf("Origin of %s: %s names no record it came from (Via)", m.Body, got)
		}
		got.Via = ""
		if got.String() != want.String() {
			t.Errorf("Origin of %s = %s, want %s", m.Body, got, want)
		}
	}
}

// noOrigin: a message that was never dead-lettered has no origin: it is
// ErrNotFound, not a guess.
func (s *suite) noOrigin(t TB) {
	or, ok := s.b.(broker.OriginResolver)
	if !ok {
		s.lacks(t, "OriginResolver")
	}
	p, ok := s.b.(broker.Peeker)
	if !ok {
		t.Skipf("without a Peeker the suite cannot read a message to resolve")
	}
	f := fills(1)
	q := s.h.Kinds[0].Make(t, f)
	s.waitCount(t, q, 1, "filled")
	var m *broker.Message
	if _, err := p.Peek(ctx(t), q, broker.PeekOptions{Limit: 1}, func(x *broker.Message) error {
		m = x.Clone()
		return broker.ErrStop
	}); err != nil || m == nil {
		t.Fatalf("Peek(%s): %v, read %v", q, err, m != nil)
	}
	d, err := or.Origin(ctx(t), q, m)
	if err == nil {
		t.Errorf("Origin of a message published straight into %s = %s, want broker.ErrNotFound", q, d)
		return
	}
	if !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("Origin of a message published straight into %s: %v, want broker.ErrNotFound", q, err)
	}
}

// move: a server-side move reports its task and progress, and moves every
// message of the dead-letter queue to its origin.
func (s *suite) move(t TB) {
	mv, ok := s.b.(broker.ServerSideMover)
	if !ok {
		s.lacks(t, "ServerSideMover")
	}
	if s.h.DeadLetters == nil {
		t.Skipf("the harness makes no dead-letter queue to move (Harness.DeadLetters is nil)")
	}
	const n = 5
	dlq, origin := s.h.DeadLetters(t, n)
	s.waitCount(t, dlq, n, "dead-lettered")
	if origin.Kind != broker.ToQueue {
		t.Skipf("the dead letters' origin %s is not a queue the suite can count", origin)
	}
	c := ctx(t)
	task, err := mv.StartMove(c, dlq, broker.Destination{Kind: broker.ToQueue, Queue: origin.Queue}, broker.MoveOptions{})
	if err != nil {
		if errors.Is(err, broker.ErrUnsupported) {
			// An endpoint without the calls (fauxqs has no message
			// move tasks) says so, typed.
			t.Skipf("StartMove: %v", err)
		}
		t.Fatalf("StartMove(%s → %s): %v", dlq, origin, err)
	}
	if task.Handle == "" {
		t.Errorf("StartMove gave a task without a handle: it cannot be cancelled")
	}
	if task.State.Done() && task.State != broker.MoveCompleted {
		t.Fatalf("StartMove: the task %s: %s", task.State, task.Failure)
	}
	deadline := time.Now().Add(s.settle())
	for {
		tasks, err := mv.MoveStatus(c, dlq)
		if err != nil {
			t.Fatalf("MoveStatus(%s): %v", dlq, err)
		}
		if len(tasks) == 0 {
			// The task removed itself when it was done (a shovel with
			// delete-after): the counts below show what it did.
			break
		}
		cur := tasks[0]
		if cur.State == broker.MoveFailed || cur.State == broker.MoveCancelled {
			t.Fatalf("the move %s: %s", cur.State, cur.Failure)
		}
		if cur.State == broker.MoveCompleted {
			if cur.Moved != nil && *cur.Moved != n {
				t.Errorf("the completed move reports %d moved, want %d", *cur.Moved, n)
			}
			if cur.Moved == nil && cur.Remaining == nil && !cur.Lingers {
				t.Errorf("the completed move reports neither Moved nor Remaining: no progress can be shown")
			}
			break
		}
		if cur.Moved == nil && cur.ToMove == nil && cur.Remaining == nil {
			t.Errorf("a running move (%s) reports neither Moved, ToMove nor Remaining: no progress can be shown", cur.State)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the move is still %s", cur.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, ok := s.b.(broker.MoveSettler); ok {
		left, err := st.Left(c, dlq)
		if err != nil || left != 0 {
			t.Errorf("Left(%s) = %d, %v; want 0", dlq, left, err)
		}
	}
	s.waitCount(t, origin.Queue, n, "moved here")
	s.waitCount(t, dlq, 0, "moved away")
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }
