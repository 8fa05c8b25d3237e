package inspect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/broker"
)

// Document returns the one document per message that filters, transforms,
// statistics and the TUI use:
//
//	{id, queue, system, headers, properties, attributes, system_attributes,
//	 death, delivery_count, redelivered, timestamp, age_seconds, size,
//	 reason, failure, shape, group, body, envelope}
//
// and acquired_count when the message carries x-acquired-count.
//
// Values are plain JSON values (map[string]any, []any, string, int,
// float64, json.Number, bool, nil) that jq can use. body is the parsed JSON
// when the body (after content-encoding inflation) is JSON, else its text
// when it is UTF-8, else null with body_base64 holding the bytes. Times are
// RFC 3339 strings in UTC; AMQP byte strings become text when they are
// UTF-8, else base64. shape is the reason's shape (Shape; "(unknown)" when
// there is no reason) and group its GroupID: the message's own group,
// before shapes that differ in a word are merged (see Mine). failure is
// the message's Failure record (null when none); when its body is an
// envelope (MassTransit, SNS, a Lambda on-failure record, NServiceBus on
// SQS), body is the payload inside it and envelope the envelope's other
// fields.
func Document(m *broker.Message) map[string]any {
	return DocumentAt(m, time.Now())
}

// DocumentAt is Document with age_seconds computed relative to now.
func DocumentAt(m *broker.Message, now time.Time) map[string]any {
	doc := make(map[string]any, 16)
	doc["id"] = m.ID
	doc["queue"] = m.Queue
	doc["system"] = string(m.System)
	doc["headers"] = tableValue(m.Headers)
	doc["properties"] = propertiesDoc(&m.Properties)
	doc["attributes"] = attributesDoc(m.Attributes)
	sa := make(map[string]any, len(m.SystemAttributes))
	for k, v := range m.SystemAttributes {
		sa[k] = v
	}
	doc["system_attributes"] = sa
	doc["death"] = deathDoc(m.Death)
	doc["delivery_count"] = int(m.DeliveryCount)
	if m.AcquiredCount > 0 {
		doc["acquired_count"] = int(m.AcquiredCount)
	}
	doc["redelivered"] = m.Redelivered
	doc["exchange"] = m.Exchange
	doc["routing_key"] = m.RoutingKey
	if m.Timestamp.IsZero() {
		doc["timestamp"] = nil
	} else {
		doc["timestamp"] = timeString(m.Timestamp)
	}
	if age := m.Age(now); age != 0 {
		doc["age_seconds"] = age.Seconds()
	} else {
		doc["age_seconds"] = nil
	}
	doc["size"] = m.Size()
	reason, f := reasonAndFailure(m)
	doc["reason"] = reason
	doc["failure"] = failureDoc(f)
	shape := ShapeOf(orDefault(reason, Unknown))
	doc["shape"] = shape
	doc["group"] = GroupID(shape)
	body, raw := bodyValue(m)
	if f != nil && f.Envelope != "" && raw == nil {
		if inner, env, ok := unwrapEnvelope(f.Envelope, body); ok {
			body = inner
			doc["envelope"] = env
		}
	}
	doc["body"] = body
	if raw != nil {
		doc["body_base64"] = base64.StdEncoding.EncodeToString(raw)
	}
	return doc
}

// bodyValue returns the document's body and, for binary bodies, the bytes to
// carry as body_base64.
func bodyValue(m *broker.Message) (any, []byte) {
	b := BodyBytes(m)
	if len(b) == 0 {
		return "", nil
	}
	if v, ok := parseJSON(b); ok {
		return v, nil
	}
	if utf8.Valid(b) {
		return string(b), nil
	}
	return nil, b
}

// BodyBytes is the body as the document reads it: inflated when its
// content encoding (or gzip's magic bytes) says it is compressed and it
// inflates cleanly, else as it is.
func BodyBytes(m *broker.Message) []byte {
	b := m.Body
	if len(b) > 0 && (m.Properties.ContentEncoding != "" || isGzip(b)) {
		if inflated, _, err := inflate(m.Properties.ContentEncoding, b); err == nil {
			return inflated
		}
	}
	return b
}

