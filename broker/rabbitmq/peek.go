package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Peeker = (*Broker)(nil)

// The peek-safety design is described in the package documentation (doc.go).

const (
	// DefaultMaxUnacked bounds the deliveries a hold peek keeps unacked.
	DefaultMaxUnacked = 5000
	// RotateTailMax is the most messages a rotate peek rotates without
	// visiting them, to keep order after Limit, unless Force is set.
	RotateTailMax = 10000
	// rotateWindow is the number of deliveries a rotation takes at a
	// time; limitedRotateWindow on a quorum queue with a delivery limit,
	// where a lost connection raises the x-delivery-count of every delivery
	// held (rotateWindowFor).
	rotateWindow        = 500
	limitedRotateWindow = 8
	// firstWait bounds the wait for the first delivery of a non-empty queue;
	// idleWait the wait between deliveries before the queue is taken as
	// drained (other consumers took messages, or they expired).
	firstWait = 10 * time.Second
	idleWait  = 1500 * time.Millisecond
)

// peekInfo is what a peek needs to know about the queue before it starts.
type peekInfo struct {
	name  string
	kind  broker.QueueKind
	depth int64 // ready messages (exact, passive declare); streams: message count
	// limited says the quorum queue removes a message returned more than
	// deliveryLimit times (0 included: the first return removes it).
	limited       bool
	deliveryLimit int64
	// requeueFree says the queue is a quorum queue on a server where a
	// requeue does not count towards the delivery limit (RabbitMQ 4.3 and
	// later): a hold read that returns its deliveries by an explicit nack
	// with requeue raises no x-delivery-count, republishes nothing and can
	// drop nothing.
	requeueFree bool
	// window, when set, is the rotation's window instead of
	// rotateWindowFor's.
	window int64
	// bytes is the size of the ready messages' bodies from the management
	// statistics (they may lag); 0 when unknown.
	bytes int64
}

func (b *Broker) peekInfo(ctx context.Context, queue string) (peekInfo, error) {
	op := "peek queue `" + queue + "`"
	var mq mgmtQueue
	err := b.mgmtQueue(ctx, queue, "name,type,arguments,effective_policy_definition,messages,messages_ready,message_bytes_ready", &mq)
	if err != nil {
		if errors.Is(err, broker.ErrNotFound) && !errors.Is(err, errMgmtMissesQueue) {
			return peekInfo{}, b.notFoundQueue(op, queue)
		}
		if errors.Is(err, broker.ErrUnreachable) {
			return peekInfo{}, &broker.Error{Kind: broker.ErrUnreachable, Op: op, Err: err,
				Msg: "the management API is needed to tell the queue's kind and delivery limit, and is unreachable: " + err.Error()}
		}
		return peekInfo{}, translateErr(op, err)
	}
	q, dl := b.toQueue(&mq, b.serverMajor(ctx))
	info := peekInfo{name: queue, kind: q.Kind, limited: dl.Limited, deliveryLimit: dl.Limit,
		requeueFree: q.Kind == broker.KindQuorum && !b.requeueCounts()}
	if mq.MessageBytesReady != nil {
		info.bytes = *mq.MessageBytesReady
	}
	if q.Kind == broker.KindStream {
		if mq.Messages != nil {
			info.depth = *mq.Messages
		} else {
			info.depth = -1 // unknown yet: read until idle
		}
		return info, nil
	}
	n, _, err := b.inspect(ctx, queue)
	if err != nil {
		return peekInfo{}, err
	}
	info.depth = n
	return info, nil
}

