package inspect

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// One piece, though long: the way back from a document is one mapping,
// and each of its parts (body, headers, properties, attributes) must keep
// what did not change in exactly the same way.
//
// The way back: a document that a transform or an editor changed becomes
// the message to publish. Only body, body_base64, headers, properties and
// attributes may change; values that did not change keep their original
// bytes and AMQP types.

// writable are the document keys a transform may change; every other key
// (id, death, queue, reason…) is read-only, and a change to one is refused.
var writable = map[string]bool{"body": true, "body_base64": true, "headers": true, "properties": true, "attributes": true}

// FromDocument maps a changed document back onto a copy of m. before is
// the canonical form of m's original document (see Canonical); after is the
// changed document. A value in after may be a json.RawMessage: a body given
// that way keeps the order of its keys and the form of its numbers.
func FromDocument(m *broker.Message, before map[string]json.RawMessage, after map[string]any) (*broker.Message, error) {
	after = plainDocument(after)
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
		b, err := canonicalJSON(after[k])
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
	if changed["body"] || changed["body_base64"] {
		if env := before["envelope"]; len(env) > 0 && string(env) != "null" {
			return nil, fmt.Errorf("`.body` is the payload inside the message's %s envelope, and a changed payload cannot be put back into it: change headers, properties or attributes only", envelopeKind(before["failure"]))
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
	case changed["body_base64"] && after["body_base64"] != nil:
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
			if enc == "" && isGzip(m.Body) && !bytes.Equal(BodyBytes(m), m.Body) {
				// Compressed without a content encoding (the document
				// showed it inflated, by gzip's magic bytes): the edit is
				// compressed again, as the consumer expects the body.
				b = gzipBytes(b)
			}
		case "gzip", "x-gzip":
			b = gzipBytes(b)
		default:
			return nil, fmt.Errorf("the body is %s-encoded and cannot be re-encoded: set `.properties.content_encoding` to \"\" in the transform", enc)
		}
		nm.Body = b
	}
	return nm, nil
}

// Canonical renders each key of a document as compact JSON with sorted
// keys, the form FromDocument compares against. Take it before handing the
// document to jq, which may share structure with its input.
func Canonical(doc map[string]any) map[string]json.RawMessage {
	c := make(map[string]json.RawMessage, len(doc))
	for k, v := range doc {
		b, err := canonicalJSON(v)
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
		}
		c[k] = b
	}
	return c
}

// canonicalJSON is v as compact JSON with sorted keys; a json.RawMessage
// is decoded first, so that its layout and key order do not count.
func canonicalJSON(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		x, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		v = x
	}
	return json.Marshal(v)
}

// plainDocument decodes the json.RawMessage values anywhere in a document
// except a raw body, which bodyFrom takes as written. The caller's document
// is never changed.
func plainDocument(doc map[string]any) map[string]any {
	body, raw := doc["body"].(json.RawMessage)
	if raw {
		doc = maps.Clone(doc)
		delete(doc, "body")
	}
	p, _ := plain(doc)
	out := p.(map[string]any)
	if raw {
		out["body"] = body
	}
	return out
}

// plain is v with every json.RawMessage in it decoded, and whether that
// changed anything. An undecodable RawMessage is kept, to fail later with
// its own error.
func plain(v any) (any, bool) {
	switch x := v.(type) {
	case json.RawMessage:
		d, err := decodeJSON(x)
		if err != nil {
			return v, false
		}
		p, _ := plain(d)
		return p, true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if p, changed := plain(e); changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k, e := range x {
						out[k] = e
					}
				}
				out[k] = p
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			if p, changed := plain(e); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = p
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// JSONKind names the kind of a JSON value for an error message: "null",
// "a boolean", "a string", "an array", "an object" or "a number".
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return "a number"
	}
}

// bodyFrom encodes a changed body: text stays text when the original body
// was text; anything else is JSON.
func bodyFrom(m *broker.Message, v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		var s string
		if !isJSONBody(m.Body) && json.Unmarshal(raw, &s) == nil {
			return []byte(s), nil
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, fmt.Errorf("`.body`: %v", err)
		}
		return c.Bytes(), nil
	}
	if s, ok := v.(string); ok && !isJSONBody(m.Body) {
		return []byte(s), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("`.body`: %v", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func isJSONBody(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && json.Valid(b)
}

// headersFrom maps changed headers back: a value equal to the original's
// document form keeps its AMQP type.
func headersFrom(orig map[string]any, v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("`.headers` must be an object, not %s", JSONKind(v))
	}
	out := make(map[string]any, len(t))
	for k, nv := range t {
		if ov, ok := orig[k]; ok && sameJSON(jqValue(ov), nv) {
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
	x, err1 := canonicalJSON(a)
	y, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// headerValue converts a JSON value (from jq or an editor) into an AMQP
// header value: integers become int64, other numbers float64, objects
// tables.
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
		return fmt.Errorf("`.properties` must be an object, not %s", JSONKind(v))
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
		return nil, fmt.Errorf("`.attributes` must be an object, not %s", JSONKind(v))
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

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// envelopeKind is the envelope named by a canonical failure record.
func envelopeKind(failure json.RawMessage) string {
	if k := rawText(jsonField(failure, []string{"envelope"})); k != "" {
		return k
	}
	return "framework"
}
