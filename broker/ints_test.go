package broker

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestParseIntMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-128", "127", "128", "-129", "255", "256", "65535", "-32768",
		"2147483647", "2147483648", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
		"18446744073709551615", "18446744073709551616", "123456789012345678", "1e3", "1.5", "", "-", "00"} {
		for _, bits := range []int{8, 16, 32, 64} {
			n, ok := ParseIntBytes([]byte(s), bits)
			wn, err := strconv.ParseInt(s, 10, bits)
			if ok != (err == nil) || (ok && n != wn) {
				t.Errorf("ParseIntBytes(%q, %d) = %d, %v; strconv: %d, %v", s, bits, n, ok, wn, err)
			}
			u, ok := ParseUintBytes([]byte(s), bits)
			wu, err := strconv.ParseUint(s, 10, bits)
			if ok != (err == nil) || (ok && u != wu) {
				t.Errorf("ParseUintBytes(%q, %d) = %d, %v; strconv: %d, %v", s, bits, u, ok, wu, err)
			}
		}
	}
}

func TestSatAdd(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{
		{1, 2, 3}, {-1, -2, -3}, {math.MaxInt64, 0, math.MaxInt64},
		{math.MaxInt64, 1, math.MaxInt64}, {math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64}, {math.MinInt64, math.MaxInt64, -1},
	} {
		if got := SatAdd(tt.a, tt.b); got != tt.want {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestInt64Kinds: the one integer coercion reads every number a decoder
// makes (AMQP tables, JSON with UseNumber, YAML), and no float that is not
// an exact integer.
func TestInt64Kinds(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{json.Number("42"), 42, true}, {json.Number("-7"), -7, true}, {json.Number("1.5"), 0, false},
		{float32(3), 3, true}, {float32(2.5), 0, false},
		{float64(1<<53 - 1), 1<<53 - 1, true}, {float64(1 << 53), 0, false}, {math.Inf(1), 0, false},
		{uint8(255), 255, true}, {uint16(65535), 65535, true},
	} {
		if got, ok := Int64(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Int64(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
