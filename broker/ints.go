package broker

import (
	"encoding/json"
	"math"
	"strconv"
)

// Int64 reads an integer header, argument or attribute value: a signed Go
// integer, an unsigned one of up to 32 bits (no AMQP or JSON decoder makes
// a uint64), a float with no fractional part that is exact (below 2^53:
// JSON numbers), or a json.Number that is an integer. It is dlq's one
// integer coercion.
func Int64(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case float32:
		return Int64(float64(n))
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// ParseIntBytes is strconv.ParseInt(string(s), 10, bits) without
// allocating for short plain integers, for decoders that read JSON
// themselves.
func ParseIntBytes(s []byte, bits int) (int64, bool) {
	d, neg := s, len(s) > 0 && s[0] == '-'
	if neg {
		d = s[1:]
	}
	if u, ok := shortDigits(d); ok {
		n := int64(u)
		if neg {
			n = -n
		}
		if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
			return 0, false
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(s), 10, bits)
	return n, err == nil
}

// ParseUintBytes is strconv.ParseUint(string(s), 10, bits), likewise.
func ParseUintBytes(s []byte, bits int) (uint64, bool) {
	if n, ok := shortDigits(s); ok {
		if bits < 64 && n >= 1<<bits {
			return 0, false
		}
		return n, true
	}
	n, err := strconv.ParseUint(string(s), 10, bits)
	return n, err == nil
}

// shortDigits is the value of s when s is 1 to 18 decimal digits and
// nothing else: a number that cannot overflow an int64.
func shortDigits(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// SatAdd is a+b held at the int64 limits instead of wrapping around: counts
// read from headers (x-death counts, attempts) may be anything.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}
