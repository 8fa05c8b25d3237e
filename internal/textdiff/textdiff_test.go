package textdiff

import (
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       []string
	}{
		{"same", "x\ny", "x\ny\n", []string{"  x", "  y"}},
		{"replace", "a\nb\nc", "a\nB\nc", []string{"  a", "- b", "+ B", "  c"}},
		{"insert", "a\nc", "a\nb\nc", []string{"  a", "+ b", "  c"}},
		{"delete", "a\nb\nc", "a\nc", []string{"  a", "- b", "  c"}},
		{"all new", "a", "b", []string{"- a", "+ b"}},
		{"moved", "a\nb\nc\nd", "b\nc\nd\na", []string{"- a", "  b", "  c", "  d", "+ a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lines(tt.a, tt.b)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Lines:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLinesLargeInputs(t *testing.T) {
	a := strings.Repeat("a\n", 3000) + "x"
	b := strings.Repeat("b\n", 3000) + "x"
	got := Lines(a, b)
	if len(got) != 6001 || got[0] != "- a" || got[3000] != "+ b" || got[6000] != "  x" {
		t.Errorf("Lines of large inputs: %d lines, %q … %q", len(got), got[0], got[len(got)-1])
	}
}

func TestFold(t *testing.T) {
	lines := []string{"  1", "  2", "  3", "  4", "- 5", "+ five", "  6", "  7", "  8", "  9"}
	want := []string{"  ⋯ 3 unchanged lines", "  4", "- 5", "+ five", "  6", "  ⋯ 3 unchanged lines"}
	if got := Fold(lines, 1); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Fold:\n got %q\nwant %q", got, want)
	}
}
