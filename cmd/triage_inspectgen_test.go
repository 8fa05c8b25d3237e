package cmd

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Triage's suggestions on the incident archive that scripts/bench/inspectgen
// writes (the archive `make bench` measures) follow the rule table: each of
// its five templates is placed by the rule the table gives its reason, and
// the one no rule knows is looked at.
func TestTriageInspectgenArchive(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "inspectgen")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", gen, "../scripts/bench/inspectgen").CombinedOutput(); err != nil {
		t.Fatalf("build inspectgen: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "incident.jsonl")
	if out, err := exec.Command(gen, "-templates", "0", "-n", "5000", "-size", "200", "-o", path).CombinedOutput(); err != nil {
		t.Fatalf("inspectgen: %v\n%s", err, out)
	}
	// Every group is still arriving (a long --quiet): transient ones wait.
	p := triageJSON(t, "file://"+path, "--quiet", "100000h", "-o", "json")
	want := map[string]string{
		"ERROR: duplicate key":                   "park/constraint",
		"Read timed out calling":                 "wait/timeout",
		"Inventory service returned":             "wait/server-error",
		"Customer <id> not found":                "look/none",
		"Cannot deserialize value of type java.": "park/deserialization",
	}
	got := map[string]string{}
	for _, g := range p.Groups {
		for prefix := range want {
			if strings.HasPrefix(g.Template, prefix) {
				got[prefix] = g.Action + "/" + g.Rule
			}
		}
	}
	for prefix, w := range want {
		if got[prefix] != w {
			t.Errorf("%q: %q, want %q", prefix, got[prefix], w)
		}
	}
	if len(p.Groups) != 5 || p.Total != 5000 {
		t.Errorf("%d groups of %d messages; want 5 of 5000", len(p.Groups), p.Total)
	}
}
