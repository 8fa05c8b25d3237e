package redrive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Evaluator runs a compiled jq query over a document; inspect.Query is one.
type Evaluator interface {
	Eval(ctx context.Context, doc any) ([]any, error)
}

// writable are the document keys a transform may change; every other key
// (id, death, queue, reason…) is read-only, and a change to one is refused.
var writable = map[string]bool{"body": true, "body_base64": true, "headers": true, "properties": true, "attributes": true}

// JQTransform builds a Transform from a jq query run over the same
// document filters see (document is inspect.Document). The query must
// produce exactly one object; its body, body_base64, headers, properties and
// attributes become the message to publish. Values that did not change keep
// their original bytes and AMQP types. A result that cannot be mapped back
// faithfully refuses the message with the reason; nothing half-made is ever
// published.
func JQTransform(q Evaluator, document func(*broker.Message) map[string]any) Transform {
	return func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		doc := document(m)
		// Keep a canonical copy: jq may share structure with its input.
		before := canonical(doc)
		outs, err := q.Eval(ctx, doc)
		if err != nil {
			return nil, err
		}
		switch len(outs) {
		case 0:
			return nil, fmt.Errorf("the transform produced no result: select messages with `--filter`, not in `--transform`")
		case 1:
		default:
			return nil, fmt.Errorf("the transform produced %d results: it must produce exactly one object", len(outs))
		}
		res, ok := outs[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the transform produced %s, not an object: update fields in place, e.g. `.body.retry = 0`", jsonKind(outs[0]))
		}
		return FromDocument(m, before, res)
	}
}

// FromDocument maps a transformed document back onto a copy of m. before
// is the canonical form of m's original document (see canonical); after is
// the transformed document.
func FromDocument(m *broker.Message, before map[string]json.RawMessage, after map[string]any) (*broker.Message, error) {
	keys := make([]string, 0, len(before)+len(after))
	seen := map[string]bool{}
	for k := range before {
		keys, seen[k] = append(keys, k), true
	}
	for k := range after {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	changed := map[string]bool{}
	for _, k := range keys {
		b, err := json.Marshal(jsonable(after[k]))
		if err != nil {
			return nil, fmt.Errorf("`.%s`: %v", k, err)
		}
		if _, present := after[k]; !present && before[k] == nil {
			continue
		}
		if !bytes.Equal(b, before[k]) {
			if !writable[k] {
				return nil, fmt.Errorf("`.%s` is read-only in a transform: change body, headers, properties or attributes", k)
			}
			changed[k] = true
		}
	}
	nm := m.Clone()
	if changed["headers"] {
		h, err := headersFrom(m.Headers, after["headers"])
		if err != nil {
			return nil, err
		}
		nm.Headers = h
	}
	if changed["properties"] {
		if err := propertiesFrom(&nm.Properties, after["properties"]); err != nil {
			return nil, err
		}
	}
	if changed["attributes"] {
		a, err := attributesFrom(m.Attributes, after["attributes"])
		if err != nil {
			return nil, err
		}
		nm.Attributes = a
	}
	switch {
	case changed["body_base64"]:
		s, ok := after["body_base64"].(string)
		if !ok {
			return nil, fmt.Errorf("`.body_base64` must be a base64 string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("`.body_base64`: %v", err)
		}
		nm.Body = b
	case changed["body"]:
		b, err := bodyFrom(m, after["body"])
		if err != nil {
			return nil, err
		}
		switch enc := strings.ToLower(nm.Properties.ContentEncoding); enc {
		case "", "identity", "utf-8", "utf8":
		case "gzip", "x-gzip":
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(b)
			_ = zw.Close()
			b = buf.Bytes()
		default:
			return nil, fmt.Errorf("the body is %s-encoded and cannot be re-encoded: set `.properties.content_encoding` to \"\" in the transform", enc)
		}
		nm.Body = b
	}
	return nm, nil
}

// canonical renders each key of a document as compact JSON with sorted
// keys, the form FromDocument compares against.
func canonical(doc map[string]any) map[string]json.RawMessage {
	c := make(map[string]json.RawMessage, len(doc))
	for k, v := range doc {
		b, err := json.Marshal(jsonable(v))
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
		}
		c[k] = b
	}
	return c
}

// Canonical is canonical for callers that map documents back themselves
// (the TUI's editor).
func Canonical(doc map[string]any) map[string]json.RawMessage { return canonical(doc) }

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "a number"
	}
}

