package inspect

import (
	"strings"
)

// classify names the placeholder of a variable atom, "" for a literal.
func classify(a string) string {
	if len(a) == 0 {
		return ""
	}
	digits, letters, upper, lower, seps := 0, 0, 0, 0, 0
	for k := 0; k < len(a); k++ {
		c := a[k]
		switch {
		case isDigit(c):
			digits++
		case c >= 'a' && c <= 'z':
			letters++
			lower++
		case c >= 'A' && c <= 'Z':
			letters++
			upper++
		case c >= 0x80:
			letters++
		case c == '-' || c == '_':
			seps++
		}
	}
	if isEmail(a) {
		return PhEmail
	}
	if digits == 0 {
		return ""
	}
	switch {
	case isUUID(a):
		return PhUUID
	case isTime(a):
		return PhTime
	case isIP(a):
		return PhIP
	case isNumber(a):
		return PhNum
	case isHex(a):
		return PhHex
	}
	if letters == 0 {
		// Digits and punctuation: 12/05, 1.2.3, +1-555-0100.
		return PhNum
	}
	if strings.IndexByte(a, '@') > 0 && !strings.ContainsAny(a, "/:") {
		return PhID // Type@hash
	}
	dotted := strings.IndexByte(a, '.') >= 0
	switch {
	case digits >= 4, dotted:
		return ifThen(digits >= 4 && !dotted, PhID)
	case seps == 1 && isWordDigits(a):
		return ifThen(idSuffix(a), PhID) // SKU-7, cus_0; not UTF-16
	case seps > 0 && digits >= 2:
		return PhID // cus_12, ch_3NfK2a9
	case len(a) >= 8 && digits >= 2 && upper > 0 && lower > 0 && isTokenChars(a):
		return PhID // random tokens: 3NfK2a9x
	}
	return ""
}

// isWordDigits: letters, one - or _, then digits only (SKU-7, cus_0).
func isWordDigits(a string) bool {
	i := strings.IndexAny(a, "-_")
	if i <= 0 || i == len(a)-1 || digitsAt(a, i+1) != len(a)-i-1 {
		return false
	}
	for k := 0; k < i; k++ {
		if !isLetter(a[k]) {
			return false
		}
	}
	return true
}

// idSuffix: a word-digits atom is an id unless its letters name an
// encoding or a version (utf-8, UTF-16, ipv-6, http-2).
func idSuffix(a string) bool {
	i := strings.IndexAny(a, "-_")
	switch strings.ToLower(a[:i]) {
	case "utf", "ucs", "iso", "latin", "cp", "windows", "sha", "md", "base", "http", "tls", "ssl", "ipv", "v", "x":
		return false
	}
	return true
}

func ifThen(c bool, s string) string {
	if c {
		return s
	}
	return ""
}

