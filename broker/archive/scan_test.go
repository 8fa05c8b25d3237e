package archive

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// naiveStop is stringStop a byte at a time, the reference.
func naiveStop(b []byte) (int, bool) {
	high := false
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return i, high
		}
		high = high || c >= 0x80
	}
	return len(b), high
}

func TestStringStop(t *testing.T) {
	// Every stop byte at every position of a 20-byte run, with and without
	// non-ASCII bytes before and after it.
	for _, stop := range []byte{'"', '\\', 0, 0x1f, '\n'} {
		for _, fill := range []byte{'x', 0xc3, 0x7f, 0x20, 0x80, 0xff, '!', ']', 0x21, 0x5d, 0x5b} {
			for _, n := range append(seq(0, 20), seq(60, 160)...) {
				for at := 0; at <= n; at++ {
					b := make([]byte, n)
					for i := range b {
						b[i] = fill
					}
					if at < n {
						b[at] = stop
					}
					gi, gh := stringStop(b)
					wi, wh := naiveStop(b)
					if gi != wi || gh != wh {
						t.Fatalf("stringStop(%q) = %d, %v; want %d, %v", b, gi, gh, wi, wh)
					}
				}
			}
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// Long runs with a non-ASCII byte and a stop at any place.
func TestStringStopLong(t *testing.T) {
	for _, stop := range []byte{'"', '\\', 0x01} {
		for _, at := range []int{0, 63, 64, 65, 100, 999, -1} {
			for _, hi := range []int{-1, 3, 70, 500} {
				b := []byte(strings.Repeat("x", 1000))
				if hi >= 0 {
					b[hi] = 0xe9
				}
				if at >= 0 {
					b[at] = stop
				}
				gi, gh := stringStop(b)
				wi, wh := naiveStop(b)
				if gi != wi || gh != wh {
					t.Fatalf("stop %q at %d, é at %d: stringStop = %d, %v; want %d, %v", stop, at, hi, gi, gh, wi, wh)
				}
			}
		}
	}
}

func FuzzStringStop(f *testing.F) {
	f.Add([]byte("hello \"world\""))
	f.Add([]byte("caf\xc3\xa9 \\n\x01"))
	f.Add([]byte(strings.Repeat("y", 70) + "\xc3\xa9" + strings.Repeat("z", 50) + "\x02\""))
	f.Fuzz(func(t *testing.T, b []byte) {
		gi, gh := stringStop(b)
		wi, wh := naiveStop(b)
		if gi != wi || gh != wh {
			t.Fatalf("stringStop(%q) = %d, %v; want %d, %v", b, gi, gh, wi, wh)
		}
	})
}

// The known keys of each object the fast decoder reads have distinct bits,
// so that no line dlq writes falls back to encoding/json for a clash.
func TestKeyBits(t *testing.T) {
	for name, keys := range map[string][]string{
		"record": {"id", "system", "queue", "broker", "archived", "body", "body_encoding", "headers", "properties",
			"attributes", "system_attributes", "exchange", "routing_key", "death", "delivery_count", "acquisitions", "redelivered", "timestamp", "position"},
		"properties": {"content_type", "content_encoding", "delivery_mode", "priority", "correlation_id", "reply_to",
			"expiration", "message_id", "timestamp", "type", "user_id", "app_id"},
		"attribute":   {"data_type", "string_value", "binary_value"},
		"death":       {"reason", "queue", "queue_arn", "exchange", "routing_keys", "count", "first", "last", "first_reason", "first_queue", "history"},
		"death entry": {"reason", "queue", "exchange", "routing_keys", "count", "time"},
	} {
		var s keySet
		for _, k := range keys {
			if !s.add([]byte(k)) {
				t.Errorf("%s: key %q clashes with an earlier one (bit %d)", name, k, keyBit([]byte(k)))
			}
		}
	}
}

func TestInterner(t *testing.T) {
	in := newInterner()
	a := in.get([]byte("orders.dlq"))
	if b := in.get([]byte("orders.dlq")); a != b || a != "orders.dlq" {
		t.Fatalf("get = %q, %q", a, b)
	}
	if v := in.boxed([]byte("x")); v != any("x") {
		t.Fatalf("boxed = %#v", v)
	}
	if v := in.boxed(nil); v != any("") {
		t.Fatalf("boxed(nil) = %#v", v)
	}
	long := strings.Repeat("y", maxInternedLen+1)
	if got := in.get([]byte(long)); got != long {
		t.Fatalf("long string changed")
	}
	// Bounded: far more distinct strings than it keeps.
	for i := range 3 * maxInterned {
		s := strconv.Itoa(i)
		if got := in.get([]byte(s)); got != s {
			t.Fatalf("get(%q) = %q", s, got)
		}
	}
	if len(in.m) > maxInterned {
		t.Errorf("holds %d strings, want at most %d", len(in.m), maxInterned)
	}
	if _, ok := in.m[long]; ok {
		t.Errorf("holds a string longer than %d bytes", maxInternedLen)
	}
}

// utcTime agrees with time.Time.UnmarshalJSON wherever it answers, and
// answers for every time dlq writes.
func checkUTCTime(t *testing.T, s string) bool {
	t.Helper()
	got, n, ok := utcTime([]byte(s + ",rest"))
	if !ok {
		return false
	}
	var want time.Time
	if err := want.UnmarshalJSON([]byte(s[:n])); err != nil {
		t.Fatalf("utcTime accepted %s, UnmarshalJSON: %v", s, err)
	}
	if got != want || got.Location() != want.Location() {
		t.Fatalf("utcTime(%s) = %v (%d bytes), UnmarshalJSON %v", s, got, n, want)
	}
	return true
}

func TestUTCTime(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC), time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 11, 22, 0, 1, 11, 543246571, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(9999, 12, 31, 0, 0, 0, 500000000, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 120, time.UTC),
	} {
		b, _ := tm.MarshalJSON()
		if !checkUTCTime(t, string(b)) {
			t.Errorf("utcTime left %s to UnmarshalJSON", b)
		}
		if _, n, _ := utcTime(b); n != len(b) {
			t.Errorf("utcTime took %d bytes of %s", n, b)
		}
	}
	for _, s := range []string{
		`"2023-02-29T00:00:00Z"`, `"2024-13-01T00:00:00Z"`, `"2024-04-31T00:00:00Z"`, `"2024-01-01T24:00:00Z"`,
		`"2024-01-01T00:60:00Z"`, `"2024-01-01T00:00:60Z"`, `"2024-01-01T00:00:00.Z"`, `"2024-01-01T00:00:00.1234567891Z"`,
		`"2024-01-01T00:00:00+01:00"`, `"2024-01-01 00:00:00Z"`, `"2024-1-01T00:00:00Z"`, `"+024-01-01T00:00:00Z"`,
		`"2024-01-01T00:00:00Z`, `2024-01-01T00:00:00Z`, `"2024-00-10T00:00:00Z"`, `"2024-01-00T00:00:00Z"`,
	} {
		checkUTCTime(t, s)
	}
}

func BenchmarkUTCTime(b *testing.B) {
	s := []byte(`"2026-11-22T00:01:11.543246571Z"`)
	b.Run("utcTime", func(b *testing.B) {
		for b.Loop() {
			utcTime(s)
		}
	})
	b.Run("UnmarshalJSON", func(b *testing.B) {
		for b.Loop() {
			var t time.Time
			t.UnmarshalJSON(s)
		}
	})
}

func FuzzUTCTime(f *testing.F) {
	f.Add(`"2026-11-22T00:01:11.543246571Z"`)
	f.Add(`"2024-02-29T23:59:59Z"`)
	f.Fuzz(func(t *testing.T, s string) {
		checkUTCTime(t, s)
	})
}
