package rabbitmq

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// A message whose headers amqp091-go refuses to read (tables nested deeper
// than clientMaxDepth, or a table or array of more than clientMaxEntries)
// would close the connection of whoever receives it; dlq's frame guard
// (guardFrames) marks it instead, and a read stops at it. The management API reads it
// (its get returns messages as JSON, nested however deep), so dlq shows it
// from there, marked as unreadable, at its position in the queue.

// The limits of amqp091-go's reader (maxFieldDepth and maxContainerElements
// in its read.go): the headers table is at depth 0, and a table or array
// deeper than clientMaxDepth, or holding more than clientMaxEntries, is
// refused.
const (
	clientMaxDepth   = 32
	clientMaxEntries = 8192
)

// mgmtMessage is one message as the management API's queue get returns it.
type mgmtMessage struct {
	Redelivered     bool           `json:"redelivered"`
	Exchange        string         `json:"exchange"`
	RoutingKey      string         `json:"routing_key"`
	Properties      map[string]any `json:"properties"`
	Payload         string         `json:"payload"`
	PayloadEncoding string         `json:"payload_encoding"`
}

// mgmtGet reads the first count messages of queue through the management
// API and requeues them: on a classic queue each stays in its place; on a
// quorum queue each return adds 1 to its x-delivery-count (RabbitMQ below
// 4.3), so a caller asks only where that harms nothing or was accepted.
func (b *Broker) mgmtGet(ctx context.Context, queue string, count int64) ([]mgmtMessage, error) {
	var msgs []mgmtMessage
	body := map[string]any{"count": count, "ackmode": "ack_requeue_true", "encoding": "auto"}
	err := b.mgmtDo(ctx, "POST", "/queues/"+b.vhostPath()+"/"+url.PathEscape(queue)+"/get", body, &msgs)
	return msgs, err
}

// unreadableWhy says why amqp091-go would refuse headers h (as the
// management API returns them), or "" when it reads them.
func unreadableWhy(h map[string]any) string {
	depth, entries := containerShape(h, 0)
	switch {
	case depth > clientMaxDepth:
		return fmt.Sprintf("its headers nest tables or arrays %d deep, and dlq's AMQP client reads at most %d", depth, clientMaxDepth)
	case entries > clientMaxEntries:
		return fmt.Sprintf("its headers hold a table or array of %d entries, and dlq's AMQP client reads at most %d", entries, clientMaxEntries)
	}
	return ""
}

// containerShape returns the deepest container depth in v (v at depth) and
// the most entries of one container.
func containerShape(v any, depth int) (deepest, most int) {
	var kids []any
	switch x := v.(type) {
	case map[string]any:
		most = len(x)
		for _, e := range x {
			kids = append(kids, e)
		}
	case []any:
		most = len(x)
		kids = x
	default:
		return depth - 1, 0
	}
	deepest = depth
	for _, k := range kids {
		d, n := containerShape(k, depth+1)
		deepest, most = max(deepest, d), max(most, n)
	}
	return deepest, most
}

// fromMgmt converts a message the management API returned, as far as JSON
// tells: header values lose their AMQP width (an integer becomes int64, a
// number with a fraction float64), and x-death times become times.
func fromMgmt(queue string, mm *mgmtMessage) (*broker.Message, error) {
	d := amqp.Delivery{Exchange: mm.Exchange, RoutingKey: mm.RoutingKey, Redelivered: mm.Redelivered}
	switch mm.PayloadEncoding {
	case "base64":
		body, err := base64.StdEncoding.DecodeString(mm.Payload)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		d.Body = body
	default:
		d.Body = []byte(mm.Payload)
	}
	p := mm.Properties
	str := func(k string) string { s, _ := p[k].(string); return s }
	num := func(k string) int64 {
		n, _ := p[k].(json.Number)
		i, _ := n.Int64()
		return i
	}
	d.ContentType, d.ContentEncoding = str("content_type"), str("content_encoding")
	d.DeliveryMode, d.Priority = uint8(num("delivery_mode")), uint8(num("priority"))
	d.CorrelationId, d.ReplyTo, d.Expiration = str("correlation_id"), str("reply_to"), str("expiration")
	d.MessageId, d.Type, d.UserId, d.AppId = str("message_id"), str("type"), str("user_id"), str("app_id")
	if _, ok := p["timestamp"]; ok {
		d.Timestamp = time.Unix(num("timestamp"), 0)
	}
	if h, ok := p["headers"].(map[string]any); ok {
		t := make(amqp.Table, len(h))
		for k, v := range h {
			t[k] = jsonValue(v)
		}
		if deaths, ok := t["x-death"].([]any); ok {
			for _, e := range deaths {
				if m, ok := e.(map[string]any); ok {
					if s, ok := m["time"].(int64); ok {
						m["time"] = time.Unix(s, 0).UTC()
					}
				}
			}
		}
		d.Headers = t
	}
	return fromDelivery(queue, &d), nil
}