// parseJSON parses b when it is exactly one JSON value, keeping numbers as
// json.Number so that large integers survive a transform unchanged.
func parseJSON(b []byte) (any, bool) {
	i := skipWS(b, 0)
	if i >= len(b) {
		return nil, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
	case bytes.HasPrefix(b[i:], []byte("true")), bytes.HasPrefix(b[i:], []byte("false")), bytes.HasPrefix(b[i:], []byte("null")):
	default:
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if skipWS(b, int(dec.InputOffset())) != len(b) {
		return nil, false
	}
	return v, true
}

func timeString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func propertiesDoc(p *broker.Properties) map[string]any {
	d := make(map[string]any, 6)
	set := func(k, v string) {
		if v != "" {
			d[k] = v
		}
	}
	set("content_type", p.ContentType)
	set("content_encoding", p.ContentEncoding)
	if p.DeliveryMode != 0 {
		d["delivery_mode"] = int(p.DeliveryMode)
	}
	if p.Priority != 0 {
		d["priority"] = int(p.Priority)
	}
	set("correlation_id", p.CorrelationID)
	set("reply_to", p.ReplyTo)
	set("expiration", p.Expiration)
	set("message_id", p.MessageID)
	if !p.Timestamp.IsZero() {
		d["timestamp"] = timeString(p.Timestamp)
	}
	set("type", p.Type)
	set("user_id", p.UserID)
	set("app_id", p.AppID)
	return d
}

func attributesDoc(attrs map[string]broker.Attribute) map[string]any {
	d := make(map[string]any, len(attrs))
	for k, a := range attrs {
		e := map[string]any{"data_type": a.DataType}
		if a.BinaryValue != nil {
			e["binary_value"] = base64.StdEncoding.EncodeToString(a.BinaryValue)
		} else {
			e["string_value"] = a.StringValue
		}
		d[k] = e
	}
	return d
}

func deathDoc(d *broker.Death) any {
	if d == nil {
		return nil
	}
	doc := map[string]any{
		"reason": d.Reason,
		"queue":  d.Queue,
		"count":  int(d.Count),
	}
	if d.QueueARN != "" {
		doc["queue_arn"] = d.QueueARN
	}
	if d.Exchange != "" {
		doc["exchange"] = d.Exchange
	}
	doc["routing_keys"] = stringsValue(d.RoutingKeys)
	if !d.First.IsZero() {
		doc["first"] = timeString(d.First)
	}
	if !d.Last.IsZero() {
		doc["last"] = timeString(d.Last)
	}
	if d.FirstReason != "" {
		doc["first_reason"] = d.FirstReason
	}
	if d.FirstQueue != "" {
		doc["first_queue"] = d.FirstQueue
	}
	hist := make([]any, len(d.History))
	for i, e := range d.History {
		h := map[string]any{
			"reason":       e.Reason,
			"queue":        e.Queue,
			"count":        int(e.Count),
			"routing_keys": stringsValue(e.RoutingKeys),
		}
		if e.Exchange != "" {
			h["exchange"] = e.Exchange
		}
		if !e.Time.IsZero() {
			h["time"] = timeString(e.Time)
		}
		hist[i] = h
	}
	doc["history"] = hist
	return doc
}

func stringsValue(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func tableValue(t map[string]any) map[string]any {
	d := make(map[string]any, len(t))
	for k, v := range t {
		d[k] = jqValue(v)
	}
	return d
}

// jqValue converts a header value with its AMQP Go type into a JSON value.
func jqValue(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int, float64, json.Number:
		return x
	case int8:
		return int(x)
	case int16:
		return int(x)
	case int32:
		return int(x)
	case int64:
		return int(x)
	case uint8:
		return int(x)
	case uint16:
		return int(x)
	case uint32:
		return int(x)
	case uint:
		if x > math.MaxInt {
			return new(big.Int).SetUint64(uint64(x))
		}
		return int(x)
	case uint64:
		if x > math.MaxInt {
			return new(big.Int).SetUint64(x)
		}
		return int(x)
	case float32:
		return float64(x)
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return base64.StdEncoding.EncodeToString(x)
	case broker.Decimal:
		return float64(x.Value) * math.Pow10(-int(x.Scale))
	case time.Time:
		return timeString(x)
	case map[string]any:
		return tableValue(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jqValue(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tableValue(e)
		}
		return out
	case []string:
		return stringsValue(x)
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}
