package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Header value types as they are written in an archive. Each header value is
// an object {"type": T, "value": V}; see FormatHelp.
const (
	typeVoid      = "void"
	typeBool      = "bool"
	typeInt8      = "int8"
	typeInt16     = "int16"
	typeInt32     = "int32"
	typeInt64     = "int64"
	typeUint8     = "uint8"
	typeUint16    = "uint16"
	typeUint32    = "uint32"
	typeUint64    = "uint64"
	typeFloat32   = "float32"
	typeFloat64   = "float64"
	typeDecimal   = "decimal"
	typeString    = "string"
	typeBytes     = "bytes"
	typeTimestamp = "timestamp"
	typeTable     = "table"
	typeArray     = "array"
)

// typedValue is one header value with its AMQP type kept beside it.
type typedValue struct{ v any }

type typedJSON struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

func (t typedValue) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := appendTyped(&buf, t.v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (t *typedValue) UnmarshalJSON(b []byte) error {
	v, err := decodeTyped(b, 0)
	if err != nil {
		return err
	}
	t.v = v
	return nil
}

// headerMap is the "headers" object; errors name the header.
type headerMap map[string]typedValue

func (h headerMap) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		ks, _ := json.Marshal(k)
		buf.Write(ks)
		buf.WriteByte(':')
		if err := appendTyped(&buf, h[k].v, 0); err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func (h *headerMap) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*h = nil
		return nil
	}
	m := make(headerMap, len(raw))
	for k, r := range raw {
		v, err := decodeTyped(r, 0)
		if err != nil {
			return fmt.Errorf("header %q: %w", k, err)
		}
		m[k] = typedValue{v}
	}
	*h = m
	return nil
}

// maxDepth bounds nesting of tables and arrays so that a hostile file cannot
// exhaust the stack.
const maxDepth = 64

func appendTyped(buf *bytes.Buffer, v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("header nested deeper than %d levels", maxDepth)
	}
	kv := func(typ string, value []byte) {
		buf.WriteString(`{"type":"`)
		buf.WriteString(typ)
		buf.WriteString(`","value":`)
		buf.Write(value)
		buf.WriteByte('}')
	}
	num := func(typ string, s string) { kv(typ, []byte(s)) }
	switch x := v.(type) {
	case nil:
		buf.WriteString(`{"type":"void"}`)
	case bool:
		num(typeBool, strconv.FormatBool(x))
	case int8:
		num(typeInt8, strconv.FormatInt(int64(x), 10))
	case int16:
		num(typeInt16, strconv.FormatInt(int64(x), 10))
	case int32:
		num(typeInt32, strconv.FormatInt(int64(x), 10))
	case int64:
		num(typeInt64, strconv.FormatInt(x, 10))
	case int:
		num(typeInt64, strconv.FormatInt(int64(x), 10))
	case uint8:
		num(typeUint8, strconv.FormatUint(uint64(x), 10))
	case uint16:
		num(typeUint16, strconv.FormatUint(uint64(x), 10))
	case uint32:
		num(typeUint32, strconv.FormatUint(uint64(x), 10))
	case uint64:
		num(typeUint64, strconv.FormatUint(x, 10))
	case float32:
		kv(typeFloat32, floatJSON(float64(x), 32))
	case float64:
		kv(typeFloat64, floatJSON(x, 64))
	case broker.Decimal:
		num(typeDecimal, `{"scale":`+strconv.Itoa(int(x.Scale))+`,"value":`+strconv.FormatInt(int64(x.Value), 10)+`}`)
	case string:
		s, _ := json.Marshal(x)
		kv(typeString, s)
	case []byte:
		kv(typeBytes, []byte(`"`+base64.StdEncoding.EncodeToString(x)+`"`))
	case time.Time:
		kv(typeTimestamp, []byte(`"`+x.UTC().Format(time.RFC3339Nano)+`"`))
	case map[string]any:
		buf.WriteString(`{"type":"table","value":{`)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			ks, _ := json.Marshal(k)
			buf.Write(ks)
			buf.WriteByte(':')
			if err := appendTyped(buf, x[k], depth+1); err != nil {
				return err
			}
		}
		buf.WriteString(`}}`)
	case []any:
		buf.WriteString(`{"type":"array","value":[`)
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := appendTyped(buf, e, depth+1); err != nil {
				return err
			}
		}
		buf.WriteString(`]}`)
	default:
		// Named map and slice types (an SDK's Table) are written as tables
		// and arrays; anything else cannot be kept losslessly.
		rv := reflect.ValueOf(v)
		switch {
		case rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String:
			m := make(map[string]any, rv.Len())
			for it := rv.MapRange(); it.Next(); {
				m[it.Key().String()] = it.Value().Interface()
			}
			return appendTyped(buf, m, depth)
		case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8:
			a := make([]any, rv.Len())
			for i := range a {
				a[i] = rv.Index(i).Interface()
			}
			return appendTyped(buf, a, depth)
		}
		return fmt.Errorf("header value of type %T cannot be archived", v)
	}
	return nil
}

