package broker

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
	"strings"
	"time"
	"unicode/utf8"
)

// One piece, though long: writing and reading the encoding are one
// format, kept side by side so that each type reads back as written.
//
// The typed-value encoding
//
// A header value is written as a JSON object that keeps its AMQP type beside
// it, {"type": T, "value": V}. Archives hold headers this way, and so does
// the SQS adapter's overflow attribute. The types and their values:
//
//	void                      no "value"
//	bool                      true or false
//	int8 int16 int32 int64    a JSON number with every digit
//	uint8 uint16 uint32 uint64
//	float32 float64           a JSON number; "NaN", "+Inf", "-Inf" and "-0"
//	                          as strings
//	decimal                   {"scale": 2, "value": -105}
//	string                    a JSON string; a string that is not valid
//	                          UTF-8 is its base64 with "encoding": "base64"
//	bytes                     base64
//	timestamp                 RFC 3339 with nanoseconds, UTC; outside the
//	                          years 0 to 9999 a number: seconds since the
//	                          Unix epoch (AppendTimeJSON)
//	table                     {name: typed value, …}
//	array                     [typed value, …]
//
// Integers are written as numbers and read without passing through a
// float, so a uint64 above 2^53 comes back exactly. Readers also accept
// what earlier dlq versions wrote in SQS overflow attributes: integers and
// floats as strings, timestamps as Unix seconds.

// Type names of the typed-value encoding.
const (
	TypedVoid      = "void"
	TypedBool      = "bool"
	TypedInt8      = "int8"
	TypedInt16     = "int16"
	TypedInt32     = "int32"
	TypedInt64     = "int64"
	TypedUint8     = "uint8"
	TypedUint16    = "uint16"
	TypedUint32    = "uint32"
	TypedUint64    = "uint64"
	TypedFloat32   = "float32"
	TypedFloat64   = "float64"
	TypedDecimal   = "decimal"
	TypedString    = "string"
	TypedBytes     = "bytes"
	TypedTimestamp = "timestamp"
	TypedTable     = "table"
	TypedArray     = "array"
)

// MaxTypedDepth bounds the nesting of tables and arrays, so that hostile
// input cannot exhaust the stack.
const MaxTypedDepth = 64

// AppendTypedValue appends v, one of the header types broker.Message lists,
// as {"type": T, "value": V}. Tables are written with sorted keys, so the
// same value always gives the same bytes. Named map and slice types (an
// SDK's table) are written as tables and arrays; any other type is an
// error.
func AppendTypedValue(dst []byte, v any) ([]byte, error) {
	return appendTyped(dst, v, 0)
}

