package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Consumer = (*Broker)(nil)

// DefaultPrefetch is the Subscription window when ConsumeOptions.Prefetch is 0.
const DefaultPrefetch = 256

// Consume takes messages of queue for moving, on a dedicated channel with
// basic.qos = opts.Prefetch. See Subscription for the guarantees. Streams
// are refused: an ack does not remove a message from a stream.
func (b *Broker) Consume(ctx context.Context, queue string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	op := "consume queue `" + queue + "`"
	var mq mgmtQueue
	err := b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"/"+url.PathEscape(queue)+"?columns=name,type", nil, &mq)
	switch {
	case errors.Is(err, broker.ErrNotFound):
		return nil, b.notFoundQueue(op, queue)
	case err == nil && mq.Type == "stream":
		return nil, &broker.Error{Kind: broker.ErrUnsupported, Op: op,
			Hint: broker.Hintf("messages cannot be removed from a stream queue (an ack only advances the reader): copy them with %s instead", broker.Cmd("export"))}
	}
	// On a classic queue a delivery beyond the bound costs nothing (Close
	// puts it back in its place), so acks need not wait for the bound.
	boundAcks := !(err == nil && mq.Type == "classic")
	// Without the management API the kind is unknown; consuming still works
	// for classic and quorum queues, and a stream would deliver nothing
	// without an offset.
	if opts.Limit < 0 {
		return nil, broker.Hintf("%s: %s must be 0 (all) or more", op, broker.OptLimit)
	}
	depth, _, err := b.inspect(ctx, queue)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 || limit > depth {
		// Never more than the queue held at the start, so that released
		// messages are not handed out again and again.
		limit = depth
	}
	prefetch := int64(opts.Prefetch)
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	idle := opts.Idle
	if idle <= 0 {
		idle = time.Second
	}
	s := &Subscription{b: b, queue: queue, limit: limit, idle: idle, unsettled: map[uint64]bool{}, boundAcks: boundAcks}
	if limit == 0 {
		s.done = true
		return s, nil
	}
	ch, err := b.channel(ctx)
	if err != nil {
		return nil, err
	}
	w, err := startWindowed(ch, queue, limit, prefetch, nil)
	if err != nil {
		_ = ch.Close()
		return nil, translateErr(op, err)
	}
	s.ch, s.w = ch, w
	return s, nil
}

// Subscription is a RabbitMQ consumer for moving messages. It hands out at
// most Limit deliveries, and at most the number of messages the queue held
// when it started when Limit is 0, so a message returned by Release is not
// handed out over and over. Next reports io.EOF at that bound, or when no
// message arrives within Idle.
//
// Settling: Ack removes a message (call it only after the destination
// confirmed it); Release returns it with nack-requeue. Close releases every
// delivery not yet settled (by closing the channel). The broker is never
// allowed to push more deliveries than the bound: near the end, settlements
// that would let it push more are held back until the consumer is
// cancelled, so no delivery beyond the bound is ever made and returned.
//
// Release on a quorum queue is not neutral: RabbitMQ raises the message's
// x-delivery-count and (on 3.10 and 4.0 for nack-requeue) moves it to the
// back of the queue; with a delivery limit (on 4.x every quorum queue has
// one, 20 by default), repeated releases dead-letter it, or drop it when the
// queue has no dead-letter exchange. On a
// classic queue a released message goes back to its place at the head and
// may be handed out again (within the bound), with the redelivered flag.
type Subscription struct {
	b      *Broker
	queue  string
	limit  int64
	idle   time.Duration
	ch     *amqp.Channel
	w      *windowedConsumer
	handed int64

	mu        sync.Mutex
	unsettled map[uint64]bool
	// lastTag is the highest delivery tag handed out.
	lastTag uint64
	// acks are acknowledged by the caller and not yet sent: they go out as
	// one basic.ack with multiple set once every lower delivery is settled
	// (and, while the consumer is active, as far as the bound allows).
	// A quorum queue turns each basic.ack into a command of its own and, on
	// RabbitMQ 3.10, keeps commands beyond 32 in flight in the channel
	// until earlier ones are applied; closing the channel then drops them,
	// and their messages, already moved, go back to the queue.
	acks []uint64
	// held are releases made by the caller but not yet sent, because
	// sending them while the consumer is active could let the broker push
	// deliveries beyond the bound.
	held []uint64
	// boundAcks holds acks back as well when they would let the broker
	// push deliveries beyond the bound (quorum queues, or kind unknown:
	// returning those would raise their delivery count).
	boundAcks bool
	done      bool
	closed    bool
	// stall overrides defaultStallLimit (tests).
	stall time.Duration
	// timer bounds a receive's wait.
	timer *time.Timer
}