func isTokenChars(a string) bool {
	for k := 0; k < len(a); k++ {
		c := a[k]
		if !isAlnum(c) && c != '+' && c != '/' && c != '=' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isUUID(a string) bool {
	if len(a) == 38 && a[0] == '{' && a[37] == '}' {
		a = a[1:37]
	}
	if len(a) != 36 {
		return false
	}
	for k := 0; k < 36; k++ {
		switch k {
		case 8, 13, 18, 23:
			if a[k] != '-' {
				return false
			}
		default:
			if !isHexDigit(a[k]) {
				return false
			}
		}
	}
	return true
}

// digitsAt returns how many digits start at a[k:].
func digitsAt(a string, k int) int {
	n := 0
	for k+n < len(a) && isDigit(a[k+n]) {
		n++
	}
	return n
}

// isTime: 2024-01-02[T…], 12:30[:45[.123]][Z], 01/02/2024, durations
// (250ms, 1m30s, 1.5h, PT30S).
func isTime(a string) bool {
	// ISO date, with or without a time.
	if len(a) >= 10 && digitsAt(a, 0) == 4 && a[4] == '-' && digitsAt(a, 5) == 2 && a[7] == '-' && digitsAt(a, 8) == 2 {
		rest := a[10:]
		if rest == "" {
			return true
		}
		if rest[0] == 'T' || rest[0] == 't' || rest[0] == '_' {
			return isClock(rest[1:])
		}
		return false
	}
	if isClock(a) {
		return true
	}
	// 01/02/2024, 2024/01/02, 02.01.2024
	if n := digitsAt(a, 0); n >= 1 && n <= 4 && len(a) > n && (a[n] == '/' || a[n] == '.') {
		sep := a[n]
		m := digitsAt(a, n+1)
		if m >= 1 && m <= 2 && len(a) > n+1+m && a[n+1+m] == sep {
			o := digitsAt(a, n+2+m)
			return o >= 2 && o <= 4 && n+2+m+o == len(a) && (n == 4 || o >= 2)
		}
	}
	return isDuration(a)
}

// isClock: 12:30, 12:30:45, 12:30:45.123, each with an optional zone
// (Z, +01:00, +0100).
func isClock(a string) bool {
	h := digitsAt(a, 0)
	if h < 1 || h > 2 || len(a) < h+3 || a[h] != ':' || digitsAt(a, h+1) != 2 {
		return false
	}
	k := h + 3
	if k < len(a) && a[k] == ':' {
		if digitsAt(a, k+1) != 2 {
			return false
		}
		k += 3
		if k < len(a) && (a[k] == '.' || a[k] == ',') {
			n := digitsAt(a, k+1)
			if n == 0 {
				return false
			}
			k += 1 + n
		}
	}
	rest := a[k:]
	switch {
	case rest == "", rest == "Z", rest == "z":
		return true
	case rest[0] == '+' || rest[0] == '-':
		z := rest[1:]
		return len(z) == 4 && digitsAt(z, 0) == 4 || len(z) == 5 && digitsAt(z, 0) == 2 && z[2] == ':' && digitsAt(z, 3) == 2 || len(z) == 2 && digitsAt(z, 0) == 2
	}
	return false
}

// isDuration: one or more number+unit pairs (1h30m, 250ms, 1.5s, 30sec), or
// ISO 8601 (PT30S).
func isDuration(a string) bool {
	if len(a) > 2 && (a[0] == 'P' || a[0] == 'p') {
		b := a[1:]
		if b[0] == 'T' || b[0] == 't' {
			b = b[1:]
		}
		if b == "" {
			return false
		}
		for k := 0; k < len(b); {
			n := digitsAt(b, k)
			if n == 0 || k+n >= len(b) || strings.IndexByte("YMWDHSymwdhs", b[k+n]) < 0 {
				return false
			}
			k += n + 1
		}
		return true
	}
	k, pairs := 0, 0
	for k < len(a) {
		n := digitsAt(a, k)
		if n == 0 {
			return false
		}
		k += n
		if k < len(a) && a[k] == '.' {
			m := digitsAt(a, k+1)
			if m == 0 {
				return false
			}
			k += 1 + m
		}
		e := k
		for e < len(a) && isLetter(a[e]) {
			e++
		}
		switch strings.ToLower(a[k:e]) {
		case "ns", "us", "µs", "μs", "ms", "s", "sec", "secs", "m", "min", "mins", "h", "hr", "hrs", "d":
		default:
			return false
		}
		k = e
		pairs++
	}
	return pairs > 0
}

func isIP(a string) bool {
	if len(a) > 2 && a[0] == '[' && a[len(a)-1] == ']' {
		a = a[1 : len(a)-1]
	}
	if p := strings.IndexByte(a, '/'); p > 0 && digitsAt(a, p+1) == len(a)-p-1 && len(a)-p-1 <= 3 {
		a = a[:p] // CIDR
	}
	// IPv4
	k, parts := 0, 0
	for parts < 4 {
		n := digitsAt(a, k)
		if n == 0 || n > 3 {
			break
		}
		k += n
		parts++
		if parts < 4 {
			if k >= len(a) || a[k] != '.' {
				break
			}
			k++
		}
	}
	if parts == 4 && k == len(a) {
		return true
	}
	// IPv6: hex groups and colons, at least two colons.
	colons := strings.Count(a, ":")
	if colons < 2 || colons > 7 {
		return false
	}
	for k := 0; k < len(a); k++ {
		if !isHexDigit(a[k]) && a[k] != ':' && a[k] != '.' {
			return false
		}
	}
	return true
}

func isEmail(a string) bool {
	at := strings.IndexByte(a, '@')
	if at <= 0 || at == len(a)-1 || strings.IndexByte(a[at+1:], '@') >= 0 {
		return false
	}
	dom := a[at+1:]
	dot := strings.LastIndexByte(dom, '.')
	return dot > 0 && dot < len(dom)-2
}

// isNumber: -1, 3.14, 1e9, 1,000, 0x1F (→ false here; isHex), 10MB, 95%.
func isNumber(a string) bool {
	k := 0
	if a[0] == '-' || a[0] == '+' || a[0] == '#' {
		k++
	}
	n := digitsAt(a, k)
	if n == 0 {
		return false
	}
	k += n
	for k < len(a) && (a[k] == ',' || a[k] == '.') && digitsAt(a, k+1) > 0 {
		k += 1 + digitsAt(a, k+1)
	}
	if k < len(a) && (a[k] == 'e' || a[k] == 'E') {
		e := k + 1
		if e < len(a) && (a[e] == '-' || a[e] == '+') {
			e++
		}
		if m := digitsAt(a, e); m > 0 && e+m == len(a) {
			return true
		}
	}
	switch strings.ToLower(a[k:]) {
	case "", "%", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "k", "x", "st", "nd", "rd", "th", "l", "ul":
		return true
	}
	return false
}

func isHex(a string) bool {
	if len(a) > 2 && a[0] == '0' && (a[1] == 'x' || a[1] == 'X') {
		for k := 2; k < len(a); k++ {
			if !isHexDigit(a[k]) {
				return false
			}
		}
		return true
	}
	if len(a) < 8 {
		return false
	}
	for k := 0; k < len(a); k++ {
		if !isHexDigit(a[k]) {
			return false
		}
	}
	return true
}
