package archive

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

const (
	lsb = 0x0101010101010101 // the low bit of each byte of a word
	msb = 0x8080808080808080 // the high bit of each byte
)

// stringStop returns the index of the first byte of b that ends a run of
// plain string content — a quote, a backslash or a control character
// (< 0x20) — or len(b) when there is none, and whether b[:index] holds a
// byte >= 0x80 (so that the caller checks UTF-8 only when it must).
//
// Short runs (keys, names, the stretches between escapes) are tested eight
// bytes at a time (SWAR). A run longer than that, as bodies are, is ended
// by the next quote or backslash, found by the vectorised bytes.IndexByte,
// and only checked for control characters on the way, which is about three
// times cheaper than testing every byte for all four kinds.
func stringStop(b []byte) (int, bool) {
	const short = 64
	n := min(len(b), short)
	k, high := stringStopWords(b[:n])
	if k < n || n == len(b) {
		return k, high
	}
	rest := b[n:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		end = len(rest)
	}
	if bs := bytes.IndexByte(rest[:end], '\\'); bs >= 0 {
		end = bs
	}
	k, h := controlStop(rest[:end])
	return n + k, high || h
}

// controlStop returns the index of the first control character (< 0x20)
// of b, or len(b), and whether b[:index] holds a byte >= 0x80.
func controlStop(b []byte) (int, bool) {
	var high uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := (w - lsb*0x20) &^ w & msb; m != 0 {
			k := bits.TrailingZeros64(m) >> 3
			high |= w & (1<<(8*k) - 1)
			return i + k, high&msb != 0
		}
		high |= w
	}
	high &= msb
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 {
			break
		}
		high |= uint64(c & 0x80)
	}
	return i, high != 0
}

// stringStopWords is stringStop eight bytes at a time throughout.
func stringStopWords(b []byte) (int, bool) {
	var high uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ (lsb * '"')
		s := w ^ (lsb * '\\')
		// A byte is flagged when it is zero after the XOR (quote,
		// backslash) or below 0x20; bytes with the high bit set are never
		// flagged. The lowest flag is exact: borrows only carry upwards
		// from a byte that really matched.
		m := ((q - lsb) &^ q) | ((s - lsb) &^ s) | ((w - lsb*0x20) &^ w)
		m &= msb
		if m != 0 {
			k := bits.TrailingZeros64(m) >> 3
			high |= w & (1<<(8*k) - 1) & msb
			return i + k, high != 0
		}
		high |= w & msb
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		high |= uint64(c & 0x80)
	}
	return i, high != 0
}
