package redrive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// fakeBroker is an in-memory broker whose queues follow the settle rules of
// the real ones: a released classic message goes back to its place, a
// released quorum message goes to the back with its delivery count raised,
// an SQS message stays hidden until released.
type fakeBroker struct {
	t      *testing.T
	system broker.System
	mu     sync.Mutex
	queues map[string]*fakeQueue
	// routes: exchange → routing key → queue; "" exchange routes to the
	// queue named by the key.
	routes map[string]map[string]string
	// publishHook may fail a publish: a non-nil whole error, or per index.
	publishHook func(outs []broker.Outgoing) ([]error, error)
	// releaseErr, when set, fails every Release: the messages stay taken
	// (as an SQS message stays hidden when ChangeMessageVisibility fails).
	releaseErr error
	origin     func(m *broker.Message) (broker.Destination, error)
	// deliverAgain, when it returns true for an acknowledged message, puts
	// the message back at the end of its queue: a delete the broker
	// forgot (SQS's at-least-once delete, a restarted emulator).
	deliverAgain func(m *broker.Message) bool
	// consumer, when set, is the consumer of the queues messages are
	// published to: it returns where it dead-letters m and the failure
	// it records, or "" when it processes m (the message then stays in
	// the queue it was published to).
	consumer  func(queue string, m *broker.Message) (dlq, reason string)
	flow      []func(bool, string)
	published int
	acked     int
	calls     map[string]int
	tag       uint64
}

type fakeQueue struct {
	kind  broker.QueueKind
	ready []*broker.Message
	// unacked by tag; pos is the original sequence for classic requeue.
	unacked map[uint64]fakeUnacked
	seq     int64
}

type fakeUnacked struct {
	m   *broker.Message
	pos int64
}

func newFake(t *testing.T, sys broker.System) *fakeBroker {
	return &fakeBroker{t: t, system: sys, queues: map[string]*fakeQueue{}, routes: map[string]map[string]string{}, calls: map[string]int{}}
}

func (f *fakeBroker) System() broker.System { return f.system }
func (f *fakeBroker) String() string        { return "fake-" + string(f.system) }
func (f *fakeBroker) Close() error          { return nil }

// Traits are those the adapter of the fake's system declares.
func (f *fakeBroker) Traits(q broker.Queue) broker.Traits {
	t := broker.Traits{Attributes: func(m *broker.Message) bool {
		return m.System == broker.SQS || (m.System == "" && f.system == broker.SQS)
	}}
	switch f.system {
	case broker.RabbitMQ:
		t.Park, t.PeekAll = broker.ParkRotate, broker.PeekRotate
		if q.Kind == broker.KindClassic {
			t.HoldInPlace = 1000
		}
		t.Retains = q.Kind == broker.KindStream
	case broker.SQS:
		fifo := q.Kind == broker.KindSQSFIFO || strings.HasSuffix(q.Name, ".fifo")
		t.Park, t.ReceiveBatch, t.MaxAttributes = broker.ParkHold, 10, 10
		t.Ordered, t.ParallelReceivers = fifo, !fifo
		t.StableIDs = true
	}
	return t
}

func (f *fakeBroker) declare(name string, kind broker.QueueKind) *fakeQueue {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := &fakeQueue{kind: kind, unacked: map[uint64]fakeUnacked{}}
	f.queues[name] = q
	return q
}

func (f *fakeBroker) bind(exchange, key, queue string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.routes[exchange] == nil {
		f.routes[exchange] = map[string]string{}
	}
	f.routes[exchange][key] = queue
}

func (f *fakeBroker) put(queue string, msgs ...*broker.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	for _, m := range msgs {
		m = m.Clone()
		m.Queue = queue
		m.System = f.system
		q.seq++
		m.Position = fmt.Sprint(q.seq)
		if m.ID == "" {
			m.ID = broker.Fingerprint(m)
		}
		q.ready = append(q.ready, m)
	}
}

func (f *fakeBroker) ready(queue string) []*broker.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queues[queue].ready)
}

func (f *fakeBroker) readyIDs(queue string) []string {
	var ids []string
	for _, m := range f.ready(queue) {
		ids = append(ids, m.ID)
	}
	return ids
}

func (f *fakeBroker) Queue(ctx context.Context, name string) (broker.Queue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[name]
	if !ok {
		return broker.Queue{}, broker.Errorf(broker.ErrNotFound, "queue", "%s", name)
	}
	inFlight := int64(len(q.unacked))
	return broker.Queue{Name: name, Kind: q.kind, Depth: int64(len(q.ready)), InFlight: &inFlight}, nil
}

func (f *fakeBroker) WatchFlow(fn func(bool, string)) {
	f.mu.Lock()
	f.flow = append(f.flow, fn)
	f.mu.Unlock()
}