// Peek reads messages of queue without removing them, following the
// peek-safety design above.
func (b *Broker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	if opts.Limit < 0 {
		return broker.PeekReport{}, broker.Hintf("peek: %s must be 0 (all) or more, not %d", broker.OptLimit, opts.Limit)
	}
	info, err := b.peekInfo(ctx, queue)
	if err != nil {
		return broker.PeekReport{}, err
	}
	mode := opts.Mode
	if mode == broker.PeekAuto {
		switch info.kind {
		case broker.KindQuorum:
			mode = broker.PeekRotate
			if _, err := holdTarget(info, opts, broker.PeekHold, func() error { return nil }); info.requeueFree && err == nil {
				// Nothing changes but the redelivered flag and
				// x-acquired-count. A read beyond the hold bound rotates.
				mode = broker.PeekHold
			}
		case broker.KindStream:
			mode = broker.PeekStream
		default:
			mode = broker.PeekHold
		}
	}
	if info.kind == broker.KindStream && mode != broker.PeekReceive {
		// Reading a stream never changes it, whatever mode was asked for.
		mode = broker.PeekStream
	}
	if needsWrite(info, mode, opts) {
		if err := b.canWrite(ctx); err != nil {
			var nw *errNoWrite
			switch {
			case !errors.As(err, &nw):
				return broker.PeekReport{Mode: mode}, translateErr("peek queue `"+queue+"`", err)
			case mode == broker.PeekRotate && (info.kind == broker.KindClassic || info.requeueFree || info.kind == broker.KindQuorum && !info.limited && !nw.readOnly):
				// A classic queue, a quorum queue on a server where a
				// requeue does not count, or (for a user without write
				// permission, not in read-only mode, which changes no
				// count) a quorum queue without a delivery limit: a hold
				// read publishes nothing and can drop nothing (on the
				// last, each count goes up by 1, and the report says so).
				// Within the hold bound (holdTarget).
				mode = broker.PeekHold
			default:
				return broker.PeekReport{Mode: mode}, noWriteRefusal(info, mode, nw)
			}
		}
	}
	if opts.Offset != "" && info.kind != broker.KindStream {
		return broker.PeekReport{Mode: mode}, &broker.Error{Kind: broker.ErrUnsupported, Op: "peek queue `" + queue + "`",
			Hint: broker.Hintf("an offset (%s, %s) applies to stream queues only; `%s` is a %s queue", broker.OptOffset, broker.OptSince, queue, info.kind)}
	}
	rep, err := b.peekMode(ctx, info, mode, opts, visit)
	if _, ok := errors.AsType[*unreadableFrame](err); ok {
		return b.showUnreadable(ctx, info, opts, rep, err, visit)
	}
	return rep, err
}

// unreadableAt names, in an error of a message the client could not read,
// where the message is, what the failure changed and what to do about it.
// Deliveries arrive in queue order, but (without the frame guard) the
// client's reader drops those it had not yet handed over when it closes the
// connection: without the
// management API's read (shown), the message comes after the ones read, at
// that position or later.
func unreadableAt(info peekInfo, rep broker.PeekReport, err error, shown *broker.Message, why *broker.Hint) error {
	var be *broker.Error
	if !errors.As(err, &be) {
		return err
	}
	uf, _ := errors.AsType[*unreadableFrame](err)
	held := uf != nil && uf.held
	cost := "classic queues keep their order; the messages only carry the redelivered flag"
	switch {
	case info.kind == broker.KindQuorum && held && info.requeueFree:
		cost = "each went back in its place with an explicit nack, its x-delivery-count unchanged"
	case info.kind == broker.KindQuorum && rep.Mode == broker.PeekRotate:
		cost = fmt.Sprintf("on a quorum queue the x-delivery-count of the at most %d messages held went up by 1", rotateWindowFor(info))
	case info.kind == broker.KindQuorum:
		cost = "on a quorum queue each held message's x-delivery-count went up by 1"
	}
	if rep.Mode == broker.PeekRotate {
		cost += "; no message is in the queue twice: nothing of the window that holds it had been copied"
	}
	where := fmt.Sprintf("a message at position %d or later could not be read (%d were read before the connection closed): %s (%s)", rep.Read+1, rep.Read, be.Msg, cost)
	stopped := "which closed the connection"
	if held {
		where = fmt.Sprintf("the message after the %d read could not be read: %s (%s)", rep.Read, be.Msg, cost)
		stopped = "which stopped at it, the connection kept"
	}
	fix := broker.Hintf("move the queue's messages broker-side without reading them (a server-side redrive runs a shovel)")
	if shown != nil {
		fix = broker.Hintf("take it out by its position without reading it (%s: a discard archives it first, a redrive moves it), or move the queue's messages broker-side (a server-side redrive runs a shovel)", broker.OptPosition.With(shown.Position))
		where = fmt.Sprintf("the message at position %s (ID %s) could not be read by dlq's AMQP client, %s: %s; every message dlq held went back to its queue (%s)", shown.Position, shown.ID, stopped, shown.Unreadable, cost)
	}
	return &broker.Error{Kind: broker.ErrUnsupported, Op: "peek queue `" + info.name + "`", Err: be.Err,
		Hint: broker.Hintf("%s: %s; %s", where, why, fix)}
}

