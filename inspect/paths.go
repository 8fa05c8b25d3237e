package inspect

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/itchyny/gojq"

	"github.com/dlq-tools/dlq/broker"
)

// docPaths returns the plain paths (.a.b."c") that q reads from the message
// document itself: operands of comparisons and boolean operators, the left
// side of a pipe, and the arguments of select. Paths read after a pipe (a
// different input) are not the document's and are left out.
func docPaths(q *gojq.Query) [][]string {
	var out [][]string
	seen := map[string]bool{}
	var walkQ func(q *gojq.Query)
	var walkT func(t *gojq.Term)
	walkQ = func(q *gojq.Query) {
		if q == nil || len(q.Patterns) > 0 {
			return
		}
		walkQ(q.Left)
		if q.Op != gojq.OpPipe {
			walkQ(q.Right)
		}
		walkT(q.Term)
	}
	walkT = func(t *gojq.Term) {
		if t == nil {
			return
		}
		switch t.Type {
		case gojq.TermTypeIndex:
			if p := plainPath(t); len(p) > 0 {
				if k := strings.Join(p, "\x00"); !seen[k] {
					seen[k] = true
					out = append(out, p)
				}
			}
		case gojq.TermTypeQuery:
			if len(t.SuffixList) == 0 {
				walkQ(t.Query)
			}
		case gojq.TermTypeUnary:
			if t.Unary != nil {
				walkT(t.Unary.Term)
			}
		case gojq.TermTypeFunc:
			if t.Func != nil && (t.Func.Name == "select" || t.Func.Name == "not") {
				for _, a := range t.Func.Args {
					walkQ(a)
				}
			}
		case gojq.TermTypeIf:
			if t.If != nil {
				walkQ(t.If.Cond)
			}
		}
	}
	walkQ(q)
	return out
}

// plainPath is the list of keys of .a.b."c", up to the first suffix that is
// not a key (an iteration, a slice, a computed index).
func plainPath(t *gojq.Term) []string {
	key := func(ix *gojq.Index) (string, bool) {
		switch {
		case ix == nil || ix.IsSlice || ix.Start != nil || ix.End != nil:
			return "", false
		case ix.Name != "":
			return ix.Name, true
		case ix.Str != nil && len(ix.Str.Queries) == 0:
			return ix.Str.Str, true
		}
		return "", false
	}
	k, ok := key(t.Index)
	if !ok {
		return nil
	}
	p := []string{k}
	for _, s := range t.SuffixList {
		if s.Iter {
			break
		}
		k, ok := key(s.Index)
		if !ok {
			break
		}
		p = append(p, k)
	}
	return p
}

// pathWatch records, for each document path a filter reads, whether any
// examined message had a value there, and the keys found next to where it
// was missing (for suggestions).
type pathWatch struct {
	paths    [][]string
	done     atomic.Bool // every path was found: nothing left to watch
	mu       sync.Mutex
	examined int64
	found    []bool
	siblings []map[string]bool
}

func newPathWatch(paths [][]string) *pathWatch {
	w := &pathWatch{paths: paths, found: make([]bool, len(paths)), siblings: make([]map[string]bool, len(paths))}
	if len(paths) == 0 {
		w.done.Store(true)
	}
	return w
}

// maxSiblings bounds the keys kept per path for suggestions.
const maxSiblings = 256

func (w *pathWatch) observe(doc any) {
	if w == nil || w.done.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.examined++
	all := true
	for i, p := range w.paths {
		if w.found[i] || w.lookup(i, p, doc) {
			w.found[i] = true
			continue
		}
		all = false
	}
	if all {
		w.done.Store(true)
	}
}

// lookup reports whether doc has a non-null value at p; when it has not,
// it keeps the keys of the object where p ran out.
func (w *pathWatch) lookup(i int, p []string, doc any) bool {
	v := doc
	for j, k := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		x, ok := m[k]
		if !ok || x == nil {
			if w.siblings[i] == nil {
				w.siblings[i] = map[string]bool{}
			}
			for s := range m {
				if len(w.siblings[i]) < maxSiblings {
					w.siblings[i][strings.Join(append(slices.Clone(p[:j]), s), ".")] = true
				}
			}
			return false
		}
		v = x
	}
	return true
}

// MissingPath is a path a filter reads that was null in every message it
// was evaluated on.
type MissingPath struct {
	Path     string   `json:"path"`     // as jq writes it: .body.ammount
	Nearest  []string `json:"nearest"`  // existing paths with the closest names
	Examined int64    `json:"examined"` // messages the filter saw
}

// MissingPaths returns the document paths q reads that were null in every
// message q matched so far (none when q saw no message).
func (q *Query) MissingPaths() []MissingPath {
	w := q.watch
	if w == nil || w.done.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.examined == 0 {
		return nil
	}
	var out []MissingPath
	for i, p := range w.paths {
		if w.found[i] {
			continue
		}
		name := strings.Join(p, ".")
		cands := make([]string, 0, len(w.siblings[i]))
		for s := range w.siblings[i] {
			cands = append(cands, s)
		}
		out = append(out, MissingPath{Path: "." + name, Nearest: prefixed(broker.Nearest(name, cands, 3)), Examined: w.examined})
	}
	return out
}

func prefixed(ss []string) []string {
	for i, s := range ss {
		ss[i] = "." + s
	}
	return ss
}
