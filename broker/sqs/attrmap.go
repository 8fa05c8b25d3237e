package sqs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The AMQP → SQS mapping
//
// A message that comes from RabbitMQ (or from an archive of RabbitMQ
// messages) carries AMQP properties and typed application headers; SQS has at
// most 10 message attributes of type String, Number or Binary, each with an
// optional custom type suffix ("Number.int32"). AttributesFromHeaders maps
// one to the other and HeadersFromAttributes maps back, losslessly:
//
//   - Properties become attributes named with the "dlq-" prefix:
//     dlq-content-type, dlq-content-encoding, dlq-correlation-id,
//     dlq-message-id, dlq-reply-to, dlq-type, dlq-app-id, dlq-user-id,
//     dlq-expiration (String), dlq-priority, dlq-delivery-mode (Number.uint8),
//     dlq-timestamp (Number.timestamp, Unix seconds).
//   - An application header keeps its name and becomes:
//     string → String (String.empty for ""), bool → String.bool,
//     int8…int64 / uint8…uint64 → Number.<type>, float32/float64 →
//     Number.<type> (String.<type> for NaN and ±Inf, which Number rejects),
//     decimal → Number.decimal, timestamp → Number.timestamp (Unix seconds),
//     []byte → Binary, nil → String.void.
//   - Slots are given in this order: content-type, correlation-id,
//     message-id, then application headers by name, then the other
//     properties. Headers that are tables or arrays, whose names SQS does not
//     allow (see validAttributeName), and everything that does not fit in the
//     first nine slots, go into one overflow attribute, dlq-amqp (String.json),
//     holding {"properties": {...}, "headers": {name: {"type": T, "value": V}}}
//     with the typed-value encoding of dlq archives (broker.AppendTypedValue).
//
// A body that SQS cannot carry (bytes outside the XML character set SQS
// accepts, such as arbitrary binary) is sent base64-encoded with the
// attribute dlq-body-encoding=base64; an empty body (SQS wants at least one
// character) is sent as "(empty)" with dlq-body-encoding=empty. Messages read
// back are decoded. The attribute takes one of the 10 slots, so a message
// that needs it keeps at most 9 others.
//
// The file is one piece: both directions are one lossless mapping, and a
// change to either must be made, and read, with the other.

// Attribute names dlq itself writes.
const (
	attrPrefix       = "dlq-"
	attrOverflow     = "dlq-amqp"
	attrBodyEncoding = "dlq-body-encoding"
	maxAttributes    = 10
)

// propertyAttr describes one AMQP property's attribute.
type propertyAttr struct {
	name string
	get  func(p *broker.Properties) (Attr broker.Attribute, ok bool)
	set  func(p *broker.Properties, a broker.Attribute) error
	// fits is false when SQS cannot carry the value as an attribute (nil:
	// always fits); such a property goes to the overflow attribute.
	fits func(p *broker.Properties) bool
}

func stringProp(name string, f func(p *broker.Properties) *string) propertyAttr {
	return propertyAttr{
		name: attrPrefix + name,
		get: func(p *broker.Properties) (broker.Attribute, bool) {
			v := *f(p)
			return broker.Attribute{DataType: "String", StringValue: v}, v != ""
		},
		fits: func(p *broker.Properties) bool { return validBody(*f(p)) },
		set: func(p *broker.Properties, a broker.Attribute) error {
			*f(p) = a.StringValue
			return nil
		},
	}
}

func uint8Prop(name string, f func(p *broker.Properties) *uint8) propertyAttr {
	return propertyAttr{
		name: attrPrefix + name,
		get: func(p *broker.Properties) (broker.Attribute, bool) {
			v := *f(p)
			return broker.Attribute{DataType: "Number.uint8", StringValue: strconv.Itoa(int(v))}, v != 0
		},
		set: func(p *broker.Properties, a broker.Attribute) error {
			n, err := strconv.ParseUint(a.StringValue, 10, 8)
			*f(p) = uint8(n)
			return err
		},
	}
}

