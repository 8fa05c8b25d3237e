package rabbitmq

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// fromDelivery converts a delivery into a broker.Message read from queue.
// Headers keep their AMQP types (see fromTable), x-death becomes a
// normalised Death, x-delivery-count the DeliveryCount, and the ID is the
// stable fingerprint.
func fromDelivery(queue string, d *amqp.Delivery) *broker.Message {
	m := &broker.Message{
		System: broker.RabbitMQ,
		Queue:  queue,
		Body:   d.Body,
		Properties: broker.Properties{
			ContentType:     d.ContentType,
			ContentEncoding: d.ContentEncoding,
			DeliveryMode:    d.DeliveryMode,
			Priority:        d.Priority,
			CorrelationID:   d.CorrelationId,
			ReplyTo:         d.ReplyTo,
			Expiration:      d.Expiration,
			MessageID:       d.MessageId,
			Type:            d.Type,
			UserID:          d.UserId,
			AppID:           d.AppId,
		},
		Exchange:    d.Exchange,
		RoutingKey:  d.RoutingKey,
		Redelivered: d.Redelivered,
	}
	if !d.Timestamp.IsZero() {
		m.Properties.Timestamp = d.Timestamp.UTC()
	}
	if why, ok := unreadableMark(d.Headers); ok {
		// The frame guard replaced headers the client would refuse.
		m.Unreadable = why + "; its headers were not read"
	} else if len(d.Headers) > 0 {
		m.Headers = fromTable(d.Headers)
	}
	m.Timestamp = m.Properties.Timestamp
	if m.Timestamp.IsZero() {
		// The message_interceptors / timestamp plugins stamp this header.
		if ms, ok := rabbitrules.Int(m.Headers["timestamp_in_ms"]); ok && ms > 0 {
			m.Timestamp = time.UnixMilli(ms).UTC()
		}
	}
	if n, ok := rabbitrules.Int(m.Headers["x-delivery-count"]); ok {
		m.DeliveryCount = n
	}
	if n, ok := rabbitrules.Int(m.Headers["x-acquired-count"]); ok && n > 0 {
		m.AcquiredCount = n
	}
	if off, ok := rabbitrules.Int(m.Headers["x-stream-offset"]); ok {
		m.Position = strconv.FormatInt(off, 10)
	}
	m.Death = deathOf(m.Headers)
	m.ID = broker.Fingerprint(m)
	return m
}

// fromTable converts an AMQP table to a map with neutral Go values: tables
// become map[string]any, arrays []any, amqp.Decimal broker.Decimal, times
// UTC (so that fingerprints do not depend on the local zone); integer widths
// (int8…int64, uint8, uint16, uint32), floats, bools, strings, []byte and nil
// are kept as they are.
func fromTable(t amqp.Table) map[string]any {
	if t == nil {
		return nil
	}
	m := make(map[string]any, len(t))
	for k, v := range t {
		m[k] = fromValue(v)
	}
	return m
}

func fromValue(v any) any {
	switch x := v.(type) {
	case amqp.Table:
		return fromTable(x)
	case map[string]any:
		return fromTable(amqp.Table(x))
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = fromValue(e)
		}
		return a
	case amqp.Decimal:
		return broker.Decimal{Scale: x.Scale, Value: x.Value}
	case time.Time:
		return x.UTC()
	default:
		return v
	}
}

// toTable converts neutral header values back to an AMQP table, keeping
// their types. Go int and uint become int64 (amqp091 would cut an int to 32
// bits); json.Number becomes int64 or float64. A value no AMQP field type can
// hold is an error naming the header.
func toTable(m map[string]any) (amqp.Table, error) {
	if m == nil {
		return nil, nil
	}
	t := make(amqp.Table, len(m))
	for k, v := range m {
		tv, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		t[k] = tv
	}
	return t, nil
}

func toValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int8, uint8, int16, uint16, int32, uint32, int64, float32, float64, string, []byte:
		return v, nil
	case int:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d is too large for an AMQP header", x)
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d is too large for an AMQP header", x)
		}
		return int64(x), nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q cannot be read", x)
		}
		return f, nil
	case broker.Decimal:
		return amqp.Decimal{Scale: x.Scale, Value: x.Value}, nil
	case amqp.Decimal:
		return x, nil
	case time.Time:
		return x, nil
	case map[string]any:
		return toTable(x)
	case amqp.Table:
		return toTable(map[string]any(x))
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			ev, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
			a[i] = ev
		}
		return a, nil
	case []string:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = e
		}
		return a, nil
	default:
		return nil, fmt.Errorf("value of type %T has no AMQP header type", v)
	}
}

func headerString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// deathOf normalises the death headers: x-death (RabbitMQ keeps it newest
// first: each (queue, reason) pair has one entry whose count grows and which
// moves to the front when it happens again; its time is the FIRST time that
// pair happened), x-first-death-queue/-reason/-exchange, and, when x-death
// was stripped, x-last-death-queue/-reason/-exchange (3.13 and 4.x).
//
// RabbitMQ 4.x keeps a message's deaths in the broker, not in its headers:
// a message published again by a client (a redrive with its death headers
// kept) starts a new record when it dies again, where 3.10 went on counting
// in the x-death it was published with.
//
// Reason, Queue, Exchange and RoutingKeys come from the origin entry (see
// originEntry): x-death[0], the most recent death, unless that is the
// expiry of a retry delay. Count is the sum of the entries' counts. The
// first death (First, FirstQueue, FirstReason) is read from the x-death
// array: the entry with the earliest time (each keeps the first time its
// pair happened; x-first-death-* breaks a tie), else its last entry.
// x-first-death-* is used alone only when x-death was stripped: since RabbitMQ 4.1 it can be missing, and its queue
// overwritten by a later death (rabbitmq-server#15385). Last is the latest
// entry time, a lower bound of the last death since RabbitMQ does not
// record when a repeated death happened. Messages without any death header
// get nil.
func deathOf(h map[string]any) *broker.Death {
	if h == nil {
		return nil
	}
	raw, _ := h["x-death"].([]any)
	firstQueue := headerString(h["x-first-death-queue"])
	firstReason := headerString(h["x-first-death-reason"])
	lastQueue := headerString(h["x-last-death-queue"])
	lastReason := headerString(h["x-last-death-reason"])
	if len(raw) == 0 && firstQueue == "" && firstReason == "" && lastQueue == "" && lastReason == "" {
		return nil
	}
	d := &broker.Death{FirstQueue: firstQueue, FirstReason: firstReason}
	for _, r := range raw {
		t, ok := r.(map[string]any)
		if !ok {
			continue
		}
		e := broker.DeathEntry{
			Reason:   headerString(t["reason"]),
			Queue:    headerString(t["queue"]),
			Exchange: headerString(t["exchange"]),
		}
		if n, ok := rabbitrules.Int(t["count"]); ok {
			e.Count = n
		} else {
			e.Count = 1
		}
		if ts, ok := t["time"].(time.Time); ok {
			e.Time = ts.UTC()
		}
		switch keys := t["routing-keys"].(type) {
		case []any:
			for _, k := range keys {
				e.RoutingKeys = append(e.RoutingKeys, headerString(k))
			}
		case []string:
			e.RoutingKeys = append(e.RoutingKeys, keys...)
		}
		d.History = append(d.History, e)
		d.Count = broker.SatAdd(d.Count, e.Count)
	}
	if len(d.History) > 0 {
		last := d.History[originEntry(d.History)]
		d.Reason, d.Queue, d.Exchange = last.Reason, last.Queue, last.Exchange
		d.RoutingKeys = append([]string(nil), last.RoutingKeys...)
		first := len(d.History) - 1
		for i, e := range d.History {
			if e.Time.IsZero() {
				continue
			}
			if d.Last.IsZero() || e.Time.After(d.Last) {
				d.Last = e.Time
			}
			if ft := d.History[first].Time; ft.IsZero() || e.Time.Before(ft) {
				first = i
			}
		}
		// Times have a second's resolution: among entries as old as the
		// first, the one x-first-death-* names (when it names one) breaks
		// the tie.
		for i, e := range d.History {
			if e.Time.Equal(d.History[first].Time) && e.Queue == firstQueue && e.Reason == firstReason && firstQueue != "" {
				first = i
			}
		}
		d.First = d.History[first].Time
		d.FirstQueue, d.FirstReason = d.History[first].Queue, d.History[first].Reason
	} else if lastQueue != "" || lastReason != "" {
		// Only x-last-death-* (RabbitMQ 3.13 and 4.x) and x-first-death-*:
		// the x-death table was stripped.
		d.Reason, d.Queue = lastReason, lastQueue
		d.Exchange = headerString(h["x-last-death-exchange"])
		d.Count = 1
		if firstQueue != "" && (firstQueue != lastQueue || firstReason != lastReason) {
			d.Count = 2 // at least: the first death and the last
			// The same rule as originEntry, with the two deaths known.
			pair := []broker.DeathEntry{{Reason: lastReason, Queue: lastQueue}, {Reason: firstReason, Queue: firstQueue}}
			if originEntry(pair) == 1 {
				d.Reason, d.Queue = firstReason, firstQueue
				d.Exchange = headerString(h["x-first-death-exchange"])
			}
		}
	} else {
		// Only x-first-death-*: the x-death table was stripped.
		d.Reason, d.Queue = firstReason, firstQueue
		d.Exchange = headerString(h["x-first-death-exchange"])
		d.Count = 1
	}
	return d
}

