// Package human formats durations and sizes briefly, for tables and the
// terminal UI.
package human

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Age renders a duration the way k9s does: 42s, 5m, 3h, 2d ("-" for none).
func Age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// Bytes renders a size: 512B, 1.2K, 3.4M, 1.1G.
func Bytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + "K"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "M"
	default:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "G"
	}
}

// Visible makes a value from a message or a broker (an ID, a queue name, a
// header, a reason) safe to print on a terminal: control characters (C0,
// DEL, C1, so every escape sequence's introducer), Unicode bidirectional
// controls and bytes that are not UTF-8 are written as Go escapes (\x1b,
// \u009b, \u202e, \xff), so they show instead of acting. Tabs and line
// breaks are escaped too: a value is one cell or one line. Machine output
// (JSON, CSV) keeps the exact value and does not call it.
func Visible(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if hidden(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
		case hidden(r, n):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden reports whether r (n bytes long) acts on a terminal rather than
// shows: a control, a bidirectional control, or an invalid byte.
func hidden(r rune, n int) bool {
	return r == utf8.RuneError && n == 1 || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// Seconds is s seconds as a Duration, held at the Duration's limits: a
// span between far-off timestamps (an AMQP timestamp of 2^62) is longer
// than a Duration holds.
func Seconds(s float64) time.Duration {
	const limit = float64(math.MaxInt64 / int64(time.Second))
	switch {
	case s != s: // NaN
		return 0
	case s >= limit:
		return math.MaxInt64
	case s <= -limit:
		return math.MinInt64
	}
	return time.Duration(s * float64(time.Second))
}

// Times is d·n, held at the Duration's limits.
func Times(d time.Duration, n int) time.Duration {
	p := d * time.Duration(n)
	if n != 0 && (p/time.Duration(n) != d || d == math.MinInt64 && n == -1) {
		if (d < 0) != (n < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return p
}
