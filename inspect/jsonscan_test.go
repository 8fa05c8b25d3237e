package inspect

import (
	"bytes"
	"strings"
	"testing"
)

// refScanString is scanString a byte at a time, the reference: a backslash
// escapes the byte after it.
func refScanString(b []byte, i int) (int, bool) {
	esc := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			i++
		}
	}
	return -1, esc
}

func TestScanString(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, s := range []string{
		`""`, `"a"`, `"a\"b"`, `"a\\"`, `"a\\\"b"`, `"a\\\\"x`, `"\n\u005c"`, `"unterminated`, `"ends in \`,
		`"\"`, `"\\\"`, `"` + long + `\"` + long + `"`, `"` + long + `\\` + `"` + long, `"` + long,
	} {
		b := []byte(s)
		gi, ge := scanString(b, 0)
		wi, we := refScanString(b, 0)
		if gi != wi || (gi >= 0 && ge != we) {
			t.Errorf("scanString(%.40q) = %d, %v; want %d, %v", s, gi, ge, wi, we)
		}
	}
}

func FuzzScanString(f *testing.F) {
	f.Add([]byte(`"abc\"def\\"`))
	f.Add([]byte(`"` + strings.Repeat("\\", 5) + `""`))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte{'"'}, b...)
		gi, ge := scanString(b, 0)
		wi, we := refScanString(b, 0)
		if gi != wi || (gi >= 0 && ge != we) {
			t.Fatalf("scanString(%q) = %d, %v; want %d, %v", b, gi, ge, wi, we)
		}
		if gi >= 0 && bytes.IndexByte(b[1:gi-1], '"') >= 0 && !ge {
			t.Fatalf("a quote inside %q without an escape", b)
		}
	})
}
