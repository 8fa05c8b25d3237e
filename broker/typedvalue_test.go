package broker

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

type namedTable map[string]any

func TestTypedValueRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 1, 12, 30, 45, 123456789, time.UTC)
	tests := []struct {
		name string
		v    any
		want any    // when decoding gives another Go type
		text string // part of the encoding, when it matters
	}{
		{name: "void", v: nil, text: `{"type":"void"}`},
		{name: "bool", v: true},
		{name: "int8", v: int8(math.MinInt8)},
		{name: "int16", v: int16(math.MaxInt16)},
		{name: "int32", v: int32(math.MinInt32)},
		{name: "int64", v: int64(math.MinInt64)},
		{name: "int", v: 42, want: int64(42)},
		{name: "uint8", v: uint8(255)},
		{name: "uint16", v: uint16(65535)},
		{name: "uint32", v: uint32(math.MaxUint32)},
		{name: "uint64 max", v: uint64(math.MaxUint64), text: `"value":18446744073709551615}`},
		{name: "uint64 above 2^53", v: uint64(1<<53 + 1), text: `"value":9007199254740993}`},
		{name: "float32", v: float32(1.1)},
		{name: "float64", v: 0.1},
		{name: "float64 -0", v: math.Copysign(0, -1), text: `"-0"`},
		{name: "float64 +Inf", v: math.Inf(1), text: `"+Inf"`},
		{name: "decimal", v: Decimal{Scale: 2, Value: -105}, text: `{"scale":2,"value":-105}`},
		{name: "string", v: "héllo \"w\"\n<&>"},
		{name: "string not UTF-8", v: string([]byte{0xff, 'a', 0xfe}), text: `"value":"/2H+","encoding":"base64"`},
		{name: "bytes", v: []byte{0, 1, 0xff}},
		{name: "bytes empty", v: []byte{}},
		{name: "timestamp", v: ts, text: `"2026-11-01T12:30:45.123456789Z"`},
		{name: "timestamp not UTC", v: ts.In(time.FixedZone("x", 3600)), want: ts},
		{name: "table", v: map[string]any{"b": uint64(math.MaxUint64), "a": []any{int16(3), nil}}},
		{name: "named table", v: namedTable{"k": "v"}, want: map[string]any{"k": "v"}},
		{name: "array", v: []any{"x", map[string]any{}, []any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendTypedValue(nil, tt.v)
			if err != nil {
				t.Fatalf("AppendTypedValue: %v", err)
			}
			if !strings.Contains(string(b), tt.text) {
				t.Errorf("encoding %s does not contain %s", b, tt.text)
			}
			got, err := DecodeTypedValue(b)
			if err != nil {
				t.Fatalf("DecodeTypedValue(%s): %v", b, err)
			}
			want := tt.v
			if tt.want != nil {
				want = tt.want
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeTypedValue(%s) (-want +got):\n%s", b, testdiff.Diff(want, got))
			}
		})
	}
	t.Run("NaN", func(t *testing.T) {
		b, _ := AppendTypedValue(nil, float32(math.NaN()))
		got, err := DecodeTypedValue(b)
		if f, ok := got.(float32); err != nil || !ok || !math.IsNaN(float64(f)) {
			t.Errorf("DecodeTypedValue(%s) = %#v, %v; want float32 NaN", b, got, err)
		}
	})
}

// Earlier dlq versions wrote SQS overflow attributes with integers and
// floats as strings and timestamps as Unix seconds.
func TestTypedValueReadsEarlierForms(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`{"type":"uint64","value":"18446744073709551615"}`, uint64(math.MaxUint64)},
		{`{"type":"uint64","value":"9007199254740993"}`, uint64(1<<53 + 1)},
		{`{"type":"int64","value":"-7"}`, int64(-7)},
		{`{"type":"float32","value":"1.5"}`, float32(1.5)},
		{`{"type":"float64","value":"0.1"}`, 0.1},
		{`{"type":"float64","value":"-Inf"}`, math.Inf(-1)},
		{`{"type":"timestamp","value":1793536245}`, time.Unix(1793536245, 0).UTC()},
		{`{"type":"string","value":"/2H+","encoding":"base64"}`, string([]byte{0xff, 'a', 0xfe})},
		{`{"value":1,"type":"int8"}`, int8(1)},
	}
	for _, tt := range tests {
		got, err := DecodeTypedValue([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DecodeTypedValue(%s) = %v; (-want +got):\n%s", tt.in, err, testdiff.Diff(tt.want, got))
		}
	}
}

func TestTypedValueErrors(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","value":[`, MaxTypedDepth+2) + `{"type":"void"}` + strings.Repeat(`]}`, MaxTypedDepth+2)
	tests := []struct{ in, want string }{
		{`{"type":"int128","value":1}`, `unknown header type "int128"`},
		{`{"type":"int8","value":300}`, `int8 header value 300: strconv.ParseInt: parsing "300": value out of range`},
		{`{"type":"uint64","value":-1}`, `uint64 header value -1`},
		{`{"type":"bool","value":"yes"}`, `bool header value "yes": not true or false`},
		{`{"type":"bytes","value":"!"}`, `bytes header value "!"`},
		{`{"type":"float64","value":"pi"}`, `float "pi" is not a number`},
		{`{"type":"string","value":"x","encoding":"hex"}`, `unknown encoding "hex"`},
		{`{"type":"decimal","value":{"scale":1}}`, `decimal needs "scale" and "value"`},
		{`{"type":"string"}`, `header value of type string without "value"`},
		{`{"value":1}`, `header value without "type"`},
		{`[1]`, `header value is not an object`},
		{deep, `nested deeper than 64 levels`},
	}
	for _, tt := range tests {
		_, err := DecodeTypedValue([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeTypedValue(%.60s) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
	if _, err := AppendTypedValue(nil, struct{}{}); err == nil || !strings.Contains(err.Error(), "struct {}") {
		t.Errorf("AppendTypedValue(struct{}{}) = %v, want an error naming the type", err)
	}
}

// FuzzTypedValue: whatever DecodeTypedValue accepts, AppendTypedValue
// writes so that it reads back the same.
func FuzzTypedValue(f *testing.F) {
	for _, s := range []string{
		`{"type":"uint64","value":18446744073709551615}`, `{"type":"string","value":"/2H+","encoding":"base64"}`,
		`{"type":"table","value":{"a":{"type":"array","value":[{"type":"float32","value":"NaN"},{"type":"decimal","value":{"scale":2,"value":-5}}]}}}`,
		`{"type":"timestamp","value":"2026-11-01T12:30:45.5+01:00"}`, `{"type":"float64","value":"0.1"}`, `{"type":"bytes","value":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeTypedValue(b)
		if err != nil {
			return
		}
		enc, err := AppendTypedValue(nil, v)
		if err != nil {
			t.Fatalf("AppendTypedValue(%#v) of decoded %s: %v", v, b, err)
		}
		w, err := DecodeTypedValue(enc)
		if err != nil {
			t.Fatalf("DecodeTypedValue(%s), written from %s: %v", enc, b, err)
		}
		again, _ := AppendTypedValue(nil, w)
		if string(again) != string(enc) {
			t.Fatalf("round trip of %s:\n first %s\nsecond %s", b, enc, again)
		}
	})
}