// jsonValue converts a value decoded with UseNumber to a header value.
func jsonValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonValue(e)
		}
		return a
	}
	return v
}

// showUnreadable follows a peek that stopped at a message the client could
// not read (err): where reading it through the management API harms
// nothing (a classic queue keeps it in place; a quorum queue without a
// delivery limit only counts, and on RabbitMQ 4.3 a requeue does not
// count), or the user accepted the count (GetUnreadable), it reads the head of the queue there, finds the first
// message the client would refuse, and visits it marked Unreadable with its
// position. The error that follows names the message and what to do.
func (b *Broker) showUnreadable(ctx context.Context, info peekInfo, opts broker.PeekOptions, rep broker.PeekReport, err error, visit func(*broker.Message) error) (broker.PeekReport, error) {
	// Where the message can be: a rotation leaves it in the first window
	// (what it rotated went to the back); a hold read returns everything
	// in place, and it comes after what was read.
	count := rotateWindowFor(info)
	if rep.Mode != broker.PeekRotate {
		count += rep.Read
	}
	if uf, ok := errors.AsType[*unreadableFrame](err); ok && info.requeueFree {
		// The read gave back, in order, the n deliveries it held, to the
		// list of returned messages that RabbitMQ 4.3 delivers first: a
		// get of fewer would put them behind the rest (see peekHold).
		count = max(count, uf.n)
	}
	count = min(count, max(info.depth, 1))
	if info.kind == broker.KindQuorum && info.limited && !opts.GetUnreadable && b.requeueCounts() {
		return rep, unreadableAt(info, rep, err, nil, broker.Hintf("to see it, pass %s: the management API's get reads the first %d messages and adds 1 to each one's x-delivery-count (RabbitMQ below 4.3; the queue's delivery limit is %d)", broker.OptGetUnreadable, count, info.deliveryLimit))
	}
	// RabbitMQ returns the deliveries given back (or those of a closed
	// connection) asynchronously: wait until they are back, so that the
	// get sees them.
	b.awaitReturned(ctx, info.name, info.depth)
	msgs, gerr := b.mgmtGet(ctx, info.name, count)
	if gerr != nil {
		return rep, unreadableAt(info, rep, err, nil, broker.Hintf("reading it through the management API failed too (%v)", gerr))
	}
	for i := range msgs {
		h, _ := msgs[i].Properties["headers"].(map[string]any)
		why := unreadableWhy(h)
		if why == "" {
			continue
		}
		m, cerr := fromMgmt(info.name, &msgs[i])
		if cerr != nil {
			return rep, unreadableAt(info, rep, err, nil, broker.Hintf("the management API's copy of it could not be read either (%v)", cerr))
		}
		m.Position = strconv.Itoa(i + 1)
		m.Unreadable = why + "; read through the management API, which gives header types approximately"
		rep.Read++
		if verr := visit(m); verr != nil && !errors.Is(verr, broker.ErrStop) {
			return rep, verr
		}
		return rep, unreadableAt(info, rep, err, m, broker.Hintf("the messages after it were not read, and every read of the queue stops at it"))
	}
	return rep, unreadableAt(info, rep, err, nil, broker.Hintf("none of the first %d messages read through the management API is one it would refuse: it may have been taken by another consumer", len(msgs)))
}

