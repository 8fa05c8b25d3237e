package brokertest

import (
	"errors"
	"slices"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The checks here are of the broker as a whole: returned and refused
// publishes, routes, exchanges, origins and server-side moves.

// publishOne publishes one message to dest and returns its result; a
// failure of the whole call, or not one result, fails t.
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
