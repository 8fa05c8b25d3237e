package sqs

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestAttributesFromHeadersRoundTrip(t *testing.T) {
	ts := time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]any
		props   broker.Properties
		want    []string // attribute names expected
	}{
		{
			name:    "properties only",
			props:   broker.Properties{ContentType: "application/json", CorrelationID: "c-1", MessageID: "m-1", Timestamp: ts, Priority: 5, DeliveryMode: 2},
			want:    []string{"dlq-content-type", "dlq-correlation-id", "dlq-message-id", "dlq-timestamp", "dlq-priority", "dlq-delivery-mode"},
			headers: nil,
		},
		{
			name: "every scalar type",
			headers: map[string]any{
				"s": "text", "b": true, "i8": int8(-8), "i16": int16(-16), "i32": int32(-32), "i64": int64(-64),
				"u8": uint8(8), "u16": uint16(16), "u32": uint32(32),
			},
			want: []string{"s", "b", "i8", "i16", "i32", "i64", "u8", "u16", "u32"},
		},
		{
			name: "floats decimals times bytes void empty",
			headers: map[string]any{
				"f32": float32(1.5), "f64": 3.25, "nan": math.NaN(), "inf": math.Inf(-1), "dec": broker.Decimal{Scale: 2, Value: -12345},
				"t": ts, "bin": []byte{0, 1, 2, 255}, "nil": nil, "empty": "",
			},
			want: []string{"f32", "f64", "nan", "inf", "dec", "t", "bin", "nil", "empty"},
		},
		{
			name: "tables arrays and bad names overflow",
			headers: map[string]any{
				"x-death":      []any{map[string]any{"count": int64(3), "queue": "orders", "time": ts}},
				"has space":    "v",
				"AWS.reserved": "v",
				"ok":           "v",
			},
			props: broker.Properties{ContentType: "text/plain"},
			want:  []string{"dlq-content-type", "ok", attrOverflow},
		},
		{
			name: "more than ten",
			headers: func() map[string]any {
				h := map[string]any{}
				for i := range 15 {
					h[fmt.Sprintf("h%02d", i)] = int32(i)
				}
				return h
			}(),
			props: broker.Properties{ContentType: "application/json", AppID: "billing", Type: "invoice"},
			want:  []string{"dlq-content-type", "h00", "h01", "h02", "h03", "h04", "h05", "h06", "h07", attrOverflow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs, err := AttributesFromHeaders(tt.headers, tt.props)
			if err != nil {
				t.Fatal(err)
			}
			checkAttributes(t, attrs)
			if len(attrs) != len(tt.want) {
				t.Errorf("got %d attributes %v, want %v", len(attrs), keys(attrs), tt.want)
			}
			for _, k := range tt.want {
				if _, ok := attrs[k]; !ok {
					t.Errorf("attribute %q missing; have %v", k, keys(attrs))
				}
			}
			h, p, err := HeadersFromAttributes(attrs)
			if err != nil {
				t.Fatal(err)
			}
			assertHeadersEqual(t, tt.headers, h)
			if !reflect.DeepEqual(p, tt.props) {
				t.Errorf("properties (-want +got):\n%s", testdiff.Diff(tt.props, p))
			}
		})
	}
}

func TestAttributeTypes(t *testing.T) {
	attrs, err := AttributesFromHeaders(map[string]any{"n": int32(7), "f": 2.5, "bin": []byte("x"), "flag": false}, broker.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"n": "Number.int32", "f": "Number.float64", "bin": "Binary", "flag": "String.bool"}
	for k, dt := range want {
		if attrs[k].DataType != dt {
			t.Errorf("%s: data type %q, want %q", k, attrs[k].DataType, dt)
		}
	}
	if attrs["n"].StringValue != "7" {
		t.Errorf("n = %q", attrs["n"].StringValue)
	}
}

