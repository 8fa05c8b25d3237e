package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
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
	info := peekInfo{name: queue, kind: q.Kind, limited: dl.limited, deliveryLimit: dl.limit,
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
// Deliveries arrive in queue order, but the client's reader drops those it
// had not yet handed over when it closes the connection: without the
// management API's read (shown), the message comes after the ones read, at
// that position or later.
func unreadableAt(info peekInfo, rep broker.PeekReport, err error, shown *broker.Message, why *broker.Hint) error {
	var be *broker.Error
	if !errors.As(err, &be) {
		return err
	}
	cost := "classic queues keep their order; the messages only carry the redelivered flag"
	if info.kind == broker.KindQuorum {
		cost = "on a quorum queue each held message's x-delivery-count went up by 1"
		if rep.Mode == broker.PeekRotate {
			cost = fmt.Sprintf("on a quorum queue the x-delivery-count of the at most %d messages held went up by 1", rotateWindowFor(info))
		}
	}
	if rep.Mode == broker.PeekRotate {
		cost += "; no message is in the queue twice: nothing of the window that holds it had been copied"
	}
	where := fmt.Sprintf("a message at position %d or later could not be read (%d were read before the connection closed): %s (%s)", rep.Read+1, rep.Read, be.Msg, cost)
	fix := broker.Hintf("move the queue's messages broker-side without reading them (a server-side redrive runs a shovel)")
	if shown != nil {
		fix = broker.Hintf("take it out by its position without reading it (%s: a discard archives it first, a redrive moves it), or move the queue's messages broker-side (a server-side redrive runs a shovel)", broker.OptPosition.With(shown.Position))
		where = fmt.Sprintf("the message at position %s (ID %s) could not be read by dlq's AMQP client, which closed the connection: %s; every message dlq held went back to its queue (%s)", shown.Position, shown.ID, shown.Unreadable, cost)
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
	ch        *amqp.Channel
	tag       string
	ds        <-chan amqp.Delivery
	closed    chan *amqp.Error
	target    int64
	prefetch  int64
	received  int64
	settled   int64
	cancelled bool
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
	w := &windowedConsumer{ch: ch, tag: newTag("dlq-peek"), target: target, prefetch: prefetch,
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

// holdTarget checks the hold bound and returns how many messages to take.
// Past the bound it names what the user can do instead; canRotate (asked
// only then) says whether rotate mode, which needs to write, is one of them.
func holdTarget(info peekInfo, opts broker.PeekOptions, mode broker.PeekMode, canRotate func() error) (int64, error) {
	maxUnacked := int64(opts.MaxUnacked)
	if maxUnacked <= 0 {
		maxUnacked = DefaultMaxUnacked
	}
	if maxUnacked > 65535 {
		maxUnacked = 65535 // the largest prefetch AMQP can express
	}
	want := int64(opts.Limit)
	if want == 0 || want > info.depth {
		want = info.depth
	}
	if want <= maxUnacked {
		return want, nil
	}
	what := fmt.Sprintf("reading %d messages", want)
	if opts.Limit == 0 {
		what = fmt.Sprintf("reading all %d messages", want)
	}
	op := "peek queue `" + info.name + "`"
	var nw *errNoWrite
	if err := canRotate(); err != nil && !errors.As(err, &nw) {
		return 0, translateErr(op, err)
	}
	if nw == nil {
		return 0, &broker.Error{Kind: broker.ErrUnsafe, Op: op,
			Hint: broker.Hintf("%s in hold mode would keep them all unacknowledged at once (the bound is %d, %s): use %s to read any number with a bounded window, order kept, or a smaller %s", what, maxUnacked, broker.OptMaxUnacked, broker.OptMode.With("rotate"), broker.OptLimit)}
	}
	// Rotate mode republishes, and this user (or read-only mode) may not:
	// what is left is a smaller read, a larger bound, or another user.
	other := broker.Hintf("peek as a user with write permission on `amq.default` in vhost `%s`, who reads any number by rotating (%s)", nw.vhost, broker.OptMode.With("rotate"))
	if nw.readOnly {
		other = broker.Hintf("peek without read-only mode, which reads any number by rotating (%s)", broker.OptMode.With("rotate"))
	}
	raise := broker.Hintf("")
	if want <= 65535 {
		cost := fmt.Sprintf("all %d are then held at once", want)
		if info.bytes > 0 && info.depth > 0 {
			cost += fmt.Sprintf(", about %s of message bodies that the broker keeps in memory and sends to dlq", human.Bytes(info.bytes/info.depth*want))
		}
		raise = broker.Hintf(", raise the bound with %s (%s)", broker.OptMaxUnacked.With(strconv.FormatInt(want, 10)), cost)
	}
	return 0, &broker.Error{Kind: broker.ErrUnsafe, Op: op,
		Hint: broker.Hintf("nothing was read or changed: %s in hold mode would keep them all unacknowledged at once (the bound is %d, %s), and %s, so it cannot rotate instead: read the first %d with %s%s, or %s",
			what, maxUnacked, broker.OptMaxUnacked, nw, maxUnacked, broker.OptLimit.With(strconv.FormatInt(maxUnacked, 10)), raise, other)}
}

// quorumRefusal is the ErrUnsafe for returning messages to a quorum queue
// with a delivery limit.
func quorumRefusal(info peekInfo, mode broker.PeekMode) error {
	return &broker.Error{Kind: broker.ErrUnsafe, Op: "peek queue `" + info.name + "`",
		Hint: broker.Hintf("quorum queue `%s` has a delivery limit of %d: %s mode returns every peeked message, which raises its x-delivery-count and moves it to the back, and a few peeks dead-letter it away; use %s (the default: republishes each message to the same queue with publisher confirms before acking it, order kept, no count raised), or %s to %s anyway (messages within 2 of the limit are then rotated instead of returned)",
			info.name, info.deliveryLimit, mode, broker.OptMode.With("rotate"), broker.OptForce, mode)}
}

// peekHold implements hold mode (all deliveries held, returned at the end by
// closing the channel) and, with requeue, requeue mode (all held, then each
// returned with an explicit nack-requeue after the consumer is cancelled:
// returning one while consuming gets it delivered again at once, on classic
// and on quorum queues alike). On quorum queues with a delivery limit it needs
// Force and rescues messages near their limit by rotating them.
func (b *Broker) peekHold(ctx context.Context, info peekInfo, opts broker.PeekOptions, requeue bool, visit func(*broker.Message) error) (broker.PeekReport, error) {
	mode := broker.PeekHold
	if requeue {
		mode = broker.PeekRequeue
	}
	rep := broker.PeekReport{Mode: mode}
	// A requeue-free quorum queue needs neither: a nack with requeue
	// brings no message nearer its limit.
	quorumLimit := info.kind == broker.KindQuorum && info.limited && !info.requeueFree
	if quorumLimit && !opts.Force {
		return rep, quorumRefusal(info, mode)
	}
	target, err := holdTarget(info, opts, mode, func() error { return b.canWrite(ctx) })
	if err != nil || target == 0 {
		return rep, err
	}
	window := target
	var (
		rescued  int64
		returned int64
		visitErr error
	)
	op := "peek queue `" + info.name + "`"
	err = b.withChannel(ctx, func(ch *amqp.Channel) (err error) {
		defer func() {
			if err != nil {
				_ = returnAll(ch)
			}
		}()
		var rot *rotator
		if quorumLimit {
			var err error
			if rot, err = b.newRotator(ctx, info.name, 64); err != nil {
				return err
			}
			defer rot.close()
		}
		w, err := startWindowed(ch, info.name, target, window, nil)
		if err != nil {
			return err
		}
		// requeue: the nacks, sent after the cancel (a message returned
		// while the consumer is active would be delivered again at once).
		var deferred []uint64
		var rescueTags []uint64
		visiting := true
		wait := firstWait
		handle := func(d *amqp.Delivery) error {
			if visiting {
				m := fromDelivery(info.name, d)
				rep.Read++
				if err := visit(m); err != nil {
					visiting = false
					if !errors.Is(err, broker.ErrStop) {
						visitErr = err
					}
				}
			}
			if quorumLimit {
				if n, _ := toInt64(d.Headers["x-delivery-count"]); n+2 > info.deliveryLimit {
					// One more return would bring it within 1 of its limit
					// (or over it): rotate it instead.
					if err := rot.publish(d); err != nil {
						return err
					}
					rescueTags = append(rescueTags, d.DeliveryTag)
					rescued++
					return nil
				}
			}
			if requeue {
				deferred = append(deferred, d.DeliveryTag)
			}
			return nil
		}
		for visiting {
			d, err := w.next(ctx, wait)
			if err != nil {
				return err
			}
			if d == nil {
				break
			}
			wait = idleWait
			if err := handle(d); err != nil {
				return err
			}
		}
		if err := w.cancel(); err != nil {
			return err
		}
		for {
			d, err := w.next(ctx, 0)
			if err != nil {
				return err
			}
			if d == nil {
				break
			}
			// Delivered before the cancel took effect: handled like the
			// others but not visited (visiting stopped).
			if err := handle(d); err != nil {
				return err
			}
		}
		if rot != nil {
			// Rescued messages: ack only what was confirmed.
			if err := rot.waitAll(ctx); err != nil {
				return err
			}
			for _, tag := range rescueTags {
				if err := ch.Ack(tag, false); err != nil {
					return err
				}
			}
		}
		for _, tag := range deferred {
			returned++
			if err := ch.Nack(tag, false, true); err != nil {
				return err
			}
		}
		if !requeue {
			returned = w.received - rescued
			// Every held delivery back, explicitly: a nack with requeue
			// (each in its place on a classic queue). A closed channel
			// would return them too, but RabbitMQ 4.3 counts that as a
			// failed delivery on a quorum queue, and a nack not.
			if err := returnAll(ch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, translateErr(op, err)
	}
	if returned+rescued > 0 {
		b.awaitReturned(ctx, info.name, info.depth)
	}
	var changed []string
	if returned > 0 {
		if info.requeueFree {
			// Measured on 4.3.6: each returned message keeps its place,
			// its x-delivery-count and its exchange and routing key.
			changed = append(changed, plural(returned, "message now carries", "messages now carry")+" the redelivered flag and x-acquired-count +1 (x-delivery-count unchanged, each in its place)")
		} else if info.kind == broker.KindQuorum && requeue {
			changed = append(changed, plural(returned, "message", "messages")+" moved to the back of the queue with x-delivery-count +1 and the redelivered flag")
		} else if info.kind == broker.KindQuorum {
			changed = append(changed, plural(returned, "message", "messages")+" returned with x-delivery-count +1 and the redelivered flag (some RabbitMQ versions also move them to the back)")
		} else {
			changed = append(changed, plural(returned, "message now carries", "messages now carry")+" the redelivered flag")
		}
	}
	if rescued > 0 {
		changed = append(changed, plural(rescued, "message", "messages")+" near the delivery limit rotated to the back instead (count reset)")
	}
	rep.Changed = strings.Join(changed, "; ")
	return rep, visitErr
}

// returnAll returns every delivery still unsettled on ch to its queue with
// one basic.nack (delivery tag 0, multiple, requeue: all of them), rather
// than leaving it to the channel's close. It does nothing on a channel that
// is already closed.
func returnAll(ch *amqp.Channel) error {
	if ch.IsClosed() {
		return nil
	}
	return ch.Nack(0, true, true)
}

// rotator republishes deliveries to the back of their queue with publisher
// confirms, on a dedicated confirm-mode channel.
type rotator struct {
	b        *Broker
	queue    string
	ch       *amqp.Channel
	confirms chan amqp.Confirmation
	returns  chan amqp.Return
	closed   chan *amqp.Error
	window   int
	// published and confirmed count publishes; failed is set when the
	// broker refused (nack) or returned a copy: nothing more may be acked.
	published, confirmed uint64
	// safe counts the copies confirmed (in publish order) before any
	// failure: their originals may be acked.
	safe   uint64
	failed error
}

func (b *Broker) newRotator(ctx context.Context, queue string, window int) (*rotator, error) {
	ch, err := b.channel(ctx)
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	r := &rotator{b: b, queue: queue, ch: ch, window: window,
		confirms: ch.NotifyPublish(make(chan amqp.Confirmation, window+1)),
		returns:  ch.NotifyReturn(make(chan amqp.Return, window+1)),
		closed:   ch.NotifyClose(make(chan *amqp.Error, 1)),
	}
	return r, nil
}

func (r *rotator) close() { _ = r.ch.Close() }

// copyOf is the publishing that puts d back at the end of its queue:
// everything kept but the broker's counts, x-delivery-count and
// x-acquired-count (the copy is a new message, delivered 0 times).
func (r *rotator) copyOf(d *amqp.Delivery) amqp.Publishing {
	h := d.Headers
	_, dc := h["x-delivery-count"]
	_, ac := h["x-acquired-count"]
	if dc || ac {
		h = make(amqp.Table, len(d.Headers))
		for k, v := range d.Headers {
			if k != "x-delivery-count" && k != "x-acquired-count" {
				h[k] = v
			}
		}
	}
	p := amqp.Publishing{
		Headers: h, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: d.DeliveryMode,
		Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo, Expiration: d.Expiration,
		MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, AppId: d.AppId, Body: d.Body,
	}
	if d.UserId == r.b.user {
		p.UserId = d.UserId
	}
	if p.DeliveryMode == 0 {
		p.DeliveryMode = amqp.Transient
	}
	return p
}

// publish sends the copy of d, first waiting while a full window of copies
// is unconfirmed.
func (r *rotator) publish(d *amqp.Delivery) error {
	for r.published-r.confirmed >= uint64(r.window) {
		if _, err := r.awaitOne(context.Background()); err != nil {
			return err
		}
	}
	if err := r.ch.Publish("", r.queue, true, false, r.copyOf(d)); err != nil {
		return err
	}
	r.published++
	return nil
}

// awaitOne waits for the next confirm (in publish order) and reports
// whether that copy is safely in the queue.
func (r *rotator) awaitOne(ctx context.Context) (bool, error) {
	select {
	case c, ok := <-r.confirms:
		if !ok {
			return false, r.closeErr()
		}
		r.confirmed++
		// A return for this copy arrives before its confirm.
		select {
		case ret := <-r.returns:
			r.failed = &broker.Error{Kind: broker.ErrUnroutable, Op: "rotate queue `" + r.queue + "`",
				Msg: fmt.Sprintf("the broker returned a copy (%d %s): the queue may have been deleted; the original was left in place", ret.ReplyCode, ret.ReplyText)}
		default:
		}
		if !c.Ack && r.failed == nil {
			r.failed = &broker.Error{Kind: broker.ErrConflict, Op: "rotate queue `" + r.queue + "`",
				Msg: "the broker refused a copy (nack: queue full with overflow reject-publish, or an internal error); the original was left in place"}
		}
		if r.failed != nil {
			return false, nil
		}
		r.safe++
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (r *rotator) closeErr() error {
	select {
	case e := <-r.closed:
		if e != nil {
			return e
		}
	default:
	}
	return amqp.ErrClosed
}

// drain takes the confirms that have already arrived, without waiting.
func (r *rotator) drain(ctx context.Context) error {
	for r.confirmed < r.published && len(r.confirms) > 0 {
		if _, err := r.awaitOne(ctx); err != nil {
			return err
		}
	}
	return r.failed
}

// waitAll waits for every outstanding confirm; an error means some copies
// were not confirmed, so their originals must not be acked.
func (r *rotator) waitAll(ctx context.Context) error {
	for r.confirmed < r.published {
		if _, err := r.awaitOne(ctx); err != nil {
			return err
		}
	}
	return r.failed
}

// rotateWindowFor is the window of a rotation of info: small on a quorum
// queue with a delivery limit, so that a connection lost at a message the
// client cannot read returns few deliveries, each with x-delivery-count +1.
func rotateWindowFor(info peekInfo) int64 {
	if info.window > 0 {
		return info.window
	}
	if info.kind == broker.KindQuorum && info.limited {
		return limitedRotateWindow
	}
	return rotateWindow
}

// peekRotate implements rotate mode (see the package's peek-safety notes).
// rotatedEnvelope says exactly what a rotation changed on each rotated
// message (see `dlq help peek-safety`); dead says that some of them carry
// x-death, which still records where they died; acquired that some carried
// x-acquired-count (RabbitMQ 4.3), which the copy drops.
func rotatedEnvelope(queue string, dead, acquired bool) string {
	note := ""
	if dead {
		note = " (x-death still records where it died)"
	}
	counts := "its redelivered flag and x-delivery-count cleared"
	if acquired {
		counts = "its redelivered flag, x-delivery-count and x-acquired-count cleared"
	}
	return fmt.Sprintf("each now has exchange \"\" and routing key `%s`%s, %s, and its per-message TTL started again", queue, note, counts)
}

func (b *Broker) peekRotate(ctx context.Context, info peekInfo, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	rep := broker.PeekReport{Mode: broker.PeekRotate}
	op := "peek queue `" + info.name + "`"
	if info.depth == 0 {
		return rep, nil
	}
	visitLimit := int64(opts.Limit)
	if visitLimit == 0 || visitLimit > info.depth {
		visitLimit = info.depth
	}
	target := info.depth
	partial := false
	if tail := info.depth - visitLimit; tail > 0 {
		if opts.Force {
			target, partial = visitLimit, true
		} else if tail > RotateTailMax {
			return rep, &broker.Error{Kind: broker.ErrUnsafe, Op: op,
				Hint: broker.Hintf("rotate mode keeps the queue's order by rotating every message it holds; reading %d of %d messages would rotate %d more without showing them: read them all with %s, or pass %s to rotate only the first %d (they then move to the back of the queue)",
					visitLimit, info.depth, tail, broker.OptLimit.With("0"), broker.OptForce, visitLimit)}
		}
	}
	var (
		rotated   int64
		visitErr  error
		cancelled bool
		dead      bool // some rotated message carries x-death
		acquired  bool // some rotated message carries x-acquired-count
	)
	// Finishing what was taken must not depend on ctx: the originals are
	// acked only after their copies are confirmed, whatever happens.
	work := context.WithoutCancel(ctx)
	window := rotateWindowFor(info)
	err := b.withChannel(work, func(ch *amqp.Channel) (err error) {
		defer func() {
			if err != nil {
				// What is unsettled goes back explicitly (see
				// returnAll); no copy of it was published.
				_ = returnAll(ch)
			}
		}()
		rot, err := b.newRotator(work, info.name, int(window))
		if err != nil {
			return err
		}
		defer rot.close()
		visiting := true
		wait := firstWait
		// rotateBatch publishes the copies of a whole window, waits for
		// every confirm, and acks the originals whose copies are confirmed.
		// Nothing of a window is published before all of it was received:
		// a delivery the client cannot read closes the connection while
		// it is being received, and then no copy of its window exists, so
		// every message is in the queue once (the copies of the windows
		// before are confirmed and their originals acked).
		rotateBatch := func(batch []*amqp.Delivery) error {
			if len(batch) == 0 {
				return nil
			}
			safeBefore := rot.safe
			for _, d := range batch {
				if err := rot.publish(d); err != nil {
					return err
				}
				if _, ok := d.Headers["x-death"]; ok {
					dead = true
				}
				if _, ok := d.Headers["x-acquired-count"]; ok {
					acquired = true
				}
			}
			werr := rot.waitAll(work)
			if n := int64(rot.safe - safeBefore); n > 0 {
				if err := ch.Ack(batch[n-1].DeliveryTag, true); err != nil {
					return err
				}
				rotated += n
			}
			return werr
		}
		visitOne := func(d *amqp.Delivery) {
			if !visiting {
				return
			}
			rep.Read++
			if err := visit(fromDelivery(info.name, d)); err != nil {
				if !errors.Is(err, broker.ErrStop) {
					visitErr = err
				}
				visiting = false
			} else if rep.Read >= visitLimit {
				visiting = false
			}
		}
		// Each consumer takes whole windows: first as many as fit in what
		// is left, then one of the rest. The broker delivers at most a
		// window beyond what was acked, and a consumer never receives past
		// its target (the copies at the back of the queue); its last
		// window is acked after the cancel.
		left := target
		for left > 0 && !cancelled && !(partial && !visiting) {
			size, n := window, left/window*window
			if n == 0 {
				size, n = left, left
			}
			w, err := startWindowed(ch, info.name, n, size, nil)
			if err != nil {
				return err
			}
			var got int64 // settled by this consumer
			drained := false
			for !drained {
				var batch []*amqp.Delivery
				for int64(len(batch)) < size && w.received < n {
					if partial && !visiting {
						break
					}
					d, err := w.next(ctx, wait)
					if err != nil {
						if ctx.Err() != nil {
							cancelled = true
							break
						}
						return err
					}
					if d == nil {
						drained = true // others took messages, or they expired
						break
					}
					wait = idleWait
					visitOne(d)
					batch = append(batch, d)
				}
				if w.received >= n || drained || cancelled || partial && !visiting {
					// The consumer's last window: cancel, then take what
					// the broker sent before the cancel took effect.
					if err := w.cancel(); err != nil {
						return err
					}
					for {
						d, err := w.next(work, 0)
						if err != nil {
							return err
						}
						if d == nil {
							break
						}
						visiting = false
						batch = append(batch, d)
					}
					drained = true
				}
				if err := rotateBatch(batch); err != nil {
					return err
				}
				got += int64(len(batch))
				w.settled = got
			}
			left -= got
			if got < n {
				break // the queue held fewer than the snapshot said
			}
		}
		return nil
	})
	switch {
	case partial:
		rep.Changed = fmt.Sprintf("rotated %s to the back of the queue (forced): they now come after the other %d; %s", plural(rotated, "message", "messages"), info.depth-rotated, rotatedEnvelope(info.name, dead, acquired))
	case cancelled || err != nil:
		if rotated > 0 {
			rep.Changed = fmt.Sprintf("interrupted: rotated %s to the back of the queue before stopping, so they now come after the rest; none lost; %s", plural(rotated, "message", "messages"), rotatedEnvelope(info.name, dead, acquired))
		}
	case rotated > 0:
		rep.Changed = fmt.Sprintf("rotated %s to the back of the queue; order kept; %s", plural(rotated, "message", "messages"), rotatedEnvelope(info.name, dead, acquired))
	}
	if err != nil {
		return rep, translateErr(op, err)
	}
	if cancelled {
		return rep, fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return rep, visitErr
}

// streamOffset parses a stream offset: first, last, next, an offset number,
// an RFC 3339 time, or a Go duration (2h, 30m) meaning that long before now.
func streamOffset(s string, now time.Time) (any, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "first":
		return "first", nil
	case "last":
		return "last", nil
	case "next":
		return "next", nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return nil, broker.Hintf("stream offset %d is negative: check %s", n, broker.OptOffset)
		}
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return nil, broker.Hintf("stream offset %q: want first, last, next, an offset number, an RFC 3339 time (2024-05-01T10:00:00Z) or a duration such as 2h: check %s/%s", s, broker.OptOffset, broker.OptSince)
}

// streamFirstOffset is the offset of the oldest message the stream still
// holds (retention may have removed the ones before), or -1 when empty.
func (b *Broker) streamFirstOffset(ctx context.Context, queue string) (int64, error) {
	first := int64(-1)
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		w, err := startWindowed(ch, queue, 1, 1, amqp.Table{"x-stream-offset": "first"})
		if err != nil {
			return err
		}
		d, err := w.next(ctx, idleWait)
		if err != nil || d == nil {
			return err
		}
		if n, ok := toInt64(d.Headers["x-stream-offset"]); ok {
			first = n
		}
		return nil
	})
	return first, err
}

// peekStream reads a stream from an offset without changing it.
func (b *Broker) peekStream(ctx context.Context, info peekInfo, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	rep := broker.PeekReport{Mode: broker.PeekStream}
	op := "peek stream `" + info.name + "`"
	off, err := streamOffset(opts.Offset, time.Now())
	if err != nil {
		return rep, err
	}
	if info.depth == 0 {
		return rep, nil
	}
	// The last offset, so that the walk ends at the end of the stream:
	// first offset + message count - 1. The count comes from the management
	// statistics and may lag by a statistics interval, so after the end a
	// short grace reads what has just arrived; an idle timeout covers a
	// count that is unknown or too high.
	end := int64(-1)
	if info.depth > 0 && off != "next" {
		first, err := b.streamFirstOffset(ctx, info.name)
		if err != nil {
			return rep, translateErr(op, err)
		}
		if first < 0 {
			return rep, nil
		}
		end = first + info.depth - 1
		if n, ok := off.(int64); ok && n > end {
			// Past the end: nothing to read (yet).
			return rep, nil
		}
	}
	limit := int64(opts.Limit)
	target := limit
	if target == 0 {
		target = 1 << 62
	}
	err = b.withChannel(ctx, func(ch *amqp.Channel) error {
		w, err := startWindowed(ch, info.name, target, 1000, amqp.Table{"x-stream-offset": off})
		if err != nil {
			return err
		}
		// A stream delivers from its segments at once; a time offset past
		// the last message, or a count that is unknown, only has the idle
		// timeout to end on.
		wait := 3 * time.Second
		if _, isTime := off.(time.Time); isTime || end < 0 {
			wait = idleWait
		}
		for {
			d, err := w.next(ctx, wait)
			if err != nil {
				return err
			}
			if d == nil {
				return nil
			}
			// On a stream an ack only grants the consumer credit.
			if err := ch.Ack(d.DeliveryTag, false); err != nil {
				return err
			}
			m := fromDelivery(info.name, d)
			rep.Read++
			if err := visit(m); err != nil {
				if errors.Is(err, broker.ErrStop) {
					return nil
				}
				return err
			}
			wait = idleWait
			if n, ok := toInt64(d.Headers["x-stream-offset"]); ok && end >= 0 && n >= end {
				wait = 100 * time.Millisecond
			}
		}
	})
	if err != nil {
		var be *broker.Error
		if errors.As(err, &be) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return rep, translateErr(op, err)
		}
		return rep, err
	}
	return rep, nil
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
