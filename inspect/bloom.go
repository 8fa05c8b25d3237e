package inspect

import "math"

// bloom is a fixed-size Bloom filter over strings with k probes derived by
// double hashing from one 64-bit FNV-1a hash. It is deterministic: the same
// input always gives the same answers.
type bloom struct {
	bits []uint64
	mask uint64
	k    int
	n    int64 // insertions of new keys
}

// newBloom makes a filter of m bits (a power of two) with k probes.
func newBloom(m uint64, k int) *bloom {
	return &bloom{bits: make([]uint64, m/64), mask: m - 1, k: k}
}

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// addSeen adds s and reports whether it was (probably) there already.
func (b *bloom) addSeen(s string) bool {
	h1 := splitmix(fnv1a(s))
	h2 := splitmix(h1) | 1
	seen := true
	for i := 0; i < b.k; i++ {
		p := (h1 + uint64(i)*h2) & b.mask
		w, bit := p>>6, uint64(1)<<(p&63)
		if b.bits[w]&bit == 0 {
			seen = false
			b.bits[w] |= bit
		}
	}
	if !seen {
		b.n++
	}
	return seen
}

// falsePositiveRate estimates the chance that a new key is reported as seen,
// after the insertions so far: (1 - e^(-kn/m))^k.
func (b *bloom) falsePositiveRate() float64 {
	m := float64(len(b.bits) * 64)
	return math.Pow(1-math.Exp(-float64(b.k)*float64(b.n)/m), float64(b.k))
}