// bodyFrom encodes a transformed body: text stays text when the original
// body was text; anything else is JSON.
func bodyFrom(m *broker.Message, v any) ([]byte, error) {
	if s, ok := v.(string); ok && !isJSONBody(m.Body) {
		return []byte(s), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonable(v)); err != nil {
		return nil, fmt.Errorf("`.body`: %v", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func isJSONBody(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && json.Valid(b)
}

// headersFrom maps transformed headers back: a value equal to the original
// keeps its AMQP type.
func headersFrom(orig map[string]any, v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("`.headers` must be an object, not %s", jsonKind(v))
	}
	out := make(map[string]any, len(t))
	for k, nv := range t {
		if ov, ok := orig[k]; ok && sameJSON(ov, nv) {
			out[k] = ov
			continue
		}
		hv, err := headerValue(nv)
		if err != nil {
			return nil, fmt.Errorf("`.headers.%s`: %v", k, err)
		}
		out[k] = hv
	}
	return out, nil
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(jsonable(a))
	y, err2 := json.Marshal(jsonable(b))
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// headerValue converts a jq value into an AMQP header value.
func headerValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		return x, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
		return nil, fmt.Errorf("integer %s does not fit an AMQP header", x)
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			hv, err := headerValue(e)
			if err != nil {
				return nil, err
			}
			o[k] = hv
		}
		return o, nil
	case []any:
		o := make([]any, len(x))
		for i, e := range x {
			hv, err := headerValue(e)
			if err != nil {
				return nil, err
			}
			o[i] = hv
		}
		return o, nil
	default:
		return nil, fmt.Errorf("unsupported value %T", v)
	}
}

// propertiesFrom applies transformed properties onto p.
func propertiesFrom(p *broker.Properties, v any) error {
	t, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("`.properties` must be an object, not %s", jsonKind(v))
	}
	var np broker.Properties
	for k, x := range t {
		str := func(dst *string) error {
			s, ok := x.(string)
			if !ok && x != nil {
				return fmt.Errorf("`.properties.%s` must be a string", k)
			}
			*dst = s
			return nil
		}
		var err error
		switch k {
		case "content_type":
			err = str(&np.ContentType)
		case "content_encoding":
			err = str(&np.ContentEncoding)
		case "correlation_id":
			err = str(&np.CorrelationID)
		case "reply_to":
			err = str(&np.ReplyTo)
		case "expiration":
			err = str(&np.Expiration)
		case "message_id":
			err = str(&np.MessageID)
		case "type":
			err = str(&np.Type)
		case "user_id":
			err = str(&np.UserID)
		case "app_id":
			err = str(&np.AppID)
		case "delivery_mode", "priority":
			n, ok := broker.Int64(numberValue(x))
			lo, hi := int64(0), int64(255)
			if k == "delivery_mode" {
				lo, hi = 1, 2
			}
			if !ok || n < lo || n > hi {
				return fmt.Errorf("`.properties.%s` must be an integer from %d to %d", k, lo, hi)
			}
			if k == "priority" {
				np.Priority = uint8(n)
			} else {
				np.DeliveryMode = uint8(n)
			}
		case "timestamp":
			if x == nil {
				continue
			}
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("`.properties.timestamp` must be an RFC 3339 time")
			}
			ts, perr := time.Parse(time.RFC3339Nano, s)
			if perr != nil {
				return fmt.Errorf("`.properties.timestamp`: %v", perr)
			}
			np.Timestamp = ts
		default:
			return fmt.Errorf("`.properties.%s` is not an AMQP property", k)
		}
		if err != nil {
			return err
		}
	}
	*p = np
	return nil
}

func numberValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
	}
	return v
}

// attributesFrom maps transformed SQS attributes back.
func attributesFrom(orig map[string]broker.Attribute, v any) (map[string]broker.Attribute, error) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("`.attributes` must be an object, not %s", jsonKind(v))
	}
	out := make(map[string]broker.Attribute, len(t))
	for k, x := range t {
		a, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("`.attributes.%s` must be {data_type, string_value} or {data_type, binary_value}", k)
		}
		dt, _ := a["data_type"].(string)
		if dt == "" {
			return nil, fmt.Errorf("`.attributes.%s.data_type` must be String, Number or Binary", k)
		}
		at := broker.Attribute{DataType: dt}
		switch {
		case strings.HasPrefix(dt, "Binary"):
			s, ok := a["binary_value"].(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if !ok || err != nil {
				return nil, fmt.Errorf("`.attributes.%s.binary_value` must be base64", k)
			}
			at.BinaryValue = b
		case strings.HasPrefix(dt, "String"), strings.HasPrefix(dt, "Number"):
			switch s := numberValue(a["string_value"]).(type) {
			case string:
				at.StringValue = s
			case int, int64, float64:
				at.StringValue = fmt.Sprint(s)
			default:
				return nil, fmt.Errorf("`.attributes.%s.string_value` must be a string", k)
			}
		default:
			return nil, fmt.Errorf("`.attributes.%s.data_type` %q: use String, Number or Binary", k, dt)
		}
		if o, ok := orig[k]; ok && o.DataType == at.DataType && o.StringValue == at.StringValue && bytes.Equal(o.BinaryValue, at.BinaryValue) {
			at = o
		}
		out[k] = at
	}
	return out, nil
}
