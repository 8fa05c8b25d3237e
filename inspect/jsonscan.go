package inspect

// A small scanner that finds values in a JSON object without decoding the
// whole document. Reason and the body:PATH grouping call it once per message,
// so it allocates nothing on the common path. Invalid JSON simply yields no
// value; it never panics.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index just past the closing quote of the string
// starting at b[i] == '"', and whether it contains escapes; -1 when
// unterminated.
//
// The closing quote is the first quote not escaped, that is not preceded
// by an odd run of backslashes; the vectorised bytes.IndexByte finds each
// candidate, so long values (bodies' padding, stack traces) cost little.
func scanString(b []byte, i int) (int, bool) {
	start := i + 1
	for j := start; j <= len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1, bytes.IndexByte(b[start:], '\\') >= 0
		}
		q += j
		n := 0
		for k := q - 1; k >= start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, bytes.IndexByte(b[start:q], '\\') >= 0
		}
		j = q + 1
	}
	return -1, bytes.IndexByte(b[start:], '\\') >= 0
}

// skipValue returns the index just past the JSON value starting at b[i], or
// -1 when it is malformed.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		j, _ := scanString(b, i)
		return j
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, _ := scanString(b, i)
				if j < 0 {
					return -1
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// objectFields calls fn for each key of the JSON object at b[i] with the raw
// bytes of its value, until fn returns false. It reports false when b is not
// an object.
func objectFields(b []byte, i int, fn func(key []byte, escaped bool, val []byte) bool) bool {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end, esc := scanString(b, i)
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		vend := skipValue(b, i)
		if vend < 0 {
			return false
		}
		if !fn(key, esc, b[i:vend]) {
			return true
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
	return false
}

func keyEquals(key []byte, escaped bool, want string) bool {
	if !escaped {
		return string(key) == want
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s); err != nil {
		return false
	}
	return s == want
}

// jsonField returns the raw value at path (object keys) in the JSON document
// b, or nil when absent.
func jsonField(b []byte, path []string) []byte {
	cur := b
	for _, k := range path {
		var found []byte
		objectFields(cur, 0, func(key []byte, esc bool, val []byte) bool {
			if keyEquals(key, esc, k) {
				found = val
				return false
			}
			return true
		})
		if found == nil {
			return nil
		}
		cur = found
	}
	return cur
}

// rawText renders a raw JSON value as text: strings unquoted, everything else
// (numbers, booleans, objects, arrays) as compact JSON; null as "".
func rawText(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		inner := v[1 : len(v)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner)
		}
		if s, err := strconv.Unquote(string(v)); err == nil {
			return s
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return s
		}
		return string(inner)
	case 'n':
		return ""
	case '{', '[':
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err == nil {
			return buf.String()
		}
		return string(v)
	default:
		return string(v)
	}
}

// looksLikeJSON reports whether b starts (after white space) like a JSON
// object or array.
func looksLikeJSONContainer(b []byte) bool {
	i := skipWS(b, 0)
	return i < len(b) && (b[i] == '{' || b[i] == '[')
}
