package human

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestAge(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "-"}, {-time.Second, "-"}, {1500 * time.Millisecond, "1s"}, {59 * time.Second, "59s"},
		{time.Minute, "1m"}, {59*time.Minute + 59*time.Second, "59m"}, {time.Hour, "1h"},
		{47 * time.Hour, "47h"}, {48 * time.Hour, "2d"}, {100 * 24 * time.Hour, "100d"},
		{math.MaxInt64, "106751d"}, {math.MinInt64, "-"},
	} {
		if got := Age(tt.d); got != tt.want {
			t.Errorf("Age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1.0K"}, {1536, "1.5K"}, {1<<20 - 1, "1024.0K"},
		{1 << 20, "1.0M"}, {3 << 29, "1.5G"}, {math.MaxInt64, "8589934592.0G"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"orders.dlq", "orders.dlq"},
		{"café ✓", "café ✓"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\", `\x1b]8;;http://evil\x1b\text\x1b]8;;\x1b\`},
		{"a\tb\nc\rd\x00\x7f", `a\tb\nc\rd\x00\x7f`},
		{"\u009b31m csi", `\u009b31m csi`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"bad \xff\xfe", `bad \xff\xfe`},
	} {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "x", "\x1b[2J", "\x1b]8;;http://evil\x1b\\t\x1b]8;;\x1b\\", "\u0085\u009b\u009d", "\xc2\x9b", "\xe2\x80\xae"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := Visible(s)
		if !utf8.ValidString(v) {
			t.Fatalf("Visible(%q) = %q: not UTF-8", s, v)
		}
		for _, r := range v {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				t.Fatalf("Visible(%q) = %q keeps %U", s, v, r)
			}
		}
		// Printable text is left as it is.
		if v != s && !strings.ContainsFunc(s, func(r rune) bool {
			return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
		}) {
			t.Fatalf("Visible(%q) = %q changes printable text", s, v)
		}
	})
}

func TestSecondsAndTimesHoldAtTheLimits(t *testing.T) {
	for _, tt := range []struct {
		s    float64
		want time.Duration
	}{
		{1.5, 1500 * time.Millisecond}, {0, 0}, {-2, -2 * time.Second},
		{1 << 62, math.MaxInt64}, {-(1 << 62), math.MinInt64}, {math.Inf(1), math.MaxInt64}, {math.NaN(), 0},
	} {
		if got := Seconds(tt.s); got != tt.want {
			t.Errorf("Seconds(%v) = %v, want %v", tt.s, got, tt.want)
		}
	}
	for _, tt := range []struct {
		d    time.Duration
		n    int
		want time.Duration
	}{
		{time.Second, 48, 48 * time.Second}, {time.Hour, 0, 0}, {-time.Second, 3, -3 * time.Second},
		{math.MaxInt64 / 2, 3, math.MaxInt64}, {math.MaxInt64, -2, math.MinInt64}, {math.MinInt64, -1, math.MaxInt64},
	} {
		if got := Times(tt.d, tt.n); got != tt.want {
			t.Errorf("Times(%v, %d) = %v, want %v", tt.d, tt.n, got, tt.want)
		}
	}
}