func (f *fakeBroker) setFlow(blocked bool) {
	f.mu.Lock()
	fns := slices.Clone(f.flow)
	f.mu.Unlock()
	for _, fn := range fns {
		fn(blocked, "low on memory")
	}
}

func (f *fakeBroker) Origin(ctx context.Context, queue string, m *broker.Message) (broker.Destination, error) {
	f.mu.Lock()
	f.calls["origin"]++
	f.mu.Unlock()
	if f.origin != nil {
		return f.origin(m)
	}
	if m.Death == nil {
		return broker.Destination{}, broker.Errorf(broker.ErrNotFound, "origin", "no death record")
	}
	return broker.Destination{Kind: broker.ToExchange, Exchange: m.Death.Exchange, RoutingKeys: m.Death.RoutingKeys}, nil
}

func (f *fakeBroker) Publish(ctx context.Context, outs []broker.Outgoing) ([]error, error) {
	f.mu.Lock()
	f.calls["publish"]++
	hook := f.publishHook
	f.mu.Unlock()
	var hookErrs []error
	if hook != nil {
		errs, err := hook(outs)
		if err != nil {
			return nil, err
		}
		hookErrs = errs
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := make([]error, len(outs))
	for i, o := range outs {
		if hookErrs != nil && hookErrs[i] != nil {
			errs[i] = hookErrs[i]
			continue
		}
		if o.Dest.Kind == broker.ToOrigin {
			f.t.Errorf("publish to an unresolved origin")
		}
		var names []string
		switch o.Dest.Kind {
		case broker.ToQueue:
			names = []string{o.Dest.Queue}
		case broker.ToExchange:
			for _, k := range o.Dest.RoutingKeys {
				if q, ok := f.routes[o.Dest.Exchange][k]; ok {
					names = append(names, q)
				}
			}
		case broker.ToFile:
			names = []string{"file:" + o.Dest.Path}
			if f.queues[names[0]] == nil {
				f.queues[names[0]] = &fakeQueue{kind: broker.KindArchive, unacked: map[uint64]fakeUnacked{}}
			}
		}
		if len(names) == 0 {
			errs[i] = broker.Errorf(broker.ErrUnroutable, "publish", "no route")
			continue
		}
		for _, n := range names {
			q, ok := f.queues[n]
			if !ok {
				errs[i] = broker.Errorf(broker.ErrUnroutable, "publish", "no queue %s", n)
				continue
			}
			m := o.Message.Clone()
			m.Queue = n
			m.Redelivered = false
			m.DeliveryCount = 0
			if f.consumer != nil {
				if dlq, reason := f.consumer(n, m); dlq != "" {
					if m.Headers == nil {
						m.Headers = map[string]any{}
					}
					m.Headers["x-exception-message"] = reason
					m.Death = &broker.Death{Reason: "rejected", Queue: n, Exchange: o.Dest.Exchange, RoutingKeys: o.Dest.RoutingKeys, Count: 1}
					q, n = f.queues[dlq], dlq
					m.Queue = n
					m.ID = ""
				}
			}
			q.seq++
			m.Position = fmt.Sprint(q.seq)
			if o.GroupID != "" {
				if m.SystemAttributes == nil {
					m.SystemAttributes = map[string]string{}
				}
				m.SystemAttributes["MessageGroupId"] = o.GroupID
				m.SystemAttributes["MessageDeduplicationId"] = o.DeduplicationID
			}
			if m.ID == "" {
				m.ID = broker.Fingerprint(m)
			}
			q.ready = append(q.ready, m)
		}
		f.published++
	}
	return errs, nil
}

func (f *fakeBroker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	f.mu.Lock()
	f.calls["peek"]++
	msgs := slices.Clone(f.queues[queue].ready)
	f.mu.Unlock()
	var rep broker.PeekReport
	for i, m := range msgs {
		if opts.Limit > 0 && i >= opts.Limit {
			break
		}
		rep.Read++
		if err := visit(m.Clone()); err != nil {
			if errors.Is(err, broker.ErrStop) {
				return rep, nil
			}
			return rep, err
		}
	}
	return rep, nil
}

func (f *fakeBroker) Consume(ctx context.Context, queue string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["consume"]++
	q, ok := f.queues[queue]
	if !ok {
		return nil, broker.Errorf(broker.ErrNotFound, "consume", "no queue %s", queue)
	}
	return &fakeSub{f: f, q: q, opts: opts, mine: map[uint64]bool{}}, nil
}

type fakeSub struct {
	f      *fakeBroker
	q      *fakeQueue
	opts   broker.ConsumeOptions
	mine   map[uint64]bool
	n      int64
	closed bool
	// nextHook runs before each delivery (tests cancel from it).
	nextHook func(n int64)
}

func (s *fakeSub) Next(ctx context.Context) (*broker.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	if s.opts.Limit > 0 && s.n >= s.opts.Limit {
		s.f.mu.Unlock()
		return nil, io.EOF
	}
	if s.opts.Prefetch > 0 && len(s.mine) >= s.opts.Prefetch {
		s.f.mu.Unlock()
		// A real consumer would wait for acks; the engine must not rely on
		// more deliveries than its prefetch.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			s.f.mu.Lock()
			n := len(s.mine)
			s.f.mu.Unlock()
			if n < s.opts.Prefetch {
				return s.Next(ctx)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		return nil, io.EOF
	}
	if len(s.q.ready) == 0 {
		s.f.mu.Unlock()
		return nil, io.EOF
	}
	m := s.q.ready[0]
	s.q.ready = s.q.ready[1:]
	s.f.tag++
	tag := s.f.tag
	pos := s.q.seq
	fmt.Sscan(m.Position, &pos)
	s.q.unacked[tag] = fakeUnacked{m: m, pos: pos}
	s.mine[tag] = true
	s.n++
	n := s.n
	hook := s.nextHook
	s.f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	d := m.Clone()
	if s.q.kind == broker.KindQuorum && d.DeliveryCount > 0 {
		if d.Headers == nil {
			d.Headers = map[string]any{}
		}
		d.Headers["x-delivery-count"] = d.DeliveryCount
	}
	return &broker.Delivery{Message: d, Receipt: broker.Receipt{Tag: tag, Handle: fmt.Sprint("h", tag)}}, nil
}

func (s *fakeSub) Ack(ctx context.Context, rs ...broker.Receipt) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for _, r := range rs {
		if !s.mine[r.Tag] {
			s.f.t.Errorf("ack of unknown tag %d", r.Tag)
			continue
		}
		u := s.q.unacked[r.Tag]
		delete(s.mine, r.Tag)
		delete(s.q.unacked, r.Tag)
		s.f.acked++
		if s.f.deliverAgain != nil && s.f.deliverAgain(u.m) {
			s.q.ready = append(s.q.ready, u.m.Clone())
		}
	}
	return nil
}

func (s *fakeSub) Release(ctx context.Context, rs ...broker.Receipt) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.releaseErr != nil {
		return s.f.releaseErr
	}
	s.release(rs)
	return nil
}