var _ broker.UnreadableTaker = (*Broker)(nil)

// takeWait bounds each wait for a one-message shovel.
const takeWait = time.Minute

// TakeUnreadable moves or removes the unreadable message at a position
// (see broker.UnreadableTaker), without the AMQP client ever reading it:
//
//  1. a shovel that takes exactly Position messages (src-delete-after,
//     ack-mode on-confirm, prefetch 1) moves the head of the queue, up to
//     the message, into a classic queue of dlq's own;
//  2. the management API reads that queue (a classic queue keeps what it
//     returns in place) and finds the message the client refuses: the one
//     at the position, else the only one among those taken; with none, or
//     several and none at the position, they all go back to the end of the
//     queue and dlq refuses;
//  3. shovels move the messages before it back to the end of the queue,
//     it into a queue of its own, and the messages after it back too;
//  4. keep gets it, as the API returned it, and makes it durable;
//  5. it is removed (the queue of its own is deleted) or moved on to To by
//     one more shovel.
//
// A discard from a classic queue, or from a quorum queue of RabbitMQ 4.3,
// needs no shovel (discardHeld): dlq's client holds the messages up to it
// (the frame guard marks it), acknowledges it alone and gives the others
// back in place.
//
// dlq's client never holds a delivery of the queue. A shovel holds one at
// a time; the one past the last it takes is returned when it stops: below
// RabbitMQ 4.3 to its place (on a quorum queue with x-delivery-count +1,
// the whole cost of the take), on a 4.3 quorum queue to the back, as a
// failed delivery. A delivery returned by a restarting shovel moves the
// same way, which step 2 allows for.
func (b *Broker) TakeUnreadable(ctx context.Context, queue string, opts broker.TakeOptions, keep func(*broker.Message) error) (*broker.Message, error) {
	pos := opts.Position
	op := fmt.Sprintf("take the message at position %d of `%s`", pos, queue)
	if pos < 1 {
		return nil, broker.Errorf(broker.ErrConflict, op, "a position is 1 (the head of the queue) or more")
	}
	info, err := b.peekInfo(ctx, queue)
	if err != nil {
		return nil, err
	}
	switch {
	case info.kind == broker.KindStream:
		return nil, broker.Errorf(broker.ErrUnsupported, op, "`%s` is a stream: its messages cannot be taken one by one", queue)
	case pos > info.depth:
		return nil, broker.Errorf(broker.ErrConflict, op, "`%s` holds %d messages: nothing was changed", queue, info.depth)
	}
	if err := b.canWrite(ctx); err != nil {
		return nil, translateErr(op, err)
	}
	if opts.To == nil && (info.kind == broker.KindClassic && pos <= maxHeldTake || info.requeueFree && info.depth <= maxHeldTake) {
		return b.discardHeld(ctx, info, pos, op, keep)
	}
	v := shovelValue{SrcProtocol: "amqp091", SrcURI: b.localURI(), SrcPrefetchCount: 1,
		DestProtocol: "amqp091", DestURI: b.localURI(), AckMode: "on-confirm", ReconnectDelay: 5}
	onward := v
	if opts.To != nil {
		var q broker.Queue
		if opts.To.Kind == broker.ToOrigin || opts.To.Kind == "" {
			if q, err = b.Queue(ctx, queue); err != nil {
				return nil, err
			}
		}
		if err := shovelTo(&onward, *opts.To, q, op); err != nil {
			return nil, err
		}
	}

	// 1. The head of the queue, up to the message, into a queue of its own.
	hold := newTag("dlq-unreadable")
	if err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(hold, true, false, false, false, nil)
		return err
	}); err != nil {
		return nil, translateErr(op+": declare a queue to hold it", err)
	}
	first := v
	first.SrcQueue, first.DestQueue = queue, hold
	if err := b.shovelN(ctx, first, pos, hold, pos, op); err != nil {
		// A shovel that could not start (a user who may not declare
		// one) took nothing: its empty queue goes.
		if b.deleteQueue(context.WithoutCancel(ctx), hold, true) == nil {
			return nil, fmt.Errorf("%w; nothing was removed", err)
		}
		return nil, fmt.Errorf("%w (the messages taken are in queue `%s`, the others still in `%s`)", err, hold, queue)
	}

	// 2. Which of them is it? dlq's queue is classic: the get returns what
	// it reads in place. A delivery the shovel got twice (its worker
	// restarted) went to the back of a quorum queue on RabbitMQ 4.3, so the
	// message may sit a place off: take the one at the position, else the
	// only unreadable one of those taken.
	allBack := func(n int64, why string) error {
		back := v
		back.SrcQueue, back.DestQueue = hold, queue
		if err := b.shovelN(ctx, back, n, hold, 0, op); err != nil {
			return broker.Errorf(broker.ErrConflict, op, "%s; they are in queue `%s`, and moving them back failed: %v; nothing was removed", why, hold, err)
		}
		_ = b.deleteQueue(ctx, hold, true)
		return broker.Errorf(broker.ErrConflict, op, "%s: they are back at the end of `%s`; nothing was removed", why, queue)
	}
	taken, err := b.mgmtGet(ctx, hold, pos+1)
	if err != nil {
		return nil, fmt.Errorf("%s: read queue `%s`, which holds the %d messages taken: %w", op, hold, pos, err)
	}
	if int64(len(taken)) != pos {
		return nil, broker.Errorf(broker.ErrConflict, op, "queue `%s`, which dlq declared to hold the %d messages taken, holds %d: nothing was removed", hold, pos, len(taken))
	}
	at, why, found := -1, "", 0
	for i := range taken {
		h, _ := taken[i].Properties["headers"].(map[string]any)
		if w := unreadableWhy(h); w != "" {
			found++
			if at < 0 || int64(i) == pos-1 {
				at, why = i, w
			}
		}
	}
	switch {
	case found == 0:
		return nil, allBack(pos, fmt.Sprintf("each of the first %d messages is one dlq can read (the queue changed since the position was named)", pos))
	case found > 1 && int64(at) != pos-1:
		return nil, allBack(pos, fmt.Sprintf("the message at position %d is one dlq can read, and %d before it are not (the queue changed since the position was named)", pos, found))
	}
	m, err := fromMgmt(queue, &taken[at])
	if err != nil {
		return nil, allBack(pos, fmt.Sprintf("the management API's copy of it could not be read (%v)", err))
	}
	m.Position = strconv.Itoa(at + 1)
	m.Unreadable = why + "; read through the management API, which gives header types approximately"

	// 3. The messages before it go behind the others, it goes into a
	// queue of its own, then the messages after it go back too.
	back := v
	back.SrcQueue, back.DestQueue = hold, queue
	before, after := int64(at), pos-int64(at)-1
	if before > 0 {
		if err := b.shovelN(ctx, back, before, hold, pos-before, op); err != nil {
			return nil, fmt.Errorf("%w (the first %d messages of `%s` are in queue `%s` or at the end of `%s`; nothing was removed)", err, pos, queue, hold, queue)
		}
	}
	one := hold
	if after > 0 {
		one = newTag("dlq-unreadable")
		if err := b.withChannel(ctx, func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(one, true, false, false, false, nil)
			return err
		}); err != nil {
			return nil, translateErr(fmt.Sprintf("%s: declare a queue to hold it (it and the %d after it are in queue `%s`)", op, after, hold), err)
		}
		alone := v
		alone.SrcQueue, alone.DestQueue = hold, one
		if err := b.shovelN(ctx, alone, 1, one, 1, op); err != nil {
			return nil, fmt.Errorf("%w (it and the %d after it are in queues `%s` and `%s`; nothing was removed)", err, after, hold, one)
		}
		if err := b.shovelN(ctx, back, after, hold, 0, op); err != nil {
			return nil, fmt.Errorf("%w (the %d messages after it are in queue `%s` or at the end of `%s`; it is in `%s`; nothing was removed)", err, after, hold, queue, one)
		}
		_ = b.deleteQueue(ctx, hold, true)
	}
	putBack := func(why string) error {
		back := v
		back.SrcQueue, back.DestQueue = one, queue
		if err := b.shovelN(ctx, back, 1, one, 0, op); err != nil {
			return broker.Errorf(broker.ErrConflict, op, "%s; it is in queue `%s`, and moving it back failed: %v; nothing was removed", why, one, err)
		}
		_ = b.deleteQueue(ctx, one, true)
		return broker.Errorf(broker.ErrConflict, op, "%s: it went back to the end of `%s`; nothing was removed", why, queue)
	}

	// 4. Evidence first.
	if keep != nil {
		if err := keep(m); err != nil {
			return m, putBack(fmt.Sprintf("keeping it failed (%v)", err))
		}
	}

	// 5. Removed, or moved on.
	if opts.To == nil {
		if err := b.deleteQueue(ctx, one, false); err != nil {
			return m, fmt.Errorf("%s: it is kept, and in queue `%s`, which could not be deleted: %w", op, one, err)
		}
		return m, nil
	}
	onward.SrcQueue = one
	if err := b.shovelN(ctx, onward, 1, one, 0, op); err != nil {
		return m, fmt.Errorf("%w (it is in queue `%s`)", err, one)
	}
	if err := b.deleteQueue(ctx, one, true); err != nil {
		return m, fmt.Errorf("%s: moved; queue `%s`, which held it, could not be deleted: %w", op, one, err)
	}
	return m, nil
}

