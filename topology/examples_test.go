package topology

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func loadExample(t *testing.T, name string) *Model {
	t.Helper()
	m, err := Load(filepath.Join("testdata", "examples", name))
	if err != nil {
		if se, ok := err.(*SpecError); ok {
			for _, p := range se.Problems {
				t.Log(p)
			}
		}
		t.Fatalf("load %s: %v", name, err)
	}
	return m
}

func TestExamplesLoadLintAndGraph(t *testing.T) {
	files, err := filepath.Glob("testdata/examples/*.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("want at least 7 examples, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m := loadExample(t, filepath.Base(f))
			for _, fd := range Lint(m) {
				if fd.Severity == SevError {
					t.Errorf("lint error in a shipped example: %s", fd)
				} else {
					t.Logf("%s", fd)
				}
			}
			for _, format := range []string{GraphMermaid, GraphDot} {
				var b bytes.Buffer
				if err := WriteGraph(&b, m, format); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "n0") {
					t.Errorf("%s graph has no nodes:\n%s", format, b.String())
				}
			}
		})
	}
}