func appendTyped(buf []byte, v any, depth int) ([]byte, error) {
	if depth > MaxTypedDepth {
		return buf, fmt.Errorf("header nested deeper than %d levels", MaxTypedDepth)
	}
	open := func(typ string) {
		buf = append(buf, `{"type":"`...)
		buf = append(buf, typ...)
		buf = append(buf, `","value":`...)
	}
	integer := func(typ string, n int64) {
		open(typ)
		buf = strconv.AppendInt(buf, n, 10)
		buf = append(buf, '}')
	}
	unsigned := func(typ string, n uint64) {
		open(typ)
		buf = strconv.AppendUint(buf, n, 10)
		buf = append(buf, '}')
	}
	switch x := v.(type) {
	case nil:
		buf = append(buf, `{"type":"void"}`...)
	case bool:
		open(TypedBool)
		buf = strconv.AppendBool(buf, x)
		buf = append(buf, '}')
	case int8:
		integer(TypedInt8, int64(x))
	case int16:
		integer(TypedInt16, int64(x))
	case int32:
		integer(TypedInt32, int64(x))
	case int64:
		integer(TypedInt64, x)
	case int:
		integer(TypedInt64, int64(x))
	case uint8:
		unsigned(TypedUint8, uint64(x))
	case uint16:
		unsigned(TypedUint16, uint64(x))
	case uint32:
		unsigned(TypedUint32, uint64(x))
	case uint64:
		unsigned(TypedUint64, x)
	case float32:
		open(TypedFloat32)
		buf = appendFloat(buf, float64(x), 32)
		buf = append(buf, '}')
	case float64:
		open(TypedFloat64)
		buf = appendFloat(buf, x, 64)
		buf = append(buf, '}')
	case Decimal:
		open(TypedDecimal)
		buf = append(buf, `{"scale":`...)
		buf = strconv.AppendUint(buf, uint64(x.Scale), 10)
		buf = append(buf, `,"value":`...)
		buf = strconv.AppendInt(buf, int64(x.Value), 10)
		buf = append(buf, `}}`...)
	case string:
		open(TypedString)
		if !utf8.ValidString(x) {
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, []byte(x))
			buf = append(buf, `","encoding":"base64"}`...)
			break
		}
		buf = appendJSONString(buf, x)
		buf = append(buf, '}')
	case []byte:
		open(TypedBytes)
		buf = append(buf, '"')
		buf = base64.StdEncoding.AppendEncode(buf, x)
		buf = append(buf, `"}`...)
	case time.Time:
		open(TypedTimestamp)
		buf = AppendTimeJSON(buf, x)
		buf = append(buf, '}')
	case map[string]any:
		buf = append(buf, `{"type":"table","value":{`...)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, EncodeName(k))
			buf = append(buf, ':')
			var err error
			if buf, err = appendTyped(buf, x[k], depth+1); err != nil {
				return buf, err
			}
		}
		buf = append(buf, `}}`...)
	case []any:
		buf = append(buf, `{"type":"array","value":[`...)
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendTyped(buf, e, depth+1); err != nil {
				return buf, err
			}
		}
		buf = append(buf, `]}`...)
	default:
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
		return buf, fmt.Errorf("header value of type %T cannot be encoded", v)
	}
	return buf, nil
}

// nameEscape starts a header name or table key written in base64.
const nameEscape = "\x00base64:"

// EncodeName is a header name or table key as a JSON object key. JSON keys
// are UTF-8 text and AMQP names are any bytes, so a name that is not UTF-8
// is written as "\u0000base64:" and its bytes in base64 (so is a name that
// starts with NUL, which makes the escape unambiguous); every other name is
// itself.
func EncodeName(name string) string {
	if utf8.ValidString(name) && !strings.HasPrefix(name, "\x00") {
		return name
	}
	return nameEscape + base64.StdEncoding.EncodeToString([]byte(name))
}

// DecodeName is the inverse of EncodeName.
func DecodeName(key string) (string, error) {
	if !strings.HasPrefix(key, nameEscape) {
		return key, nil
	}
	b, err := base64.StdEncoding.DecodeString(key[len(nameEscape):])
	if err != nil {
		return "", fmt.Errorf("name %q: not base64 after the escape: %w", key, err)
	}
	return string(b), nil
}

// appendJSONString appends s as encoding/json writes it.
func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(buf, b...)
}

// appendFloat writes a float as a JSON number, or as the strings "NaN",
// "+Inf", "-Inf" and "-0", which JSON numbers cannot express.
func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(buf, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(buf, `"-Inf"`...)
	case f == 0 && math.Signbit(f):
		return append(buf, `"-0"`...)
	}
	return strconv.AppendFloat(buf, f, 'g', -1, bits)
}

// DecodeTypedValue reads one value written by AppendTypedValue. Errors name
// the type and the value that is wrong.
func DecodeTypedValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("header value: %w", err)
	}
	if dec.More() {
		return nil, errors.New("header value: text after the value")
	}
	return TypedValueFromJSON(g)
}

// TypedValueFromJSON is DecodeTypedValue for a value already decoded by
// encoding/json with UseNumber (map[string]any, []any, json.Number…).
func TypedValueFromJSON(g any) (any, error) { return fromJSON(g, 0) }

