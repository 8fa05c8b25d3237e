package brokertest

import (
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// kind runs the checks of one queue kind: inspect, list, peek, consume,
// publish and purge.
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
	// A peek that ends early in a mode that keeps order (a rotation puts
	// the rest behind what it rotated) still leaves the queue in order.
	after := s.h.Contents(t, q)
	tr := broker.TraitsOf(s.b, broker.Queue{Name: q, Kind: k.Kind, Depth: int64(len(f))})
	switch {
	case ordered(rep.Mode):
		if d := testdiff.Lines(bodiesOf(f), after); d != "" {
			t.Errorf("after %s peeks that ended early the queue holds, not in its order:\n%s", rep.Mode, d)
		}
	case tr.Ordered:
		if w, g := groupOrder(f, after); !slices.Equal(w, g) {
			t.Errorf("after peeks that ended early a group is out of order:\n%s", testdiff.Lines(w, g))
		}
	}
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

func isEOF(err error) bool { return errors.Is(err, io.EOF) }
