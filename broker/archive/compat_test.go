package archive

import (
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// testdata/typed-values-v1.jsonl was written by an earlier dlq: its header
// values must still read back exactly, through the fast decoder and through
// encoding/json.
func TestReadsTypedValuesOfEarlierArchives(t *testing.T) {
	want := map[string]any{
		"arr": []any{int16(3), "y"}, "b": true, "big": uint64(1<<53 + 1), "bytes": []byte{0, 1, 2},
		"dec": broker.Decimal{Scale: 2, Value: -105}, "f32": float32(1.5), "f64": 0.1,
		"i16": int16(-300), "i32": int32(70000), "i64": int64(-1 << 60), "i8": int8(-5),
		"inf": math.Inf(-1), "negzero": math.Copysign(0, -1), "s": "héllo <&>",
		"tbl": map[string]any{"n": uint64(math.MaxUint64), "s": "x"},
		"ts":  time.Date(2026, 11, 1, 12, 30, 45, 123456789, time.UTC),
		"u16": uint16(60000), "u32": uint32(4000000000), "u64": uint64(math.MaxUint64), "u8": uint8(200), "void": nil,
	}
	check := func(t *testing.T, got map[string]any) {
		t.Helper()
		nan, ok := got["nan"].(float64)
		if !ok || !math.IsNaN(nan) {
			t.Errorf("header nan = %#v, want NaN", got["nan"])
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if g, ok := got[k]; !ok || !reflect.DeepEqual(g, want[k]) {
				t.Errorf("header %s = %#v, want %#v", k, g, want[k])
			}
		}
		if n := len(got); n != len(want)+1 {
			t.Errorf("%d headers, want %d", n, len(want)+1)
		}
		if negzero, _ := got["negzero"].(float64); !math.Signbit(negzero) {
			t.Errorf("header negzero lost its sign")
		}
	}
	t.Run("reader", func(t *testing.T) {
		r, err := OpenReader("testdata/typed-values-v1.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		m, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		check(t, m.Headers)
	})
	t.Run("encoding/json", func(t *testing.T) {
		b, err := os.ReadFile("testdata/typed-values-v1.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var r record
		if !fastRecord([]byte(lines[1]), &r) {
			t.Errorf("the fast decoder gave up on a line of an earlier archive")
		}
		m, err := Unmarshal([]byte(lines[1]))
		if err != nil {
			t.Fatal(err)
		}
		check(t, m.Headers)
	})
}

// Header strings, header names and table keys that are not UTF-8 keep
// their bytes (two names that differ only there stay two), through the
// fast decoder, its encoding/json fallback and the reader, in a record that
// is UTF-8 itself.
func TestNonUTF8HeadersRoundTrip(t *testing.T) {
	bad := string([]byte{'o', 0xff, 'k', 0xc3})
	for name, headers := range map[string]map[string]any{
		"values": {"h": bad, "t": map[string]any{"n": bad}},
		"names": {
			"ok\xff": "a", "ok\xfe": "b", "\x00lead": "c", "plain": "d",
			"t": map[string]any{"in\xff": int64(1), "in\xfe": int64(2), "\x00base64:aGk=": "literal"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := &broker.Message{ID: "x", Headers: headers}
			if d := testdiff.Diff(m.Headers, roundTrip(t, m).Headers); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
			b, err := Marshal(m, "", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.Valid(b) {
				t.Fatalf("the record is not UTF-8: %q", b)
			}
			checkFast(t, b)
			r, err := NewReader(strings.NewReader(`{"dlq_archive":1}`+"\n"+string(b)+"\n"), "mem")
			if err != nil {
				t.Fatal(err)
			}
			rm, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if d := testdiff.Diff(m.Headers, rm.Headers); d != "" {
				t.Errorf("reader (-want +got):\n%s", d)
			}
		})
	}
}
