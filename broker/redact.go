package broker

import (
	"slices"
	"strings"
)

// Mask stands for a password that was removed.
const Mask = "xxxxx"

// Redact hides every password in s: the password of each URL's user
// information ("amqp://ops:xxxxx@host/"), and the value of query
// parameters that carry a secret ("?token=xxxxx"). s may be one URL, a
// comma-separated list of them (cluster nodes, management URLs), or free
// text that holds URLs (an error message, a command line). It is the one
// redaction every package calls; url.URL.Redacted is its model.
//
// The user information ends at the last @ of the authority, as url.Parse
// reads it, so a password may hold @, : and %XX. The authority starts
// after "//" and ends at the first byte a user information cannot hold
// (/, ?, #, whitespace, quotes, brackets…). Everything but the secrets is
// kept byte for byte.
func Redact(s string) string {
	if !strings.Contains(s, "//") && !strings.Contains(s, "?") {
		return s
	}
	spans := secrets(s, true)
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	done := 0 // s[:done] is written to b
	for _, sp := range spans {
		if sp[0] < done {
			// Overlaps the previous secret: mask to the end of both.
			done = max(done, sp[1])
			continue
		}
		b.WriteString(s[done:sp[0]])
		b.WriteString(Mask)
		done = sp[1]
	}
	b.WriteString(s[done:])
	return b.String()
}

// Unmask drops the masked passwords Redact left in s: "amqp://u:xxxxx@h/"
// becomes "amqp://u@h/", a URL whose adapter takes the password from where
// it takes it when the URL has none (DLQ_PASSWORD, a context). A password
// that is not the mask stays.
func Unmask(s string) string {
	spans := secrets(s, false)
	var b strings.Builder
	done := 0
	for _, sp := range spans {
		if sp[0] < done || s[sp[0]:sp[1]] != Mask {
			continue
		}
		b.WriteString(s[done : sp[0]-1]) // without the ':' before it
		done = sp[1]
	}
	b.WriteString(s[done:])
	return b.String()
}

// HasPassword reports whether a URL in s has a password in its user
// information (the mask counts as one).
func HasPassword(s string) bool { return len(secrets(s, false)) > 0 }

// secrets finds the byte ranges of s that Redact masks: the passwords of
// user information, and with query the values of secret query parameters.
func secrets(s string, query bool) [][2]int {
	var spans [][2]int // secrets to mask, [from, to)
	for pos := 0; pos < len(s); {
		i := strings.Index(s[pos:], "//")
		if i < 0 {
			break
		}
		start := pos + i + 2
		end := start
		for end < len(s) && inUserinfo(s[end]) {
			end++
		}
		at := strings.LastIndexByte(s[start:end], '@')
		if at < 0 && start >= 3 && s[start-3] == ':' {
			// Only right after a scheme ("amqp://"): see looseAt.
			at = looseAt(s[start:], end-start)
		}
		if at < 0 {
			pos = start
			continue
		}
		if c := strings.IndexByte(s[start:start+at], ':'); c >= 0 {
			spans = append(spans, [2]int{start + c + 1, start + at})
		}
		pos = start + at + 1
	}
	for pos := 0; query && pos < len(s); {
		i := strings.IndexByte(s[pos:], '?')
		if i < 0 {
			break
		}
		pos += i + 1
		for pos < len(s) && !inQueryEnd(s[pos]) {
			end := pos
			for end < len(s) && s[end] != '&' && !inQueryEnd(s[end]) {
				end++
			}
			if k, v, ok := strings.Cut(s[pos:end], "="); ok && v != "" && secretParam(k) {
				spans = append(spans, [2]int{pos + len(k) + 1, end})
			}
			pos = end
			if pos < len(s) && s[pos] == '&' {
				pos++
			}
		}
	}
	return spans
}

// looseAt finds the @ that ends a password url.Parse refuses, one holding
// a / ? or # that was not percent-encoded ("amqp://u:pa/ss@host"): after a
// "user:" that the strict user information (a[:strict]) starts with, the
// last @ before the next space or quote. -1 when there is none. It may mask
// more than a password (a port and a path that holds an @), never less.
func looseAt(a string, strict int) int {
	c := strings.IndexByte(a[:strict], ':')
	if c < 0 || strings.IndexByte(a[:strict], ',') >= 0 || strict == len(a) || strings.IndexByte("/?#", a[strict]) < 0 {
		return -1
	}
	far := strict
	for far < len(a) && (a[far] == '#' || !inQueryEnd(a[far])) && a[far] != ',' {
		far++
	}
	return strings.LastIndexByte(a[:far], '@')
}

// inUserinfo reports whether c may appear in a URL's user information as
// url.Parse accepts it, @ included.
func inUserinfo(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._:~!$&'()*+,;=%@", c) >= 0
}

// inQueryEnd reports whether c ends a query string in text.
func inQueryEnd(c byte) bool {
	return c == '#' || c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'
}

// secretParam reports whether a query parameter carries a secret: a
// password, a token, a signed request's signature or credential.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "pass", "pwd", "sig", "key", "apikey", "api_key", "access_key", "secret_key":
		return true
	}
	for _, w := range []string{"password", "passwd", "secret", "token", "signature", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
