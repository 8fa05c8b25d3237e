package rabbitmq

import (
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
// closes the connection of whoever receives it. The management API reads it
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
// delivery limit only counts), or the user accepted the count
// (GetUnreadable), it reads the head of the queue there, finds the first
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
	count = min(count, max(info.depth, 1))
	if info.kind == broker.KindQuorum && info.limited && !opts.GetUnreadable {
		return rep, unreadableAt(info, rep, err, nil, broker.Hintf("to see it, pass %s: the management API's get reads the first %d messages and adds 1 to each one's x-delivery-count (RabbitMQ below 4.3; the queue's delivery limit is %d)", broker.OptGetUnreadable, count, info.deliveryLimit))
	}
	// RabbitMQ returns the deliveries of the closed connection
	// asynchronously: wait until they are back, so that the get sees them.
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
