package rabbitmq

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// rotator republishes deliveries to the back of their queue with publisher
// confirms, on a dedicated confirm-mode channel.
type rotator struct {
	*confirmChannel
	b      *Broker
	queue  string
	window int
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
	cc, err := confirmMode(ch, window+1, window+1)
	if err != nil {
		return nil, err
	}
	return &rotator{confirmChannel: cc, b: b, queue: queue, window: window}, nil
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
		// a delivery the client cannot read ends the read while its window
		// is being received, and then no copy of that window exists, so
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
					if err := w.cancelAndDrain(work, func(d *amqp.Delivery) error {
						visiting = false
						batch = append(batch, d)
						return nil
					}); err != nil {
						return err
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