// peekMode runs the peek of info in mode.
func (b *Broker) peekMode(ctx context.Context, info peekInfo, mode broker.PeekMode, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	queue := info.name
	switch mode {
	case broker.PeekHold:
		return b.peekHold(ctx, info, opts, false, visit)
	case broker.PeekRequeue:
		return b.peekHold(ctx, info, opts, true, visit)
	case broker.PeekRotate:
		return b.peekRotate(ctx, info, opts, visit)
	case broker.PeekStream:
		if info.kind != broker.KindStream {
			return broker.PeekReport{Mode: mode}, &broker.Error{Kind: broker.ErrUnsupported, Op: "peek queue `" + queue + "`",
				Hint: broker.Hintf("stream mode reads stream queues only; `%s` is a %s queue: use %s or %s", queue, info.kind, broker.OptMode.With("hold"), broker.OptMode.With("rotate"))}
		}
		return b.peekStream(ctx, info, opts, visit)
	default:
		return broker.PeekReport{Mode: mode}, &broker.Error{Kind: broker.ErrUnsupported, Op: "peek queue `" + queue + "`",
			Msg: fmt.Sprintf("mode %q is not available on RabbitMQ: use hold, rotate, requeue or stream", mode)}
	}
}

// needsWrite reports whether a peek of info in mode publishes: rotate mode
// republishes every message it reads, and a forced hold or requeue of a
// quorum queue with a delivery limit rotates the messages near the limit.
func needsWrite(info peekInfo, mode broker.PeekMode, opts broker.PeekOptions) bool {
	switch mode {
	case broker.PeekRotate:
		return info.depth != 0
	case broker.PeekHold, broker.PeekRequeue:
		return info.kind == broker.KindQuorum && info.limited && !info.requeueFree && opts.Force
	}
	return false
}

// windowedConsumer consumes at most target deliveries from a queue with a
// prefetch window, and never lets the broker deliver more than target: while
// the consumer is active it allows settling only as many deliveries as keep
// settled+prefetch <= target (the broker delivers at most settled+prefetch),
// and the rest are settled after cancel. This is what keeps a peek from
// receiving (and then returning, which on a quorum queue raises the count)
// messages beyond the snapshot, such as its own rotated copies.
type windowedConsumer struct {
	ch    *amqp.Channel
	queue string
	// passUnreadable hands on a delivery the frame guard marked, rather
	// than stopping at it with an error (a stream, whose reads change
	// nothing).
	passUnreadable bool
	tag            string
	ds             <-chan amqp.Delivery
	closed         chan *amqp.Error
	target         int64
	prefetch       int64
	received       int64
	settled        int64
	cancelled      bool
}

func newTag(prefix string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return prefix + "-" + hex.EncodeToString(r[:])
}

