package broker

import "unicode/utf8"

// IsText reports whether a body or byte string is text: valid UTF-8
// without NUL, DEL or other control characters besides tab, newline and
// carriage return. Anything else is shown and stored as binary.
func IsText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}