func fromJSON(g any, depth int) (any, error) {
	if depth > MaxTypedDepth {
		return nil, fmt.Errorf("header nested deeper than %d levels", MaxTypedDepth)
	}
	obj, ok := g.(map[string]any)
	if !ok {
		return nil, errors.New(`header value is not an object {"type":…,"value":…}`)
	}
	typ, _ := obj["type"].(string)
	if typ == "" {
		return nil, errors.New(`header value without "type"`)
	}
	raw, hasValue := obj["value"]
	if typ == TypedVoid {
		return nil, nil
	}
	if !hasValue || raw == nil {
		return nil, fmt.Errorf("header value of type %s without \"value\"", typ)
	}
	t := []byte(typ)
	switch x := raw.(type) {
	case json.Number:
		return TypedFromNumber(t, []byte(x))
	case bool:
		return TypedFromBool(t, x)
	case string:
		if enc, ok := obj["encoding"]; ok {
			if typ != TypedString || enc != "base64" {
				return nil, fmt.Errorf("%s header value: unknown encoding %s", typ, describe(enc))
			}
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, typedError(t, x, err)
			}
			return string(b), nil
		}
		return TypedFromString(t, x)
	case map[string]any:
		switch typ {
		case TypedDecimal:
			sc, okS := x["scale"].(json.Number)
			v, okV := x["value"].(json.Number)
			if !okS || !okV {
				return nil, typedError(t, x, errors.New(`decimal needs "scale" and "value"`))
			}
			return TypedFromDecimal([]byte(sc), []byte(v))
		case TypedTable:
			m := make(map[string]any, len(x))
			for k, e := range x {
				name, err := DecodeName(k)
				if err != nil {
					return nil, err
				}
				v, err := fromJSON(e, depth+1)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				m[name] = v
			}
			return m, nil
		}
	case []any:
		if typ == TypedArray {
			out := make([]any, len(x))
			for i, e := range x {
				v, err := fromJSON(e, depth+1)
				if err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
				out[i] = v
			}
			return out, nil
		}
	}
	return nil, wrongKind(t, raw)
}

// TypedFromNumber is the value of type typ written as the JSON number lit. It
// is for decoders that read the JSON themselves; every other kind of value
// goes to TypedFromString, TypedFromBool, TypedFromDecimal, or is a table or array.
func TypedFromNumber(typ, lit []byte) (any, error) {
	// One case a type, the common ones first: archives decode this for
	// every header value.
	switch string(typ) {
	case TypedInt64:
		if n, ok := ParseIntBytes(lit, 64); ok {
			return n, nil
		}
	case TypedInt32:
		if n, ok := ParseIntBytes(lit, 32); ok {
			return int32(n), nil
		}
	case TypedInt16:
		if n, ok := ParseIntBytes(lit, 16); ok {
			return int16(n), nil
		}
	case TypedInt8:
		if n, ok := ParseIntBytes(lit, 8); ok {
			return int8(n), nil
		}
	case TypedUint64:
		if n, ok := ParseUintBytes(lit, 64); ok {
			return n, nil
		}
	case TypedUint32:
		if n, ok := ParseUintBytes(lit, 32); ok {
			return uint32(n), nil
		}
	case TypedUint16:
		if n, ok := ParseUintBytes(lit, 16); ok {
			return uint16(n), nil
		}
	case TypedUint8:
		if n, ok := ParseUintBytes(lit, 8); ok {
			return uint8(n), nil
		}
	case TypedFloat64:
		if f, err := strconv.ParseFloat(string(lit), 64); err == nil {
			return f, nil
		}
	case TypedFloat32:
		if f, err := strconv.ParseFloat(string(lit), 32); err == nil {
			return float32(f), nil
		}
	case TypedTimestamp:
		// A time outside the years 0 to 9999 (AppendTimeJSON); earlier SQS
		// overflow attributes held Unix seconds too.
		t, err := TimeFromNumber(lit)
		if err != nil {
			return nil, typedError(typ, json.Number(lit), err)
		}
		return t, nil
	default:
		return nil, wrongKind(typ, json.Number(lit))
	}
	return nil, numberError(typ, lit)
}