// release requeues; f.mu held.
func (s *fakeSub) release(rs []broker.Receipt) {
	for _, r := range rs {
		u, ok := s.q.unacked[r.Tag]
		if !ok || !s.mine[r.Tag] {
			s.f.t.Errorf("release of unknown tag %d", r.Tag)
			continue
		}
		delete(s.mine, r.Tag)
		delete(s.q.unacked, r.Tag)
		m := u.m
		m.Redelivered = true
		switch s.q.kind {
		case broker.KindQuorum:
			m.DeliveryCount++
			s.q.ready = append(s.q.ready, m)
		default:
			// Classic and SQS: back in its place by original position.
			i := 0
			for i < len(s.q.ready) {
				var p int64
				fmt.Sscan(s.q.ready[i].Position, &p)
				if p > u.pos {
					break
				}
				i++
			}
			s.q.ready = slices.Insert(s.q.ready, i, m)
		}
	}
}

func (s *fakeSub) Close() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	var rs []broker.Receipt
	for tag := range s.mine {
		rs = append(rs, broker.Receipt{Tag: tag})
	}
	slices.SortFunc(rs, func(a, b broker.Receipt) int { return int(a.Tag) - int(b.Tag) })
	s.release(rs)
	s.closed = true
	return nil
}

var (
	_ broker.Consumer       = (*fakeBroker)(nil)
	_ broker.Publisher      = (*fakeBroker)(nil)
	_ broker.OriginResolver = (*fakeBroker)(nil)
	_ broker.Peeker         = (*fakeBroker)(nil)
	_ broker.QueueInspector = (*fakeBroker)(nil)
	_ broker.FlowWatcher    = (*fakeBroker)(nil)
	_ broker.QueueTraits    = (*fakeBroker)(nil)
)

// dead makes a dead-lettered RabbitMQ message with an x-death record.
func dead(id, body string) *broker.Message {
	return &broker.Message{
		Body: []byte(body),
		Headers: map[string]any{
			"x-death":                []any{map[string]any{"count": int64(1), "reason": "rejected", "queue": "orders", "exchange": "ex", "routing-keys": []any{"orders.new"}}},
			"x-first-death-reason":   "rejected",
			"x-first-death-queue":    "orders",
			"x-first-death-exchange": "ex",
			"app":                    "shop",
		},
		Properties: broker.Properties{MessageID: id, ContentType: "application/json", ContentEncoding: "utf-8",
			CorrelationID: "corr-" + id, Priority: 3, DeliveryMode: 2, Timestamp: time.Unix(1700000000, 0).UTC(), Type: "order"},
		Death: &broker.Death{Reason: "rejected", Queue: "orders", Exchange: "ex", RoutingKeys: []string{"orders.new"}, Count: 1},
	}
}
