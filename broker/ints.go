package broker

import (
	"math"
	"strconv"
)

// Int64 reads an integer header or attribute value: any Go integer type that
// fits in an int64, or a float64 with no fractional part (JSON numbers).
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
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<63 {
			return int64(n), true
		}
	}
	return 0, false
}

// ParseIntBytes is strconv.ParseInt(string(s), 10, bits) without
// allocating for short plain integers, for decoders that read JSON
// themselves.
func ParseIntBytes(s []byte, bits int) (int64, bool) {
	if len(s) > 0 && len(s) < 19 {
		neg := s[0] == '-'
		d := s
		if neg {
			d = s[1:]
		}
		var n int64
		plain := len(d) > 0
		for _, c := range d {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			if neg {
				n = -n
			}
			if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
				return 0, false
			}
			return n, true
		}
	}
	n, err := strconv.ParseInt(string(s), 10, bits)
	return n, err == nil
}

// ParseUintBytes is strconv.ParseUint(string(s), 10, bits), likewise.
func ParseUintBytes(s []byte, bits int) (uint64, bool) {
	if len(s) > 0 && len(s) < 20 && s[0] != '-' {
		var n uint64
		plain := true
		for _, c := range s {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + uint64(c-'0')
		}
		if plain {
			if bits < 64 && n >= 1<<bits {
				return 0, false
			}
			return n, true
		}
	}
	n, err := strconv.ParseUint(string(s), 10, bits)
	return n, err == nil
}
