package archive

import (
	"strconv"
	"testing"
)

// naiveStop is stringStop a byte at a time, the reference.
func naiveStop(b []byte) (int, bool) {
	high := false
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return i, high
		}
		high = high || c >= 0x80
	}
	return len(b), high
}

func TestStringStop(t *testing.T) {
	// Every stop byte at every position of a 20-byte run, with and without
	// non-ASCII bytes before and after it.
	for _, stop := range []byte{'"', '\\', 0, 0x1f, '\n'} {
		for _, fill := range []byte{'x', 0xc3, 0x7f, 0x20, 0x80, 0xff, '!', ']', 0x21, 0x5d, 0x5b} {
			for n := 0; n <= 20; n++ {
				for at := 0; at <= n; at++ {
					b := make([]byte, n)
					for i := range b {
						b[i] = fill
					}
					if at < n {
						b[at] = stop
					}
					gi, gh := stringStop(b)
					wi, wh := naiveStop(b)
					if gi != wi || gh != wh {
						t.Fatalf("stringStop(%q) = %d, %v; want %d, %v", b, gi, gh, wi, wh)
					}
				}
			}
		}
	}
}

func FuzzStringStop(f *testing.F) {
	f.Add([]byte("hello \"world\""))
	f.Add([]byte("caf\xc3\xa9 \\n\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gi, gh := stringStop(b)
		wi, wh := naiveStop(b)
		if gi != wi || gh != wh {
			t.Fatalf("stringStop(%q) = %d, %v; want %d, %v", b, gi, gh, wi, wh)
		}
	})
}

func TestParseIntMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-128", "127", "128", "-129", "255", "256", "65535", "-32768",
		"2147483647", "2147483648", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
		"18446744073709551615", "18446744073709551616", "123456789012345678", "1e3", "1.5", "", "-", "00"} {
		for _, bits := range []int{8, 16, 32, 64} {
			n, ok := parseInt([]byte(s), bits)
			wn, err := strconv.ParseInt(s, 10, bits)
			if ok != (err == nil) || (ok && n != wn) {
				t.Errorf("parseInt(%q, %d) = %d, %v; strconv: %d, %v", s, bits, n, ok, wn, err)
			}
			u, ok := parseUint([]byte(s), bits)
			wu, err := strconv.ParseUint(s, 10, bits)
			if ok != (err == nil) || (ok && u != wu) {
				t.Errorf("parseUint(%q, %d) = %d, %v; strconv: %d, %v", s, bits, u, ok, wu, err)
			}
		}
	}
}
