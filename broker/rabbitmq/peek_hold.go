package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// holdTarget checks the hold bound and returns how many messages to take.
// Past the bound it names what the user can do instead; canRotate (asked
// only then) says whether rotate mode, which needs to write, is one of them.
func holdTarget(info peekInfo, opts broker.PeekOptions, mode broker.PeekMode, canRotate func() error) (int64, error) {
	maxUnacked := holdBound(opts)
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

// peekHold implements hold mode (all deliveries held, returned at the end
// with one explicit nack) and, with requeue, requeue mode (all held, then
// each returned with an explicit nack-requeue after the consumer is
// cancelled: returning one while consuming gets it delivered again at
// once, on classic and on quorum queues alike). On quorum queues with a
// delivery limit it needs Force and rescues messages near their limit by
// rotating them.
//
// A quorum queue of RabbitMQ 4.3 keeps the messages returned to it in a
// list of their own that it delivers before the others, and a return goes
// to the end of that list: a read of the first k messages, returned, puts
// them behind the other messages returned earlier (by an earlier, longer
// read, say). Measured on 4.3.6: after a peek of 10 messages, a peek of 3
// moved those 3 behind the other 7. So there the hold goes on past what is
// shown until it holds a delivery that was never delivered before (every
// message returned earlier came before it) or the whole queue, in windows
// that double, up to the hold bound; the nack then returns everything
// held, in order, to a list that holds nothing else.
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
	bound := holdBound(opts)
	var (
		rescued  int64
		returned int64
		held     int64 // deliveries received, all consumers
		visitErr error
		marked   string // why the guard marked the first unreadable delivery
		// covered: everything held can go back without passing a message
		// returned earlier (see above); short of it at the bound, uncovered.
		covered   = !info.requeueFree
		uncovered bool
	)
	op := "peek queue `" + info.name + "`"
	// ends are the last delivery tags of each consumer's deliveries: one
	// nack for all of them would let RabbitMQ 4.3 return the consumers'
	// deliveries in any order, so each consumer's go back in turn.
	var ends []uint64
	err = b.withChannel(ctx, func(ch *amqp.Channel) (err error) {
		defer func() {
			if err != nil {
				_ = returnInTurn(ch, ends)
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
		// requeue: the nacks, sent after the cancel (a message returned
		// while the consumer is active would be delivered again at once).
		var deferred []uint64
		var rescueTags []uint64
		visiting := true
		wait := firstWait
		handle := func(d *amqp.Delivery) error {
			held++
			if !d.Redelivered {
				covered = true
			}
			why, bad := unreadableMark(d.Headers)
			if bad && visiting {
				// Shown through the management API afterwards: the
				// reads stop here, the hold goes on as it must. (Past
				// what is shown, it is only held.)
				marked, visiting = why, false
			}
			if visiting {
				m := fromDelivery(info.name, d)
				rep.Read++
				if err := visit(m); err != nil {
					visiting = false
					if !errors.Is(err, broker.ErrStop) {
						visitErr = err
					}
				} else if rep.Read >= target {
					visiting = false
				}
			}
			if quorumLimit && !bad {
				if n, _ := rabbitrules.Int(d.Headers["x-delivery-count"]); n+2 > info.deliveryLimit {
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
			// Returned, not rescued (acknowledged).
			ends[len(ends)-1] = d.DeliveryTag
			if requeue {
				deferred = append(deferred, d.DeliveryTag)
			}
			return nil
		}
		// One consumer a window; the deliveries of a cancelled one stay
		// held (unacknowledged) while the next takes the messages after
		// them. One more than is shown tells whether the hold covers.
		size := target
		if !covered && size < info.depth {
			size++
		}
		for {
			w, err := startWindowed(ch, info.name, size, size, nil)
			if err != nil {
				return err
			}
			w.passUnreadable = true
			ends = append(ends, 0)
			for visiting || !covered {
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
			dry := w.received < size
			// Delivered before the cancel took effect: handled like the
			// others but not visited (visiting stopped).
			if err := w.cancelAndDrain(ctx, handle); err != nil {
				return err
			}
			if covered || dry || held >= info.depth {
				break
			}
			if held >= bound {
				uncovered = true
				break
			}
			size = min(2*size, bound-held)
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
			returned = held - rescued
			// Every held delivery back, explicitly: a nack with requeue
			// (each in its place on a classic queue). A closed channel
			// would return them too, but RabbitMQ 4.3 counts that as a
			// failed delivery on a quorum queue, and a nack not.
			if err := returnInTurn(ch, ends); err != nil {
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
		switch {
		case info.requeueFree && uncovered:
			changed = append(changed, fmt.Sprintf("%s the redelivered flag and x-acquired-count +1 (x-delivery-count unchanged), and went back behind messages returned to the queue earlier, which RabbitMQ 4.3 delivers first: %d were held, the bound (%s); a larger bound keeps the order",
				plural(returned, "message now carries", "messages now carry"), held, broker.OptMaxUnacked))
		case info.requeueFree:
			// Measured on 4.3.6: each returned message keeps its place,
			// its x-delivery-count and its exchange and routing key.
			changed = append(changed, plural(returned, "message now carries", "messages now carry")+" the redelivered flag and x-acquired-count +1 (x-delivery-count unchanged, each in its place)")
		case info.kind == broker.KindQuorum && requeue:
			changed = append(changed, plural(returned, "message", "messages")+" moved to the back of the queue with x-delivery-count +1 and the redelivered flag")
		case info.kind == broker.KindQuorum:
			changed = append(changed, plural(returned, "message", "messages")+" returned with x-delivery-count +1 and the redelivered flag (some RabbitMQ versions also move them to the back)")
		default:
			changed = append(changed, plural(returned, "message now carries", "messages now carry")+" the redelivered flag")
		}
	}
	if rescued > 0 {
		changed = append(changed, plural(rescued, "message", "messages")+" near the delivery limit rotated to the back instead (count reset)")
	}
	rep.Changed = strings.Join(changed, "; ")
	if marked != "" {
		return rep, unreadableHeld(info.name, op, marked, held)
	}
	return rep, visitErr
}

// holdBound is the most deliveries a hold read keeps at once.
func holdBound(opts broker.PeekOptions) int64 {
	maxUnacked := int64(opts.MaxUnacked)
	if maxUnacked <= 0 {
		maxUnacked = DefaultMaxUnacked
	}
	return min(maxUnacked, 65535) // the largest prefetch AMQP can express
}

// returnInTurn returns the deliveries still unsettled on ch up to each of
// ends in turn (one nack with multiple set each), then any others.
func returnInTurn(ch *amqp.Channel, ends []uint64) error {
	if ch.IsClosed() {
		return nil
	}
	for _, tag := range ends {
		if tag == 0 {
			continue
		}
		if err := ch.Nack(tag, true, true); err != nil {
			return err
		}
	}
	return returnAll(ch)
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