// maxHeldTake bounds the deliveries discardHeld holds at once (the
// consumer's prefetch).
const maxHeldTake = 10_000

// discardHeld removes the unreadable message at pos of a queue where a
// delivery returned with a nack keeps its place and its count (a classic
// queue; a quorum queue of RabbitMQ 4.3), and nothing else changes:
//
//  1. the management API reads the first pos messages (in place there) and
//     finds the one at pos unreadable, else dlq refuses;
//  2. dlq's client holds the first pos deliveries (the frame guard marks
//     the one it cannot read): the last must be that message, marked, with
//     the API's message-id and body, and none before it marked, else they
//     all go back and dlq refuses;
//
// On a 4.3 quorum queue both read the whole queue instead of the first
// pos: a return goes behind the messages returned earlier (see peekHold),
// and only a read of all of them gives them back in their order.
//  3. the consumer is cancelled, keep gets the API's copy and makes it
//     durable, the message is acknowledged alone, and the others go back
//     in their places with one explicit nack.
//
// The queue keeps its order, and no count changes.
func (b *Broker) discardHeld(ctx context.Context, info peekInfo, pos int64, op string, keep func(*broker.Message) error) (*broker.Message, error) {
	n := pos
	if info.requeueFree {
		n = max(pos, info.depth)
	}
	msgs, err := b.mgmtGet(ctx, info.name, n)
	if err != nil {
		return nil, fmt.Errorf("%s: read it through the management API: %w", op, err)
	}
	if int64(len(msgs)) < pos {
		return nil, broker.Errorf(broker.ErrConflict, op, "`%s` holds %d ready messages: nothing was removed", info.name, len(msgs))
	}
	mm := &msgs[pos-1]
	h, _ := mm.Properties["headers"].(map[string]any)
	why := unreadableWhy(h)
	if why == "" {
		return nil, broker.Errorf(broker.ErrConflict, op, "the message at position %d is one dlq can read (the queue changed since the position was named): nothing was removed", pos)
	}
	m, err := fromMgmt(info.name, mm)
	if err != nil {
		return nil, broker.Errorf(broker.ErrConflict, op, "the management API's copy of it could not be read (%v): nothing was removed", err)
	}
	m.Position = strconv.FormatInt(pos, 10)
	m.Unreadable = why + "; read through the management API, which gives header types approximately"
	id, _ := mm.Properties["message_id"].(string)
	// The get returns what it read asynchronously: the client must find
	// every message back in its place.
	b.awaitReturned(ctx, info.name, info.depth)

	var keepErr error
	acked := false
	err = b.withChannel(ctx, func(ch *amqp.Channel) (err error) {
		defer func() {
			if err != nil {
				_ = returnAll(ch)
			}
		}()
		w, err := startWindowed(ch, info.name, n, n, nil)
		if err != nil {
			return err
		}
		w.passUnreadable = true
		// Every one of the n is held before anything is decided, so that
		// a refusal gives them all back, in order.
		var last *amqp.Delivery
		changed := ""
		wait := firstWait
		for i := int64(1); i <= n; i++ {
			d, err := w.next(ctx, wait)
			if err != nil {
				return err
			}
			wait = idleWait
			if d == nil {
				if i <= pos {
					changed = fmt.Sprintf("dlq received %d of the first %d messages (another consumer holds some)", i-1, pos)
				}
				break
			}
			if i > pos || changed != "" {
				continue
			}
			if _, marked := unreadableMark(d.Headers); marked != (i == pos) || i == pos && (d.MessageId != id || !bytes.Equal(d.Body, m.Body)) {
				changed = fmt.Sprintf("the message at position %d is not the one the management API read there (the queue changed)", pos)
			}
			last = d
		}
		// Nothing more is delivered; what was sent before the cancel
		// stays unsettled and goes back with the rest.
		if err := w.cancelAndDrain(ctx, nil); err != nil {
			return err
		}
		if changed != "" {
			return broker.Errorf(broker.ErrConflict, op, "%s: nothing was removed", changed)
		}
		if keep != nil {
			if keepErr = keep(m); keepErr != nil {
				return keepErr
			}
		}
		if err := ch.Ack(last.DeliveryTag, false); err != nil {
			return err
		}
		acked = true
		return returnAll(ch)
	})
	switch {
	case keepErr != nil:
		return m, broker.Errorf(broker.ErrConflict, op, "keeping it failed (%v): it is still in its place; nothing was removed", keepErr)
	case err != nil && acked:
		return m, fmt.Errorf("%s: it is kept, and was acknowledged, but the messages before it went back only when the channel closed: %w", op, translateErr("", err))
	case err != nil:
		return nil, translateErr(op, err)
	}
	return m, nil
}

