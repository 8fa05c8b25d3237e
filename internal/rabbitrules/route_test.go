package rabbitrules

import (
	"strings"
	"testing"
)

func TestTopicMatch(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"a.b", "a.b", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.#", "a", true},
		{"a.#", "a.b.c", true},
		{"#", "", true},
		{"#.dead", "orders.dead", true},
		{"#.dead", "orders.live", false},
		{"*.x.#", "a.x", true},
		{"*", "", true},
		{"*.*", "a", false},
		{"a.#.z", "a.z", true},
		{"a.#.z", "a.b.c.z", true},
		{"a.#.z", "a.b.c", false},
		{"#.#", "", true},
		{"#.a.#", "a", true},
		{"#.a.#", "b", false},
		{"#", "a.b", true}, {"a.#.c", "a.c", true}, {"a.#.c", "a.b.x.c", true}, {"*.c", "c", false},
		{"dead.letter", "dead.letter", true}, {"dead.letter", "dead", false},
		{strings.Repeat("#.", 200) + "x", strings.Repeat("a.", 200) + "b", false},
	}
	for _, tt := range tests {
		if got := TopicMatch(tt.pattern, tt.key); got != tt.want {
			t.Errorf("TopicMatch(%q, %q) = %v, want %v", tt.pattern, tt.key, got, tt.want)
		}
	}
}

// TestTopicMatchManyHashes: a pattern of 40 # and a last word that the key
// lacks; a matcher that backtracks tries every way of spreading 60 words
// over 40 #s and does not finish.
func TestTopicMatchManyHashes(t *testing.T) {
	pattern := strings.Repeat("#.", 40) + "z"
	key := strings.TrimSuffix(strings.Repeat("a.", 60), ".")
	if TopicMatch(pattern, key) {
		t.Errorf("TopicMatch(%q, %q) = true, want false", pattern, key)
	}
	if !TopicMatch(pattern, key+".z") {
		t.Errorf("TopicMatch(%q, %q) = false, want true", pattern, key+".z")
	}
}

func TestRoutes(t *testing.T) {
	for _, tc := range []struct {
		typ, binding, key string
		want              bool
	}{
		{"direct", "a", "a", true},
		{"direct", "a.*", "a.b", false},
		{"topic", "a.*", "a.b", true},
		{"topic", "a", "b", false},
		{"fanout", "x", "y", true},
		{"headers", "", "y", true},
		{"x-delayed-message", "x", "y", true},
	} {
		if got := Routes(tc.typ, tc.binding, tc.key); got != tc.want {
			t.Errorf("Routes(%q, %q, %q) = %v, want %v", tc.typ, tc.binding, tc.key, got, tc.want)
		}
	}
}

// matchRef is the definition of a topic match, written the obvious way
// (backtracking): the reference FuzzTopicMatch compares against.
func matchRef(p, k []string) bool {
	if len(p) == 0 {
		return len(k) == 0
	}
	switch p[0] {
	case "#":
		for i := 0; i <= len(k); i++ {
			if matchRef(p[1:], k[i:]) {
				return true
			}
		}
		return false
	case "*":
		return len(k) > 0 && matchRef(p[1:], k[1:])
	}
	return len(k) > 0 && k[0] == p[0] && matchRef(p[1:], k[1:])
}

func FuzzTopicMatch(f *testing.F) {
	for _, s := range [][2]string{{"a.#.z", "a.b.z"}, {"#", ""}, {"*.*", "a"}, {"#.#.a", "a.a"}, {"a.*.#", "a.b.c.d"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, key string) {
		p, k := strings.Split(pattern, "."), strings.Split(key, ".")
		if len(p) > 12 || len(k) > 16 {
			return // the reference is exponential
		}
		if got, want := TopicMatch(pattern, key), matchRef(p, k); got != want {
			t.Errorf("TopicMatch(%q, %q) = %v, reference says %v", pattern, key, got, want)
		}
	})
}
