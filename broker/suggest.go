package broker

import "sort"

// Nearest returns up to n of names closest to s by edit distance, closest
// first, keeping only those close enough to be a likely typo (at most a
// third of s's length, and at least 2, edits away). It is the "did you
// mean" of queue names, filter paths and spec fields.
func Nearest(s string, names []string, n int) []string {
	limit := max(2, len([]rune(s))/3)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, name := range names {
		if name == s || seen[name] {
			continue
		}
		seen[name] = true
		if d := EditDistance(s, name); d <= limit {
			cs = append(cs, cand{name, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || cs[i].d == cs[j].d && cs[i].name < cs[j].name })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// EditDistance is the Levenshtein distance between a and b (in bytes);
// strings longer than 64 bytes count as far apart.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