// floatJSON writes a float as a JSON number, or as the strings "NaN",
// "+Inf", "-Inf", which JSON numbers cannot express.
func floatJSON(f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`)
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`)
	case f == 0 && math.Signbit(f):
		return []byte(`"-0"`)
	}
	return strconv.AppendFloat(nil, f, 'g', -1, bits)
}

func parseFloat(raw json.RawMessage, bits int) (float64, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "+Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		case "-0":
			return math.Copysign(0, -1), nil
		}
		return 0, fmt.Errorf("float %q is not a number", s)
	}
	return strconv.ParseFloat(string(raw), bits)
}

func decodeTyped(b []byte, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("header nested deeper than %d levels", maxDepth)
	}
	var t typedJSON
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("header value: %w", err)
	}
	if t.Type == "" {
		return nil, fmt.Errorf(`header value without "type"`)
	}
	if t.Type != typeVoid && len(t.Value) == 0 {
		return nil, fmt.Errorf("header value of type %s without \"value\"", t.Type)
	}
	intOf := func(bits int) (int64, error) { return strconv.ParseInt(string(t.Value), 10, bits) }
	uintOf := func(bits int) (uint64, error) { return strconv.ParseUint(string(t.Value), 10, bits) }
	var (
		v   any
		err error
	)
	switch t.Type {
	case typeVoid:
		return nil, nil
	case typeBool:
		var x bool
		err = json.Unmarshal(t.Value, &x)
		v = x
	case typeInt8:
		var n int64
		n, err = intOf(8)
		v = int8(n)
	case typeInt16:
		var n int64
		n, err = intOf(16)
		v = int16(n)
	case typeInt32:
		var n int64
		n, err = intOf(32)
		v = int32(n)
	case typeInt64:
		var n int64
		n, err = intOf(64)
		v = n
	case typeUint8:
		var n uint64
		n, err = uintOf(8)
		v = uint8(n)
	case typeUint16:
		var n uint64
		n, err = uintOf(16)
		v = uint16(n)
	case typeUint32:
		var n uint64
		n, err = uintOf(32)
		v = uint32(n)
	case typeUint64:
		v, err = uintOf(64)
	case typeFloat32:
		var f float64
		f, err = parseFloat(t.Value, 32)
		v = float32(f)
	case typeFloat64:
		v, err = parseFloat(t.Value, 64)
	case typeDecimal:
		var d struct {
			Scale *uint8 `json:"scale"`
			Value *int32 `json:"value"`
		}
		err = json.Unmarshal(t.Value, &d)
		if err == nil && (d.Scale == nil || d.Value == nil) {
			err = fmt.Errorf(`decimal needs "scale" and "value"`)
		}
		if err == nil {
			v = broker.Decimal{Scale: *d.Scale, Value: *d.Value}
		}
	case typeString:
		var s string
		err = json.Unmarshal(t.Value, &s)
		v = s
	case typeBytes:
		var s string
		if err = json.Unmarshal(t.Value, &s); err == nil {
			var b []byte
			b, err = base64.StdEncoding.DecodeString(s)
			if b == nil {
				b = []byte{}
			}
			v = b
		}
	case typeTimestamp:
		var s string
		if err = json.Unmarshal(t.Value, &s); err == nil {
			var ts time.Time
			ts, err = time.Parse(time.RFC3339Nano, s)
			v = ts.UTC()
		}
	case typeTable:
		var raw map[string]json.RawMessage
		if err = json.Unmarshal(t.Value, &raw); err == nil {
			if raw == nil {
				return nil, fmt.Errorf("table value is null")
			}
			m := make(map[string]any, len(raw))
			for k, r := range raw {
				e, err := decodeTyped(r, depth+1)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				m[k] = e
			}
			v = m
		}
	case typeArray:
		var raw []json.RawMessage
		if err = json.Unmarshal(t.Value, &raw); err == nil {
			if raw == nil {
				return nil, fmt.Errorf("array value is null")
			}
			a := make([]any, len(raw))
			for i, r := range raw {
				e, err := decodeTyped(r, depth+1)
				if err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
				a[i] = e
			}
			v = a
		}
	default:
		return nil, fmt.Errorf("unknown header type %q", t.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s header value %s: %w", t.Type, t.Value, err)
	}
	return v, nil
}