func TestHeadersFromForeignAttributes(t *testing.T) {
	h, p, err := HeadersFromAttributes(map[string]broker.Attribute{
		"tenant": {DataType: "String", StringValue: "acme"},
		"n":      {DataType: "Number", StringValue: "12"},
		"raw":    {DataType: "Binary.gz", BinaryValue: []byte{1}},
		"custom": {DataType: "String.uuid", StringValue: "abc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tenant": "acme", "n": "12", "raw": []byte{1}, "custom": "abc"}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers (-want +got):\n%s", testdiff.Diff(want, h))
	}
	if p != (broker.Properties{}) {
		t.Errorf("properties (-want +got):\n%s", testdiff.Diff(broker.Properties{}, p))
	}
}

func TestValidAttributeName(t *testing.T) {
	for name, want := range map[string]bool{
		"ok": true, "a.b-c_d": true, "": false, ".a": false, "a.": false, "a..b": false,
		"AWS.x": false, "amazon.x": false, "has space": false, "ü": false, strings.Repeat("a", 257): false,
	} {
		if got := validAttributeName(name); got != want {
			t.Errorf("validAttributeName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidBody(t *testing.T) {
	for s, want := range map[string]bool{
		"hello": true, "tab\tnl\ncr\r": true, "€ and 𝄞": true, "\uFFFD": true,
		"\x00": false, "\x1f": false, "\xff": false, "\uFFFE": false,
	} {
		if got := validBody(s); got != want {
			t.Errorf("validBody(%q) = %v, want %v", s, got, want)
		}
	}
}

// checkAttributes asserts what SQS would check on send.
func checkAttributes(t testing.TB, attrs map[string]broker.Attribute) {
	t.Helper()
	if len(attrs) > maxAttributes {
		t.Fatalf("%d attributes, SQS allows %d", len(attrs), maxAttributes)
	}
	for k, a := range attrs {
		if !validAttributeName(k) {
			t.Errorf("attribute name %q not valid for SQS", k)
		}
		switch {
		case strings.HasPrefix(a.DataType, "Binary"):
			if len(a.BinaryValue) == 0 {
				t.Errorf("attribute %q: empty binary value", k)
			}
		case strings.HasPrefix(a.DataType, "String"), strings.HasPrefix(a.DataType, "Number"):
			if a.StringValue == "" || !validBody(a.StringValue) {
				t.Errorf("attribute %q: value %q not valid for SQS", k, a.StringValue)
			}
		default:
			t.Errorf("attribute %q: data type %q", k, a.DataType)
		}
	}
}

func keys(m map[string]broker.Attribute) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// assertHeadersEqual compares header tables, treating NaN as equal to NaN,
// times by instant, and int as int64.
func assertHeadersEqual(t testing.TB, want, got map[string]any) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !headerValueEqual(want, got) {
		t.Errorf("headers differ (-want +got):\n%s", testdiff.Diff(want, got))
	}
}

func headerValueEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !headerValueEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !headerValueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || x != x && y != y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Unix() == y.Unix()
	case int:
		return b == int64(x)
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	return reflect.DeepEqual(a, b)
}

// FuzzAttributesFromHeaders: any header table maps to attributes SQS
// accepts, and maps back to the same table.
func FuzzAttributesFromHeaders(f *testing.F) {
	f.Add("content", "key", "value", int64(3), 1.5, []byte{0, 1}, uint8(3), 5)
	f.Add("", "AWS.x", "", int64(-1), math.Inf(1), []byte{}, uint8(0), 12)
	f.Add("a\x00b", "dlq-amqp", "\xff\xfe", int64(math.MaxInt64), math.NaN(), []byte("x"), uint8(255), 0)
	f.Fuzz(func(t *testing.T, ctype, name, sval string, ival int64, fval float64, bval []byte, u8 uint8, n int) {
		h := map[string]any{}
		if n < 0 {
			n = -n
		}
		n %= 20
		for i := range n {
			k := fmt.Sprintf("%s%d", name, i)
			switch i % 9 {
			case 0:
				h[k] = sval
			case 1:
				h[k] = ival
			case 2:
				h[k] = fval
			case 3:
				h[k] = append([]byte(nil), bval...)
			case 4:
				h[k] = int8(u8)
			case 5:
				h[k] = map[string]any{"s": sval, "n": int32(ival)}
			case 6:
				h[k] = []any{sval, fval, nil}
			case 7:
				h[k] = broker.Decimal{Scale: u8 % 10, Value: int32(ival)}
			case 8:
				h[k] = time.Unix(ival%(1<<40), 0).UTC()
			}
		}
		h[name] = sval
		p := broker.Properties{ContentType: ctype, MessageID: sval, Priority: u8, AppID: name}
		attrs, err := AttributesFromHeaders(h, p)
		if err != nil {
			t.Fatalf("AttributesFromHeaders: %v", err)
		}
		checkAttributes(t, attrs)
		gh, gp, err := HeadersFromAttributes(attrs)
		if err != nil {
			t.Fatalf("HeadersFromAttributes: %v", err)
		}
		assertHeadersEqual(t, h, gh)
		if gp != p {
			t.Errorf("properties (-want +got):\n%s", testdiff.Diff(p, gp))
		}
	})
}

// testdata/overflow-typed-values.json is a dlq-amqp attribute as an earlier
// dlq wrote it (uint64 and floats as strings, timestamps as Unix seconds):
// messages still on a queue must read back unchanged.
func TestReadsOverflowOfEarlierVersions(t *testing.T) {
	b, err := os.ReadFile("testdata/overflow-typed-values.json")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := HeadersFromAttributes(map[string]broker.Attribute{
		attrOverflow: {DataType: "String.json", StringValue: strings.TrimSpace(string(b))},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"arr": []any{int16(3), "y"}, "b": true, "bad": string([]byte{0xff, 'a', 0xfe}), "big": uint64(1<<53 + 1),
		"bytes": []byte{0, 1, 2}, "dec": broker.Decimal{Scale: 2, Value: -105}, "f32": float32(1.5), "f64": 0.1,
		"i8": int8(-5), "inf": math.Inf(-1), "tbl": map[string]any{"n": uint64(math.MaxUint64), "s": "x"},
		"ts": time.Date(2026, 11, 1, 12, 30, 45, 0, time.UTC), "u64": uint64(math.MaxUint64), "void": nil,
	}
	if nan, ok := got["nan"].(float64); !ok || !math.IsNaN(nan) {
		t.Errorf("header nan = %#v, want NaN", got["nan"])
	}
	delete(got, "nan")
	for k, w := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("header %s = %#v, want %#v", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected header %s = %#v", k, got[k])
		}
	}
}

// Integers beyond 2^53 and strings that are not UTF-8 survive the overflow
// attribute exactly.
func TestOverflowKeepsExactValues(t *testing.T) {
	h := map[string]any{"big": uint64(1<<53 + 1), "bad": string([]byte{0xff, 0xfe}), "t": map[string]any{"u": uint64(math.MaxUint64)}}
	attrs, err := attributesFromHeaders(h, broker.Properties{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := attrs[attrOverflow].StringValue; !strings.Contains(s, `"value":9007199254740993}`) {
		t.Errorf("overflow attribute %s does not hold 9007199254740993 as a number", s)
	}
	got, _, err := HeadersFromAttributes(attrs)
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range h {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("header %s = %#v, want %#v", k, got[k], w)
		}
	}
}
