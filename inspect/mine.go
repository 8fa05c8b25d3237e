// Mining: similar shapes merge, Drain-style.

package inspect

import (
	"sort"
	"strings"
)

// MinerDepth is how many leading words two shapes must share to merge: they
// name the error ("Customer <id> not found" never merges with "Order <id>
// not found").
const MinerDepth = 2

// MinerSimilarity is the least share of equal words of two shapes that
// merge.
const MinerSimilarity = 0.6

// Templates maps each mined shape to its template.
type Templates map[string]string

// Mine merges similar shapes into templates: shapes of the same number of
// words whose first MinerDepth words are equal, that differ only in literal
// words (never in a placeholder), in at most 1 - MinerSimilarity of their
// words, and keep at least two literal words in common. Differing words
// become <*>. Shapes are taken in sorted order, so the result depends only
// on the set of shapes, never on the order in which messages came.
func Mine(shapes []string) Templates {
	sorted := append([]string(nil), shapes...)
	sort.Strings(sorted)
	type cluster struct {
		tokens  []string
		members []string
	}
	buckets := map[string][]*cluster{}
	var order []*cluster
	for i, sh := range sorted {
		if i > 0 && sorted[i-1] == sh {
			continue
		}
		toks := words(sh)
		key := bucketKey(toks)
		var best *cluster
		bestSim := 0.0
		for _, c := range buckets[key] {
			if sim, ok := similar(c.tokens, toks); ok && sim > bestSim {
				best, bestSim = c, sim
			}
		}
		if best == nil {
			c := &cluster{tokens: toks, members: []string{sh}}
			buckets[key] = append(buckets[key], c)
			order = append(order, c)
			continue
		}
		for k := range best.tokens {
			if best.tokens[k] != toks[k] {
				best.tokens[k] = PhAny
			}
		}
		best.members = append(best.members, sh)
	}
	out := make(Templates, len(sorted))
	for _, c := range order {
		t := strings.Join(c.tokens, " ")
		for _, m := range c.members {
			out[m] = t
		}
	}
	return out
}

func bucketKey(toks []string) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("#", min(len(toks), 64)))
	for k := 0; k < MinerDepth && k < len(toks); k++ {
		b.WriteByte(0)
		b.WriteString(toks[k])
	}
	return b.String()
}

// similar is the share of equal words of a template and a shape of the same
// length, and whether they may merge.
func similar(tmpl, toks []string) (float64, bool) {
	if len(tmpl) != len(toks) || len(toks) <= MinerDepth {
		return 0, false
	}
	equal, literal := 0, 0
	for k := range toks {
		t, s := tmpl[k], toks[k]
		switch {
		case t == s:
			equal++
			if isWord(s) {
				literal++
			}
		case t == PhAny:
			if strings.IndexByte(s, '<') >= 0 {
				return 0, false
			}
			equal++
		default:
			if k < MinerDepth || strings.IndexByte(s, '<') >= 0 || strings.IndexByte(t, '<') >= 0 {
				return 0, false
			}
		}
	}
	sim := float64(equal) / float64(len(toks))
	if sim < MinerSimilarity || literal < 2 {
		return 0, false
	}
	return sim, true
}

// isWord: a literal word with a letter, no placeholder.
func isWord(s string) bool {
	if strings.IndexByte(s, '<') >= 0 {
		return false
	}
	for k := 0; k < len(s); k++ {
		if isLetter(s[k]) {
			return true
		}
	}
	return false
}

// MatchTemplate reports whether shape fits template word by word, <*>
// matching any word.
func MatchTemplate(template, shape string) bool {
	if template == shape {
		return true
	}
	for {
		t, trest, tok := strings.Cut(template, " ")
		s, srest, sok := strings.Cut(shape, " ")
		if t != s && t != PhAny {
			return false
		}
		if !tok || !sok {
			return tok == sok
		}
		template, shape = trest, srest
	}
}

// placeholders lists the placeholders of a template in order: typed ones
// (as Shape's values are ordered) and <*> words.
func placeholders(template string) []string {
	var out []string
	for i := 0; ; {
		start, end := nextPlaceholder(template, i)
		if start < 0 {
			return out
		}
		out = append(out, template[start:end])
		i = end
	}
}

// placeholderCount is len(placeholders(string(shape))), without building
// the list (stats counts the placeholders of every message's shape).
func placeholderCount(shape []byte) int {
	n := 0
	for i := 0; ; n++ {
		start, end := nextPlaceholder(shape, i)
		if start < 0 {
			return n
		}
		i = end
	}
}

// nextPlaceholder finds the first placeholder of s at or after i, a typed
// one or <*>: s[start:end]; start is -1 when there is none.
func nextPlaceholder[S ~string | ~[]byte](s S, i int) (start, end int) {
	for i < len(s) {
		if s[i] != '<' {
			i++
			continue
		}
		e := i + 1
		for e < len(s) && s[e] != '>' {
			e++
		}
		if e == len(s) {
			break
		}
		switch string(s[i : e+1]) {
		case PhNum, PhUUID, PhHex, PhID, PhTime, PhIP, PhEmail, PhStr, PhAny:
			return i, e + 1
		}
		i = e + 1
	}
	return -1, len(s)
}

// words splits a shape into its words: Shape separates them by one ASCII
// space (other spaces stay inside words).
func words(shape string) []string { return strings.Split(shape, " ") }