func startWindowed(ch *amqp.Channel, queue string, target, window int64, args amqp.Table) (*windowedConsumer, error) {
	prefetch := window
	if target < prefetch {
		prefetch = target
	}
	if prefetch < 1 {
		prefetch = 1
	}
	if prefetch > 65535 {
		prefetch = 65535
	}
	if err := ch.Qos(int(prefetch), 0, false); err != nil {
		return nil, err
	}
	w := &windowedConsumer{ch: ch, queue: queue, tag: newTag("dlq-peek"), target: target, prefetch: prefetch,
		closed: ch.NotifyClose(make(chan *amqp.Error, 1))}
	ds, err := ch.Consume(queue, w.tag, false, false, false, false, args)
	if err != nil {
		return nil, err
	}
	w.ds = ds
	return w, nil
}

// next returns the next delivery, or nil when the target is reached, when
// nothing arrives within wait, or after cancel once the buffered deliveries
// are drained.
func (w *windowedConsumer) next(ctx context.Context, wait time.Duration) (*amqp.Delivery, error) {
	if w.received >= w.target && !w.cancelled {
		return nil, nil
	}
	var timeout <-chan time.Time
	if !w.cancelled {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case d, ok := <-w.ds:
		if !ok {
			if w.cancelled {
				return nil, nil
			}
			return nil, w.closeErr()
		}
		w.received++
		if why, bad := unreadableMark(d.Headers); bad && !w.passUnreadable {
			// It stays unsettled, and the caller returns it with the
			// rest; first the consumer stops, or the broker would deliver
			// the returned messages again at once (and on RabbitMQ 4.3
			// count them as failed when the channel closes).
			if err := w.cancel(); err != nil {
				return nil, err
			}
			return nil, unreadableDelivery(w.queue, "read queue `"+w.queue+"`", why)
		}
		return &d, nil
	case <-timeout:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *windowedConsumer) closeErr() error {
	select {
	case e := <-w.closed:
		if e != nil {
			return e
		}
	default:
	}
	return amqp.ErrClosed
}

// canSettle reports whether n more deliveries may be settled now.
func (w *windowedConsumer) canSettle(n int64) bool {
	return w.cancelled || w.settled+n+w.prefetch <= w.target
}

// cancelAndDrain cancels the consumer and hands each delivery the broker
// sent before the cancel took effect to each (nil: they stay unsettled).
func (w *windowedConsumer) cancelAndDrain(ctx context.Context, each func(*amqp.Delivery) error) error {
	if err := w.cancel(); err != nil {
		return err
	}
	for {
		d, err := w.next(ctx, 0)
		if err != nil || d == nil {
			return err
		}
		if each != nil {
			if err := each(d); err != nil {
				return err
			}
		}
	}
}

// cancel stops deliveries; next then drains what the broker sent before the
// cancel took effect.
func (w *windowedConsumer) cancel() error {
	if w.cancelled {
		return nil
	}
	w.cancelled = true
	return w.ch.Cancel(w.tag, false)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// awaitReturned waits (up to returnWait) until the queue holds at least want
// ready messages again. RabbitMQ requeues a closed channel's deliveries
// asynchronously, after the close is confirmed: without this wait a command
// run right after a peek (a script's `dlq redrive`) could count the queue
// while some peeked messages are still on their way back, and stop short.
// Other consumers may take messages meanwhile, so it gives up quietly.
func (b *Broker) awaitReturned(ctx context.Context, queue string, want int64) {
	_, _ = b.pollQueue(ctx, queue, returnWait, func(ready, _ int64) bool { return ready >= want })
}

// pollQueue asks the queue itself for its ready messages and consumers
// every 10 ms until done says so, wait has passed, or ctx ends, and returns
// the last ready count.
func (b *Broker) pollQueue(ctx context.Context, queue string, wait time.Duration, done func(ready, consumers int64) bool) (int64, error) {
	deadline := time.Now().Add(wait)
	for {
		n, consumers, err := b.inspect(ctx, queue)
		if err != nil || done(n, consumers) || time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// returnWait bounds awaitReturned.
const returnWait = 2 * time.Second