// shovelN runs a shovel of v that moves n messages (src-delete-after n)
// and waits until it has deleted itself, its source has no consumer, and
// ours, one of its two queues that only dlq uses, holds want messages.
func (b *Broker) shovelN(ctx context.Context, v shovelValue, n int64, ours string, want int64, op string) error {
	v.SrcDeleteAfter = n
	name, err := b.putShovel(ctx, v.SrcQueue, v, op)
	if err != nil {
		return err
	}
	path := "/parameters/shovel/" + b.vhostPath() + "/" + url.PathEscape(name)
	// A message at a time, each confirmed: a minute per thousand.
	wait := takeWait * time.Duration(1+n/1000)
	deadline := time.Now().Add(wait)
	for {
		var p shovelParam
		gone := errors.Is(b.mgmtDo(ctx, "GET", path, nil, &p), broker.ErrNotFound)
		_, consumers, err := b.inspect(ctx, v.SrcQueue)
		if err != nil {
			return err
		}
		held, _, err := b.inspect(ctx, ours)
		if err != nil {
			return err
		}
		if gone && consumers == 0 && held == want {
			return nil
		}
		if time.Now().After(deadline) {
			_ = b.mgmtDo(context.WithoutCancel(ctx), "DELETE", path, nil, nil)
			return broker.Errorf(broker.ErrUnreachable, op, "the shovel that moves %d messages from `%s` did not finish within %s", n, v.SrcQueue, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// deleteQueue deletes a queue dlq declared (ifEmpty: only when empty).
func (b *Broker) deleteQueue(ctx context.Context, name string, ifEmpty bool) error {
	return b.withChannel(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(name, false, ifEmpty, false)
		return err
	})
}
