package broker

import (
	"errors"
	"strconv"
	"time"
)

// Times in dlq's JSON (archives, typed values) are RFC 3339 with
// nanoseconds, in UTC: "2026-03-01T12:00:00.5Z". RFC 3339, and encoding/json's
// time.Time, stop at the years 0 and 9999, but an AMQP timestamp is any
// 64-bit number of seconds (2^62 is legal, and a publisher's bug can set
// anything). A time outside those years is written as a JSON number
// instead: the seconds since the Unix epoch, with up to nine fractional
// digits, exact (AppendTimeJSON), and read back as the same time
// (TimeFromNumber). Every time Go can hold that a message carries (the
// seconds of time.Unix, any int64) round-trips.

// TimeInRFC3339 reports whether t can be written as an RFC 3339 string.
func TimeInRFC3339(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// AppendTimeJSON appends t as a JSON value: a quoted RFC 3339 time in UTC
// with nanoseconds when its year is 0 to 9999, else a number of seconds
// since the Unix epoch.
func AppendTimeJSON(buf []byte, t time.Time) []byte {
	if TimeInRFC3339(t) {
		buf = append(buf, '"')
		buf = t.UTC().AppendFormat(buf, time.RFC3339Nano)
		return append(buf, '"')
	}
	sec, ns := t.Unix(), int64(t.Nanosecond())
	if ns == 0 {
		return strconv.AppendInt(buf, sec, 10)
	}
	if sec < 0 {
		// sec + ns/1e9 = -((-sec-1) + (1e9-ns)/1e9); -(sec+1) cannot overflow.
		buf = append(buf, '-')
		buf = strconv.AppendInt(buf, -(sec + 1), 10)
		ns = 1e9 - ns
	} else {
		buf = strconv.AppendInt(buf, sec, 10)
	}
	return appendFraction(buf, ns)
}

// appendFraction appends "." and ns (0 < ns < 1e9) as nine digits without
// trailing zeros.
func appendFraction(buf []byte, ns int64) []byte {
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 9
	for n > 1 && d[n-1] == '0' {
		n--
	}
	buf = append(buf, '.')
	return append(buf, d[:n]...)
}

var errTimeNumber = errors.New("want seconds since the Unix epoch: digits, optionally a minus sign and up to nine fractional digits, within 64 bits")

// TimeFromNumber reads a time written by AppendTimeJSON as a number (lit,
// the JSON number's text): seconds since the Unix epoch, with an optional
// fraction of up to nine digits. It is in UTC.
func TimeFromNumber(lit []byte) (time.Time, error) {
	s := lit
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	intPart, frac := s, []byte(nil)
	for i, c := range s {
		if c == '.' {
			intPart, frac = s[:i], s[i+1:]
			if len(frac) == 0 {
				return time.Time{}, errTimeNumber
			}
			break
		}
	}
	if len(intPart) == 0 || len(frac) > 9 {
		return time.Time{}, errTimeNumber
	}
	u, ok := ParseUintBytes(intPart, 64)
	if !ok {
		return time.Time{}, errTimeNumber
	}
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return time.Time{}, errTimeNumber
			}
			ns += int64(c - '0')
		}
	}
	var sec int64
	switch {
	case !neg && u <= 1<<63-1:
		sec = int64(u)
	case neg && u <= 1<<63:
		sec = int64(-u) // -2^63 included
		if ns > 0 {
			if sec == -1<<63 {
				return time.Time{}, errTimeNumber
			}
			sec, ns = sec-1, 1e9-ns
		}
	default:
		return time.Time{}, errTimeNumber
	}
	return time.Unix(sec, ns).UTC(), nil
}