// numberError says why lit is not a number of type typ.
func numberError(typ, lit []byte) error {
	var err error
	switch bits := intBits(typ); string(typ) {
	case TypedInt8, TypedInt16, TypedInt32, TypedInt64, TypedTimestamp:
		_, err = strconv.ParseInt(string(lit), 10, bits)
	case TypedUint8, TypedUint16, TypedUint32, TypedUint64:
		_, err = strconv.ParseUint(string(lit), 10, bits)
	default:
		_, err = strconv.ParseFloat(string(lit), bits)
	}
	return typedError(typ, json.Number(lit), err)
}

// TypedFromString is the value of type typ written as the JSON string s (after
// unescaping).
func TypedFromString(typ []byte, s string) (any, error) {
	switch string(typ) {
	case TypedString:
		return s, nil
	case TypedBytes:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, typedError(typ, s, err)
		}
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case TypedTimestamp:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, typedError(typ, s, err)
		}
		return t.UTC(), nil
	case TypedFloat32, TypedFloat64:
		bits := intBits(typ)
		f, err := specialFloat(s)
		if err != nil {
			// Earlier SQS overflow attributes held every float as text.
			var perr error
			if f, perr = strconv.ParseFloat(s, bits); perr != nil {
				return nil, typedError(typ, s, err)
			}
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case TypedInt8, TypedInt16, TypedInt32, TypedInt64, TypedUint8, TypedUint16, TypedUint32, TypedUint64:
		// Earlier SQS overflow attributes held uint64 as text.
		if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
			return nil, typedError(typ, s, errors.New("not a number"))
		}
		return TypedFromNumber(typ, []byte(s))
	}
	return nil, wrongKind(typ, s)
}

// TypedFromBool is the value of type typ written as a JSON boolean.
func TypedFromBool(typ []byte, b bool) (any, error) {
	if string(typ) == TypedBool {
		return b, nil
	}
	return nil, wrongKind(typ, b)
}

// TypedFromDecimal is the decimal {"scale": scale, "value": value}, given the
// two JSON numbers.
func TypedFromDecimal(scale, value []byte) (Decimal, error) {
	s, ok := ParseUintBytes(scale, 8)
	if !ok {
		_, err := strconv.ParseUint(string(scale), 10, 8)
		return Decimal{}, typedError([]byte(TypedDecimal), json.Number(scale), err)
	}
	v, ok := ParseIntBytes(value, 32)
	if !ok {
		_, err := strconv.ParseInt(string(value), 10, 32)
		return Decimal{}, typedError([]byte(TypedDecimal), json.Number(value), err)
	}
	return Decimal{Scale: uint8(s), Value: int32(v)}, nil
}

func intBits(typ []byte) int {
	switch string(typ) {
	case TypedInt8, TypedUint8:
		return 8
	case TypedInt16, TypedUint16:
		return 16
	case TypedInt32, TypedUint32, TypedFloat32:
		return 32
	}
	return 64
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

func typedError(typ []byte, raw any, err error) error {
	return fmt.Errorf("%s header value %s: %w", typ, describe(raw), err)
}

func wrongKind(typ []byte, raw any) error {
	var want string
	switch string(typ) {
	case TypedBool:
		want = "not true or false"
	case TypedInt8, TypedInt16, TypedInt32, TypedInt64, TypedUint8, TypedUint16, TypedUint32, TypedUint64, TypedFloat32, TypedFloat64:
		want = "not a number"
	case TypedDecimal:
		want = `decimal needs "scale" and "value"`
	case TypedString, TypedBytes, TypedTimestamp:
		want = "not a string"
	case TypedTable:
		want = "not an object"
	case TypedArray:
		want = "not an array"
	default:
		return fmt.Errorf("unknown header type %q", typ)
	}
	return typedError(typ, raw, errors.New(want))
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