// Next returns the next delivery, io.EOF when the bound is reached or the
// queue stayed empty for Idle.
func (s *Subscription) Next(ctx context.Context) (*broker.Delivery, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("consume queue `%s`: the subscription is closed", s.queue)
	}
	if s.done || s.handed >= s.limit {
		err := s.finishLocked()
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	if n := int64(len(s.unsettled)); n >= s.w.prefetch {
		s.mu.Unlock()
		return nil, fmt.Errorf("consume queue `%s`: all %d deliveries of the prefetch window are unsettled: ack or release some before asking for more", s.queue, n)
	}
	// Acks waiting for a lower delivery still fill the broker's prefetch
	// window: send them now rather than take the silence for an empty queue.
	if int64(len(s.unsettled)+len(s.acks)+len(s.held)) >= s.w.prefetch {
		if err := s.sendAcksLocked(true); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.mu.Unlock()

	d, err := s.receive(ctx, s.idle)
	// Silence is not an empty queue while the queue still holds ready
	// messages (a broker busy persisting, a consumer ahead of us in a
	// single-active-consumer queue): wait on, up to stallLimit, rather than
	// end a move early and call it done.
	for waited := s.idle; err == nil && d == nil && !s.isCancelled(); waited += s.idle {
		ready, _, ierr := s.b.inspect(ctx, s.queue)
		if ierr != nil || ready == 0 {
			break
		}
		if waited >= s.stallLimit() {
			return nil, fmt.Errorf("consume queue `%s`: no delivery for %s although it holds %d ready messages (another consumer may be active, e.g. single active consumer): stop it, or run again later", s.queue, waited.Round(time.Second), ready)
		}
		d, err = s.receive(ctx, s.idle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && d == nil && !s.w.cancelled {
		// Idle: cancel, then hand out what the broker sent before the
		// cancel took effect rather than returning it.
		if err := s.w.cancel(); err != nil {
			return nil, translateErr("consume queue `"+s.queue+"`", err)
		}
		s.mu.Unlock()
		d, err = s.receive(ctx, 0)
		s.mu.Lock()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("consume queue `%s`: %w", s.queue, ctx.Err())
		}
		return nil, translateErr("consume queue `"+s.queue+"`", err)
	}
	if d == nil {
		if err := s.finishLocked(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	s.w.received++
	if why, bad := unreadableMark(d.Headers); bad {
		// Never handed on: its headers are not the message's. It stays
		// unsettled, and Close returns it with the rest, once the
		// consumer is cancelled.
		s.done = true
		if err := s.w.cancel(); err != nil {
			return nil, translateErr("consume queue `"+s.queue+"`", err)
		}
		return nil, unreadableDelivery(s.queue, "consume queue `"+s.queue+"`", why)
	}
	s.handed++
	s.unsettled[d.DeliveryTag] = true
	s.lastTag = max(s.lastTag, d.DeliveryTag)
	return &broker.Delivery{Message: fromDelivery(s.queue, d), Receipt: broker.Receipt{Tag: d.DeliveryTag}}, nil
}

// defaultStallLimit bounds how long Next waits without a delivery while the
// queue holds ready messages.
const defaultStallLimit = time.Minute

func (s *Subscription) stallLimit() time.Duration {
	if s.stall > 0 {
		return s.stall
	}
	return defaultStallLimit
}

func (s *Subscription) isCancelled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.cancelled
}

// receive waits for one delivery: up to idle while the consumer is active,
// and without waiting once it is cancelled (nil when drained).
func (s *Subscription) receive(ctx context.Context, idle time.Duration) (*amqp.Delivery, error) {
	s.mu.Lock()
	cancelled := s.w.cancelled
	s.mu.Unlock()
	got := func(d amqp.Delivery, ok bool) (*amqp.Delivery, error) {
		switch {
		case ok:
			return &d, nil
		case cancelled:
			return nil, nil
		default:
			return nil, s.w.closeErr()
		}
	}
	// A delivery already buffered needs no timer.
	select {
	case d, ok := <-s.w.ds:
		return got(d, ok)
	default:
	}
	var timeout <-chan time.Time
	if !cancelled {
		// One timer for the subscription: Next is never called
		// concurrently.
		if s.timer == nil {
			s.timer = time.NewTimer(idle)
		} else {
			s.timer.Reset(idle)
		}
		defer s.timer.Stop()
		timeout = s.timer.C
	}
	select {
	case d, ok := <-s.w.ds:
		return got(d, ok)
	case <-timeout:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// finishLocked cancels the consumer and sends the held settlements. Any
// delivery that arrives between the last Next and the cancel stays unsettled
// and is returned by Close.
func (s *Subscription) finishLocked() error {
	s.done = true
	if s.w == nil || s.w.cancelled {
		return s.flushLocked()
	}
	if err := s.w.cancel(); err != nil {
		return translateErr("consume queue `"+s.queue+"`", err)
	}
	return s.flushLocked()
}

func (s *Subscription) flushLocked() error {
	for len(s.held) > 0 {
		if err := s.ch.Nack(s.held[0], false, true); err != nil {
			return translateErr("settle deliveries of `"+s.queue+"`", err)
		}
		s.held = s.held[1:]
		s.w.settled++
	}
	return s.sendAcksLocked(false)
}

// sendAcksLocked sends the waiting acks that no unsettled delivery precedes
// as one basic.ack with multiple set (it covers exactly them: every lower
// tag is settled already, and deliveries not yet handed out have higher
// tags), as many as the bound allows while the consumer is active. With
// all, the acks behind an unsettled delivery are then sent one by one.
func (s *Subscription) sendAcksLocked(all bool) error {
	if len(s.acks) == 0 {
		return nil
	}
	low := s.lastTag + 1
	for t := range s.unsettled {
		low = min(low, t)
	}
	for _, t := range s.held {
		low = min(low, t)
	}
	slices.Sort(s.acks)
	n, _ := slices.BinarySearch(s.acks, low)
	allowed := func(n int) int {
		if s.w.cancelled || !s.boundAcks {
			return n
		}
		return int(max(0, min(int64(n), s.w.target-s.w.prefetch-s.w.settled)))
	}
	if n = allowed(n); n > 0 {
		if err := s.ch.Ack(s.acks[n-1], true); err != nil {
			return translateErr("ack deliveries of `"+s.queue+"`", err)
		}
		s.acks = s.acks[n:]
		s.w.settled += int64(n)
	}
	for all && len(s.acks) > 0 && allowed(1) == 1 {
		if err := s.ch.Ack(s.acks[0], false); err != nil {
			return translateErr("ack deliveries of `"+s.queue+"`", err)
		}
		s.acks = s.acks[1:]
		s.w.settled++
	}
	return nil
}

func (s *Subscription) settle(receipts []broker.Receipt, ack bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	what := "ack"
	if !ack {
		what = "release"
	}
	for _, r := range receipts {
		if !s.unsettled[r.Tag] {
			return &broker.Error{Kind: broker.ErrConflict, Op: what + " delivery " + fmt.Sprint(r.Tag) + " of `" + s.queue + "`",
				Msg: "unknown or already settled receipt"}
		}
	}
	if s.closed {
		return &broker.Error{Kind: broker.ErrConflict, Op: what + " deliveries of `" + s.queue + "`",
			Msg: "the subscription is closed: its unsettled deliveries went back to the queue"}
	}
	for _, r := range receipts {
		delete(s.unsettled, r.Tag)
		switch {
		case ack:
			s.acks = append(s.acks, r.Tag)
		case len(s.held) == 0 && s.w.canSettle(int64(len(s.acks))+1):
			if err := s.ch.Nack(r.Tag, false, true); err != nil {
				return translateErr(what+" deliveries of `"+s.queue+"`", err)
			}
			s.w.settled++
		default:
			s.held = append(s.held, r.Tag)
		}
	}
	return s.sendAcksLocked(false)
}

// Ack removes the messages from the queue. Call it only after their copies
// were confirmed by the destination.
func (s *Subscription) Ack(ctx context.Context, receipts ...broker.Receipt) error {
	return s.settle(receipts, true)
}

// Release returns the messages to the queue unchanged (nack with requeue);
// see the quorum caveat on Subscription.
func (s *Subscription) Release(ctx context.Context, receipts ...broker.Receipt) error {
	return s.settle(receipts, false)
}

// Close sends the held settlements and closes the channel, which returns
// every delivery not settled to the queue.
func (s *Subscription) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if s.ch != nil {
		err = s.finishLocked()
		if err == nil {
			err = s.sendAcksLocked(true)
		}
		if err == nil {
			// What is still unsettled goes back with an explicit nack: a
			// closed channel returns it too, but RabbitMQ 4.3 counts that
			// as a failed delivery on a quorum queue, and a nack not.
			err = translateErr("release deliveries of `"+s.queue+"`", returnAll(s.ch))
		}
		if cerr := s.ch.Close(); cerr != nil && !errors.Is(cerr, amqp.ErrClosed) && err == nil {
			err = translateErr("close subscription to `"+s.queue+"`", cerr)
		}
	}
	s.closed = true
	return err
}
