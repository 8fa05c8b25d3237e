package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// sort splits a window into the items to publish, those an interrupted run
// already moved (to acknowledge only) and those to park. A selected item
// whose group a failure in an earlier window stopped is parked.
func (e *engine) sort(items []item) (pub, ackOnly, park []item) {
	pub = make([]item, 0, len(items))
	for _, it := range items {
		switch {
		case it.ackNow:
			ackOnly = append(ackOnly, it)
		case it.out != nil:
			if st, ok := e.groups.stoppedBefore(it.group, it.pos); ok {
				e.holdForGroup(&it, st)
				park = append(park, it)
				continue
			}
			pub = append(pub, it)
		default:
			park = append(park, it)
		}
	}
	return pub, ackOnly, park
}

// publish is the publish stage: it journals and publishes items (once the
// destination does not block publishers) and returns those the destination
// confirmed and, in order, those that stay in the source. wctx bounds the
// publish, which finishes even after ctx is cancelled.
func (e *engine) publish(ctx, wctx context.Context, items []item) (confirmed, back []item) {
	if len(items) == 0 {
		return nil, nil
	}
	e.flow.wait(ctx)
	if j := e.opts.Journal; j != nil {
		if err := j.record('P', ids(items)); err != nil {
			e.tally.setFatal(err)
			return nil, items
		}
	}
	outs := make([]broker.Outgoing, len(items))
	for i, it := range items {
		outs[i] = *it.out
	}
	errs, err := e.pub.Publish(wctx, outs)
	if err != nil {
		e.tally.setFatal(fmt.Errorf("publish to %s: %w", e.destName, err))
		e.tally.failN(ReasonPublishError, int64(len(items)))
		for i := range items {
			it := &items[i]
			it.reason, it.failed = ReasonPublishError, true
			if it.group != "" {
				e.groups.stop(it.group, it.pos, true)
			}
		}
		return nil, items
	}
	confirmed = make([]item, 0, len(items))
	for i, it := range items {
		var perr error
		if i < len(errs) {
			perr = errs[i]
		}
		if perr == nil {
			if st, ok := e.groups.stoppedBefore(it.group, it.pos); ok && st.failed {
				// The destination took it although an earlier message of
				// its group failed: it is there now (acknowledging it avoids
				// a duplicate), but the group's order is not.
				e.tally.notice(fmt.Sprintf("message %s of FIFO group %q reached the destination after an earlier message of its group failed: that group's order is broken there", it.id, it.group))
			}
			if outs[i].Resent {
				e.tally.resent(it.id)
			}
			confirmed = append(confirmed, it)
			continue
		}
		reason := ReasonRejected
		if errors.Is(perr, broker.ErrUnroutable) {
			reason = ReasonUnroutable
		}
		if _, ok := e.groups.stoppedBefore(it.group, it.pos); ok {
			// Not sent because an earlier message of its group failed.
			reason = ReasonGroupHeld
		}
		e.tally.fail(reason, it.id, perr)
		it.reason, it.failed = reason, true
		if it.group != "" {
			e.groups.stop(it.group, it.pos, true)
		}
		back = append(back, it)
	}
	if len(confirmed) > 0 && e.opts.Journal != nil {
		if err := e.opts.Journal.record('C', ids(confirmed)); err != nil {
			e.tally.setFatal(err)
		}
	}
	if e.traits.StableIDs {
		for _, it := range confirmed {
			e.sent.add(it.id)
		}
	}
	return confirmed, back
}

// checkDest refuses, before a message is taken, a fixed destination that
// would route nowhere (a queue that does not exist, an exchange that is
// missing, has nothing bound to it, or nothing bound with the given key):
// every message would be refused one by one, and on RabbitMQ put back in
// the source. An exchange without a key, bound to something, is checked
// per message with each message's keys. A check that fails (no management
// API) leaves it to the publishes.
func (e *engine) checkDest(ctx context.Context) error {
	d := e.opts.Dest
	if d.Kind != broker.ToQueue && d.Kind != broker.ToExchange {
		return nil
	}
	if err := e.checkDrop(ctx); err != nil {
		return err
	}
	rc, ok := e.dst.(broker.RouteChecker)
	if !ok {
		return nil
	}
	routable, err := rc.Routable(ctx, d)
	if err != nil || routable {
		return nil
	}
	why := "does not exist on %s: check the name, or list queues with %s"
	args := []any{d, e.dst, broker.Cmd("queues")}
	switch {
	case d.Kind == broker.ToExchange && len(d.RoutingKeys) == 0:
		why, args = "routes to no queue on %s (the exchange is missing, or nothing is bound to it): check the exchange, or bind a queue", args[:2]
	case d.Kind == broker.ToExchange:
		why, args = "routes to no queue on %s (the exchange is missing, or no queue is bound with that key): check the exchange and key, or bind a queue", args[:2]
	}
	return broker.Errorf(broker.ErrNotFound, "redrive", "destination `%s` "+why+"; "+e.nothingDone(), args...)
}

// checkDrop refuses, before a message is taken, a destination queue that
// drops (CheckDrop), unless Opts.AllowDrop accepts it.
func (e *engine) checkDrop(ctx context.Context) error {
	if e.opts.AllowDrop {
		return nil
	}
	return CheckDrop(ctx, e.dst, e.opts.Dest, e.nothingDone())
}

// CheckDrop refuses a destination queue d on dst that drops its oldest
// messages past a length limit (overflow drop-head, the default once a
// queue has one): each message moved in beyond the limit would drop (or
// dead-letter) one already there, and the broker confirms the publish all
// the same. A queue that refuses publishes past its limit (reject-publish)
// needs no check: a refused message stays in the source. A check that
// fails leaves it to the publishes. nothing ends the refusal ("nothing
// was moved"). Every move into a queue asks it first, unless the user
// accepted the drop (--allow-drop).
func CheckDrop(ctx context.Context, dst broker.Broker, d broker.Destination, nothing string) error {
	qi, ok := dst.(broker.QueueInspector)
	if d.Kind != broker.ToQueue || !ok {
		return nil
	}
	q, err := qi.Queue(ctx, d.Queue)
	if err != nil || q.Overflow != broker.OverflowDropHead {
		return nil
	}
	var limits []string
	if q.MaxLength != nil {
		limits = append(limits, fmt.Sprintf("max-length %d (holds %d)", *q.MaxLength, q.Depth))
	}
	if q.MaxLengthBytes != nil {
		limits = append(limits, fmt.Sprintf("max-length-bytes %d", *q.MaxLengthBytes))
	}
	dropped := "drops"
	if q.DeadLetterTarget != "" {
		dropped = "dead-letters"
	}
	return &broker.Error{Kind: broker.ErrUnsafe, Op: "redrive",
		Msg: fmt.Sprintf("destination queue `%s` has %s with overflow drop-head: past its limit it %s its oldest messages to take new ones, and the broker confirms every publish; %s",
			d.Queue, strings.Join(limits, ", "), dropped, nothing),
		Hint: broker.Hintf("%v, or give the queue overflow reject-publish (a refused message stays in the source)",
			broker.OptAllowDrop.Or("move with %s to accept that", "raise its limit"))}
}

// nothingDone ends a refusal: a dry run changes nothing anyway.
func (e *engine) nothingDone() string {
	if e.opts.DryRun {
		return "a real run would move nothing"
	}
	return "nothing was moved"
}
