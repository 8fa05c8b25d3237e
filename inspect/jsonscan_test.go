package inspect

import (
	"bytes"
	"testing"
)

func TestQuoteOrBackslash(t *testing.T) {
	for _, stop := range []byte{'"', '\\'} {
		for _, fill := range []byte{'x', 0, 0xa2, 0xdc, 0x21, 0x5d, 0x23, 0x5b, 0xff} {
			for n := 0; n <= 20; n++ {
				for at := 0; at <= n; at++ {
					b := bytes.Repeat([]byte{fill}, n)
					if at < n {
						b[at] = stop
					}
					if got, want := quoteOrBackslash(b), bytes.IndexAny(b, "\"\\"); got != want {
						t.Fatalf("quoteOrBackslash(%q) = %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}

func FuzzQuoteOrBackslash(f *testing.F) {
	f.Add([]byte(`abc\"def"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := quoteOrBackslash(b), bytes.IndexAny(b, "\"\\"); got != want {
			t.Fatalf("quoteOrBackslash(%q) = %d, want %d", b, got, want)
		}
	})
}