// properties in slot order: the three that consumers use most come first.
var (
	firstProperties = []propertyAttr{
		stringProp("content-type", func(p *broker.Properties) *string { return &p.ContentType }),
		stringProp("correlation-id", func(p *broker.Properties) *string { return &p.CorrelationID }),
		stringProp("message-id", func(p *broker.Properties) *string { return &p.MessageID }),
	}
	laterProperties = []propertyAttr{
		stringProp("content-encoding", func(p *broker.Properties) *string { return &p.ContentEncoding }),
		stringProp("type", func(p *broker.Properties) *string { return &p.Type }),
		stringProp("app-id", func(p *broker.Properties) *string { return &p.AppID }),
		stringProp("reply-to", func(p *broker.Properties) *string { return &p.ReplyTo }),
		stringProp("user-id", func(p *broker.Properties) *string { return &p.UserID }),
		stringProp("expiration", func(p *broker.Properties) *string { return &p.Expiration }),
		uint8Prop("priority", func(p *broker.Properties) *uint8 { return &p.Priority }),
		uint8Prop("delivery-mode", func(p *broker.Properties) *uint8 { return &p.DeliveryMode }),
		{
			name: attrPrefix + "timestamp",
			get: func(p *broker.Properties) (broker.Attribute, bool) {
				if p.Timestamp.IsZero() {
					return broker.Attribute{}, false
				}
				return broker.Attribute{DataType: "Number.timestamp", StringValue: strconv.FormatInt(p.Timestamp.Unix(), 10)}, true
			},
			set: func(p *broker.Properties, a broker.Attribute) error {
				n, err := strconv.ParseInt(a.StringValue, 10, 64)
				if err == nil {
					p.Timestamp = time.Unix(n, 0).UTC()
				}
				return err
			},
		},
	}
)

func propertyByName(name string) (propertyAttr, bool) {
	for _, l := range [][]propertyAttr{firstProperties, laterProperties} {
		for _, pa := range l {
			if pa.name == name {
				return pa, true
			}
		}
	}
	return propertyAttr{}, false
}

// AttributesFromHeaders maps AMQP properties and application headers to at
// most 10 SQS message attributes, as documented at the top of this file.
// Nothing is dropped: what does not fit goes into the dlq-amqp attribute.
// Header values of types outside broker.Message's list are an error.
func AttributesFromHeaders(headers map[string]any, props broker.Properties) (map[string]broker.Attribute, error) {
	return attributesFromHeaders(headers, props, maxAttributes)
}

