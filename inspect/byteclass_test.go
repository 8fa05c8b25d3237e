package inspect

import "testing"

// The shaper's byte class table agrees, for every byte, with the classes
// written out as comparisons.
func TestByteClass(t *testing.T) {
	for i := range 256 {
		c := byte(i)
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
		delim := false
		switch c {
		case '(', ')', '[', ']', '{', '}', ',', ';', '=', '"', '\'', '`', '<', '>', '|':
			delim = true
		}
		digit := c >= '0' && c <= '9'
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
		hex := digit || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		got := [...]bool{isSpace(c), isDelim(c), isDigit(c), isLetter(c), isAlnum(c), isHexDigit(c)}
		want := [...]bool{space, delim, digit, letter, digit || letter, hex}
		if got != want {
			t.Errorf("byte %#x: space, delim, digit, letter, alnum, hex = %v, want %v", c, got, want)
		}
	}
}