// originEntry is the index in h (x-death, newest first) of the death that
// names the message's origin: the newest death that is not the TTL expiry of
// a retry queue. In a retry ladder (work queue → retry queue with a TTL that
// dead-letters back → work queue) the consumer rejects the message in the
// work queue and the retry queue only delays it: redriving to the retry
// queue would delay it again and add a death to its record.
//
// The headers alone tell a retry expiry, with no broker call: an `expired`
// death is a retry delay when an older death of another queue was a
// consumer's (`rejected`, or `delivery_limit` on a quorum queue), since the
// message expired after a consumer had refused it elsewhere. An expiry in the
// queue that rejected it (a work queue's own TTL) stays the origin, and so
// does an expiry with no earlier rejection (a message that nobody consumed in
// time). A queue that is fed by a rejection and whose own TTL is its real
// failure (no retry role) cannot be told from a retry queue this way: its
// messages name the queue that rejected them first.
func originEntry(h []broker.DeathEntry) int {
	for i, e := range h {
		if e.Reason != "expired" || !rejectedElsewhere(h[i+1:], e.Queue) {
			return i
		}
	}
	return 0
}

// rejectedElsewhere reports whether older holds a consumer's death (rejected
// or delivery_limit) in a queue other than queue.
func rejectedElsewhere(older []broker.DeathEntry, queue string) bool {
	for _, e := range older {
		if e.Queue != queue && (e.Reason == "rejected" || e.Reason == "delivery_limit") {
			return true
		}
	}
	return false
}

// toPublishing converts a message back to an AMQP publishing: body, content
// type and encoding, message-id, correlation-id, reply-to, expiration, type,
// app-id, timestamp, priority and headers with their types. Delivery mode
// defaults to persistent. user_id is kept only when it names the user this
// broker is logged in as: RabbitMQ refuses (and closes the channel for) a
// publish whose user_id differs from the authenticated user.
func (b *Broker) toPublishing(m *broker.Message) (amqp.Publishing, error) {
	h, err := toTable(m.Headers)
	if err != nil {
		return amqp.Publishing{}, err
	}
	p := m.Properties
	pub := amqp.Publishing{
		Headers:         h,
		ContentType:     p.ContentType,
		ContentEncoding: p.ContentEncoding,
		DeliveryMode:    p.DeliveryMode,
		Priority:        p.Priority,
		CorrelationId:   p.CorrelationID,
		ReplyTo:         p.ReplyTo,
		Expiration:      p.Expiration,
		MessageId:       p.MessageID,
		Timestamp:       p.Timestamp,
		Type:            p.Type,
		AppId:           p.AppID,
		Body:            m.Body,
	}
	if pub.DeliveryMode == 0 {
		pub.DeliveryMode = amqp.Persistent
	}
	if p.UserID != "" && p.UserID == b.user {
		pub.UserId = p.UserID
	}
	return pub, nil
}