// attributesFromHeaders is AttributesFromHeaders with at most limit
// attributes (1 ≤ limit ≤ 10).
func attributesFromHeaders(headers map[string]any, props broker.Properties, limit int) (map[string]broker.Attribute, error) {
	out := map[string]broker.Attribute{}
	type slot struct {
		name string
		attr broker.Attribute
		prop bool
		raw  any
	}
	var slots []slot
	overflowProps := map[string]string{}
	addProps := func(l []propertyAttr) {
		for _, pa := range l {
			a, ok := pa.get(&props)
			switch {
			case !ok:
			case pa.fits != nil && !pa.fits(&props):
				overflowProps[strings.TrimPrefix(pa.name, attrPrefix)] = a.StringValue
			default:
				slots = append(slots, slot{name: pa.name, attr: a, prop: true})
			}
		}
	}
	addProps(firstProperties)
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	overflowHeaders := map[string]any{}
	for _, k := range names {
		v := headers[k]
		a, ok, err := headerAttribute(v)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		if !ok || !validAttributeName(k) || strings.HasPrefix(k, attrPrefix) {
			overflowHeaders[k] = v
			continue
		}
		slots = append(slots, slot{name: k, attr: a, raw: v})
	}
	addProps(laterProperties)
	room := limit
	if len(slots) > limit || len(overflowHeaders) > 0 || len(overflowProps) > 0 {
		room = limit - 1
	}
	for i, s := range slots {
		if i < room {
			out[s.name] = s.attr
			continue
		}
		if s.prop {
			overflowProps[strings.TrimPrefix(s.name, attrPrefix)] = attrText(s.attr)
		} else {
			overflowHeaders[s.name] = s.raw
		}
	}
	if len(overflowProps) > 0 || len(overflowHeaders) > 0 {
		doc := overflowDoc{Properties: map[string]json.RawMessage{}}
		for k, v := range overflowProps {
			b, err := broker.AppendTypedValue(nil, v)
			if err != nil {
				return nil, err
			}
			doc.Properties[k] = b
		}
		hk := make([]string, 0, len(overflowHeaders))
		for k := range overflowHeaders {
			hk = append(hk, k)
		}
		sort.Strings(hk)
		for _, k := range hk {
			kb, err := broker.AppendTypedValue(nil, k)
			if err != nil {
				return nil, err
			}
			vb, err := broker.AppendTypedValue(nil, overflowHeaders[k])
			if err != nil {
				return nil, fmt.Errorf("header %q: %w", k, err)
			}
			doc.Headers = append(doc.Headers, [2]json.RawMessage{kb, vb})
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		out[attrOverflow] = broker.Attribute{DataType: "String.json", StringValue: string(b)}
	}
	return out, nil
}

// overflowDoc is the JSON of the dlq-amqp attribute. Properties are keyed by
// their attribute name without the prefix; headers are [name, value] pairs
// (a list, so that names which are not valid UTF-8 survive). Every string,
// name and value uses broker's typed-value encoding.
type overflowDoc struct {
	Properties map[string]json.RawMessage `json:"properties,omitempty"`
	Headers    [][2]json.RawMessage       `json:"headers,omitempty"`
}

// attrText is the string form of a String/Number attribute (Binary ones are
// never properties).
func attrText(a broker.Attribute) string { return a.StringValue }

// HeadersFromAttributes is the inverse of AttributesFromHeaders: it restores
// the AMQP properties and typed headers from dlq- attributes, dlq-amqp and
// the custom data types. Attributes that dlq did not write become string
// (String*, Number*) or []byte (Binary*) headers.
func HeadersFromAttributes(attrs map[string]broker.Attribute) (map[string]any, broker.Properties, error) {
	var props broker.Properties
	headers := map[string]any{}
	var errs []error
	for k, a := range attrs {
		switch {
		case k == attrOverflow:
			var doc overflowDoc
			if err := json.Unmarshal([]byte(a.StringValue), &doc); err != nil {
				errs = append(errs, fmt.Errorf("attribute %s: %w", k, err))
				continue
			}
			for pk, raw := range doc.Properties {
				pv, err := broker.DecodeTypedValue(raw)
				ps, ok := pv.(string)
				if err != nil || !ok {
					errs = append(errs, fmt.Errorf("attribute %s property %s: not a typed string", k, pk))
					continue
				}
				if pa, ok := propertyByName(attrPrefix + pk); ok {
					if err := pa.set(&props, broker.Attribute{StringValue: ps}); err != nil {
						errs = append(errs, fmt.Errorf("attribute %s property %s: %w", k, pk, err))
					}
				}
			}
			for _, pair := range doc.Headers {
				kv, err := broker.DecodeTypedValue(pair[0])
				hk, ok := kv.(string)
				if err != nil || !ok {
					errs = append(errs, fmt.Errorf("attribute %s: header name is not a typed string", k))
					continue
				}
				v, err := broker.DecodeTypedValue(pair[1])
				if err != nil {
					errs = append(errs, fmt.Errorf("attribute %s header %q: %w", k, hk, err))
					continue
				}
				headers[hk] = v
			}
		case k == attrBodyEncoding:
			// Consumed when the body is read.
		case strings.HasPrefix(k, attrPrefix):
			if pa, ok := propertyByName(k); ok {
				if err := pa.set(&props, a); err != nil {
					errs = append(errs, fmt.Errorf("attribute %s: %w", k, err))
				}
				continue
			}
			headers[k] = attributeValue(a)
		default:
			v, err := attributeHeader(a)
			if err != nil {
				errs = append(errs, fmt.Errorf("attribute %s: %w", k, err))
				v = attributeValue(a)
			}
			headers[k] = v
		}
	}
	if len(headers) == 0 {
		headers = nil
	}
	return headers, props, errors.Join(errs...)
}

// validAttributeName reports whether SQS accepts name as a message attribute
// name: 1–256 of [A-Za-z0-9_.-], not starting with "AWS." or "Amazon." (any
// case), no leading, trailing or doubled period.
func validAttributeName(name string) bool {
	if name == "" || len(name) > 256 || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	l := strings.ToLower(name)
	if strings.HasPrefix(l, "aws.") || strings.HasPrefix(l, "amazon.") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// headerAttribute maps one header value to an attribute; ok is false for
// values that go to the overflow attribute (tables, arrays).
func headerAttribute(v any) (broker.Attribute, bool, error) {
	num := func(t, s string) (broker.Attribute, bool, error) {
		return broker.Attribute{DataType: "Number." + t, StringValue: s}, true, nil
	}
	switch x := v.(type) {
	case nil:
		return broker.Attribute{DataType: "String.void", StringValue: "null"}, true, nil
	case string:
		if x == "" {
			// SQS rejects empty values.
			return broker.Attribute{DataType: "String.empty", StringValue: "(empty)"}, true, nil
		}
		if !validBody(x) {
			return broker.Attribute{}, false, nil
		}
		return broker.Attribute{DataType: "String", StringValue: x}, true, nil
	case bool:
		return broker.Attribute{DataType: "String.bool", StringValue: strconv.FormatBool(x)}, true, nil
	case int8:
		return num("int8", strconv.FormatInt(int64(x), 10))
	case int16:
		return num("int16", strconv.FormatInt(int64(x), 10))
	case int32:
		return num("int32", strconv.FormatInt(int64(x), 10))
	case int64:
		return num("int64", strconv.FormatInt(x, 10))
	case int:
		return num("int64", strconv.FormatInt(int64(x), 10))
	case uint8:
		return num("uint8", strconv.FormatUint(uint64(x), 10))
	case uint16:
		return num("uint16", strconv.FormatUint(uint64(x), 10))
	case uint32:
		return num("uint32", strconv.FormatUint(uint64(x), 10))
	case uint64:
		return num("uint64", strconv.FormatUint(x, 10))
	case float32:
		return floatAttr("float32", float64(x), 32)
	case float64:
		return floatAttr("float64", x, 64)
	case broker.Decimal:
		return num("decimal", x.String())
	case time.Time:
		return num("timestamp", strconv.FormatInt(x.Unix(), 10))
	case []byte:
		if len(x) == 0 {
			return broker.Attribute{DataType: "String.emptybytes", StringValue: "(empty)"}, true, nil
		}
		return broker.Attribute{DataType: "Binary", BinaryValue: append([]byte(nil), x...)}, true, nil
	case map[string]any, []any:
		return broker.Attribute{}, false, nil
	}
	return broker.Attribute{}, false, fmt.Errorf("unsupported header type %T", v)
}

func floatAttr(t string, f float64, bits int) (broker.Attribute, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != 0 && (math.Abs(f) < 1e-100 || math.Abs(f) > 1e100) {
		// Number holds ±10^±128 with 38 digits; keep extremes as text.
		return broker.Attribute{DataType: "String." + t, StringValue: strconv.FormatFloat(f, 'g', -1, bits)}, true, nil
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if len(strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0")) > 38 {
		return broker.Attribute{DataType: "String." + t, StringValue: strconv.FormatFloat(f, 'g', -1, bits)}, true, nil
	}
	return broker.Attribute{DataType: "Number." + t, StringValue: s}, true, nil
}

func parseDecimal(s string) (broker.Decimal, error) {
	neg := strings.HasPrefix(s, "-")
	t := strings.TrimPrefix(s, "-")
	scale := 0
	if i := strings.IndexByte(t, '.'); i >= 0 {
		scale = len(t) - i - 1
		t = t[:i] + t[i+1:]
	}
	if scale > 255 {
		return broker.Decimal{}, fmt.Errorf("decimal %q: scale over 255", s)
	}
	n, err := strconv.ParseInt(t, 10, 32)
	if err != nil || t == "" || strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") {
		return broker.Decimal{}, fmt.Errorf("decimal %q: not a 32-bit decimal", s)
	}
	if neg {
		n = -n
	}
	return broker.Decimal{Scale: uint8(scale), Value: int32(n)}, nil
}

// attributeValue is the untyped value of an attribute: its string, or its
// bytes for Binary types.
func attributeValue(a broker.Attribute) any {
	if strings.HasPrefix(a.DataType, "Binary") {
		return append([]byte(nil), a.BinaryValue...)
	}
	return a.StringValue
}

// attributeHeader restores the typed header value from an attribute written
// by headerAttribute; attributes of other custom types come back untyped.
func attributeHeader(a broker.Attribute) (any, error) {
	s := a.StringValue
	switch a.DataType {
	case "String.void":
		return nil, nil
	case "String.empty":
		return "", nil
	case "String.emptybytes":
		return []byte{}, nil
	case "String.bool":
		return strconv.ParseBool(s)
	case "Number.int8":
		n, err := strconv.ParseInt(s, 10, 8)
		return int8(n), err
	case "Number.int16":
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err
	case "Number.int32":
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case "Number.int64":
		return strconv.ParseInt(s, 10, 64)
	case "Number.uint8":
		n, err := strconv.ParseUint(s, 10, 8)
		return uint8(n), err
	case "Number.uint16":
		n, err := strconv.ParseUint(s, 10, 16)
		return uint16(n), err
	case "Number.uint32":
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err
	case "Number.uint64":
		return strconv.ParseUint(s, 10, 64)
	case "Number.float32", "String.float32":
		f, err := strconv.ParseFloat(s, 32)
		return float32(f), err
	case "Number.float64", "String.float64":
		return strconv.ParseFloat(s, 64)
	case "Number.decimal":
		return parseDecimal(s)
	case "Number.timestamp":
		n, err := strconv.ParseInt(s, 10, 64)
		return time.Unix(n, 0).UTC(), err
	}
	return attributeValue(a), nil
}

// validBody reports whether SQS accepts s as a message body or string
// attribute: #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF,
// in valid UTF-8.
func validBody(s string) bool {
	for i, r := range s {
		switch {
		case r == 0xFFFD:
			// RuneError: either a real U+FFFD or invalid UTF-8.
			if !strings.HasPrefix(s[i:], "\uFFFD") {
				return false
			}
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}
