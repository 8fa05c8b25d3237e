package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	g, err := decodeGeneric(b)
	if err != nil {
		return err
	}
	if g == nil {
		*h = nil
		return nil
	}
	raw, ok := g.(map[string]any)
	if !ok {
		return errors.New(`"headers" is not an object`)
	}
	m := make(headerMap, len(raw))
	for k, r := range raw {
		v, err := fromGeneric(r, 0)
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

func decodeTyped(b []byte, depth int) (any, error) {
	g, err := decodeGeneric(b)
	if err != nil {
		return nil, fmt.Errorf("header value: %w", err)
	}
	return fromGeneric(g, depth)
}

// decodeGeneric decodes JSON once, keeping numbers as written.
func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	return g, nil
}

// fromGeneric converts one decoded {"type":T,"value":V} object into the Go
// value it stands for.
func fromGeneric(g any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("header nested deeper than %d levels", maxDepth)
	}
	obj, ok := g.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`header value is not an object {"type":…,"value":…}`)
	}
	typ, _ := obj["type"].(string)
	if typ == "" {
		return nil, fmt.Errorf(`header value without "type"`)
	}
	raw, hasValue := obj["value"]
	if typ == typeVoid {
		return nil, nil
	}
	if !hasValue || raw == nil {
		return nil, fmt.Errorf("header value of type %s without \"value\"", typ)
	}
	bad := func(err error) error {
		return fmt.Errorf("%s header value %s: %w", typ, describe(raw), err)
	}
	number := func() (string, error) {
		n, ok := raw.(json.Number)
		if !ok {
			return "", errors.New("not a number")
		}
		return string(n), nil
	}
	str := func() (string, error) {
		s, ok := raw.(string)
		if !ok {
			return "", errors.New("not a string")
		}
		return s, nil
	}
	ints := map[string]int{typeInt8: 8, typeInt16: 16, typeInt32: 32, typeInt64: 64}
	uints := map[string]int{typeUint8: 8, typeUint16: 16, typeUint32: 32, typeUint64: 64}
	if bits, ok := ints[typ]; ok {
		s, err := number()
		if err != nil {
			return nil, bad(err)
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, bad(err)
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	}
	if bits, ok := uints[typ]; ok {
		s, err := number()
		if err != nil {
			return nil, bad(err)
		}
		n, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return nil, bad(err)
		}
		switch bits {
		case 8:
			return uint8(n), nil
		case 16:
			return uint16(n), nil
		case 32:
			return uint32(n), nil
		}
		return n, nil
	}
	switch typ {
	case typeBool:
		b, ok := raw.(bool)
		if !ok {
			return nil, bad(errors.New("not true or false"))
		}
		return b, nil
	case typeFloat32, typeFloat64:
		bits := 64
		if typ == typeFloat32 {
			bits = 32
		}
		var f float64
		var err error
		switch x := raw.(type) {
		case json.Number:
			f, err = strconv.ParseFloat(string(x), bits)
		case string:
			f, err = specialFloat(x)
		default:
			err = errors.New("not a number")
		}
		if err != nil {
			return nil, bad(err)
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case typeDecimal:
		d, ok := raw.(map[string]any)
		sc, okS := d["scale"].(json.Number)
		v, okV := d["value"].(json.Number)
		if !ok || !okS || !okV {
			return nil, bad(errors.New(`decimal needs "scale" and "value"`))
		}
		scale, err := strconv.ParseUint(string(sc), 10, 8)
		if err != nil {
			return nil, bad(err)
		}
		value, err := strconv.ParseInt(string(v), 10, 32)
		if err != nil {
			return nil, bad(err)
		}
		return broker.Decimal{Scale: uint8(scale), Value: int32(value)}, nil
	case typeString:
		s, err := str()
		if err != nil {
			return nil, bad(err)
		}
		return s, nil
	case typeBytes:
		s, err := str()
		if err != nil {
			return nil, bad(err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, bad(err)
		}
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case typeTimestamp:
		s, err := str()
		if err != nil {
			return nil, bad(err)
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, bad(err)
		}
		return ts.UTC(), nil
	case typeTable:
		t, ok := raw.(map[string]any)
		if !ok {
			return nil, bad(errors.New("not an object"))
		}
		m := make(map[string]any, len(t))
		for k, e := range t {
			v, err := fromGeneric(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = v
		}
		return m, nil
	case typeArray:
		a, ok := raw.([]any)
		if !ok {
			return nil, bad(errors.New("not an array"))
		}
		out := make([]any, len(a))
		for i, e := range a {
			v, err := fromGeneric(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown header type %q", typ)
}

func specialFloat(s string) (float64, error) {
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

// describe renders a decoded value briefly for an error message.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
