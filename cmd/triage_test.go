package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/inspect"
)

func triageJSON(t *testing.T, args ...string) inspect.TriagePlan {
	t.Helper()
	out, errOut, code := runDLQ(t, append([]string{"triage"}, args...)...)
	if code != ExitOK {
		t.Fatalf("dlq triage %v: exit %d: %s", args, code, errOut)
	}
	var p inspect.TriagePlan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("triage -o json is not JSON: %v\n%.500s", err, out)
	}
	return p
}

func planActions(p inspect.TriagePlan) map[string]string {
	m := map[string]string{}
	for _, g := range p.Groups {
		m[g.ID] = g.Action + "/" + g.Rule
	}
	return m
}

// The demo queue holds four kinds of failure; with every group still
// arriving (a long --quiet), each gets its rule's action.
func TestTriageDemo(t *testing.T) {
	p := triageJSON(t, "demo:orders.dlq", "--quiet", "10000h", "-o", "json")
	want := map[string]string{
		"2b50f3125b": "wait/timeout",
		"4991edfc41": "fix/bean-validation-null",
		"865cdbd9f0": "park/deserialization",
		"e337c0fafc": "park/constraint",
		"d3f8d14a6b": "wait/connection-type",
		"fa64ea1e82": "look/none",
	}
	got := planActions(p)
	var diffs []string
	for id, w := range want {
		if got[id] != w {
			diffs = append(diffs, id+": "+got[id]+", want "+w)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 || len(got) != len(want) {
		t.Errorf("actions differ (%d groups, want %d):\n%s", len(got), len(want), strings.Join(diffs, "\n"))
	}
	if p.Total != 150 || p.Kind != inspect.PlanKind {
		t.Errorf("total %d, kind %q; want 150, %q", p.Total, p.Kind, inspect.PlanKind)
	}
	for _, g := range p.Groups {
		if g.ID == "4991edfc41" && g.Transform != `.body.customerId = "FILL-ME"` {
			t.Errorf("fix transform %q; want the skeleton naming customerId", g.Transform)
		}
		if g.ID == "2b50f3125b" && (g.Evidence.AttemptsMax == 0 || len(g.Evidence.Frameworks) == 0 || g.Evidence.Frameworks[0].Value != "spring" || len(g.Evidence.Destinations) == 0 || g.LastSeen == nil || !g.Arriving) {
			t.Errorf("timeout group evidence: attempts %d, frameworks %v, destinations %v, last seen %v, arriving %t; want all set",
				g.Evidence.AttemptsMax, g.Evidence.Frameworks, g.Evidence.Destinations, g.LastSeen, g.Arriving)
		}
	}
	// Stopped groups (a short --quiet) are redriven.
	p = triageJSON(t, "demo:orders.dlq", "--quiet", "1s", "-o", "json")
	if a := planActions(p)["2b50f3125b"]; a != "redrive/timeout" {
		t.Errorf("timeout group with --quiet 1s: %s; want redrive/timeout", a)
	}
}

// A rules file is tried before the built-in table; a bad one is one line
// that names the fix.
func TestTriageRulesFile(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - name: expired-ok\n    kind: permanent\n    reason: '^expired$'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := triageJSON(t, "demo:orders.dlq", "--rules", rules, "-o", "json")
	if a := planActions(p)["fa64ea1e82"]; a != "park/expired-ok" {
		t.Errorf("expired group with a user rule: %s; want park/expired-ok", a)
	}
	out, _, code := runDLQ(t, "triage", "rules", "--rules", rules)
	if code != ExitOK || !strings.Contains(out, "expired-ok") || !strings.Contains(out, "missing-field") {
		t.Errorf("triage rules: exit %d, output lacks the user rule or the built-in table:\n%s", code, out)
	}
	if err := os.WriteFile(rules, []byte("rules:\n  - name: x\n    kind: flaky\n    reason: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runDLQ(t, "triage", "demo:orders.dlq", "--rules", rules)
	if code != ExitError || !strings.Contains(errOut, `kind "flaky": use transient, permanent or fixable`) {
		t.Errorf("bad rules file: exit %d, stderr %q; want 1 and the kinds to use", code, errOut)
	}
	assertOneLine(t, errOut)
	_, errOut, code = runDLQ(t, "triage", "demo:orders.dlq", "--rules", filepath.Join(dir, "none.yaml"))
	if code != ExitError || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing rules file: exit %d, stderr %q", code, errOut)
	}
}

// The YAML plan reads back as the same plan; apply refuses a fix whose
// transform is a skeleton, and runs nothing without a terminal or --yes.
func TestTriagePlanYAMLAndApplyRefusals(t *testing.T) {
	out, errOut, code := runDLQ(t, "triage", "demo:orders.dlq", "--quiet", "10000h", "-o", "yaml")
	if code != ExitOK {
		t.Fatalf("triage -o yaml: exit %d: %s", code, errOut)
	}
	var p inspect.TriagePlan
	if err := yaml.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan YAML: %v", err)
	}
	j := triageJSON(t, "demo:orders.dlq", "--quiet", "10000h", "-o", "json")
	if a, b := planActions(p), planActions(j); len(a) != 6 || strings.Join(sortedPairs(a), ",") != strings.Join(sortedPairs(b), ",") {
		t.Errorf("YAML plan %v; JSON plan %v", a, b)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runDLQ(t, "triage", "apply", path, "--yes")
	if code != ExitError || !strings.Contains(errOut, "group 4991edfc41: its transform still holds FILL-ME: complete it, or change the action") {
		t.Errorf("apply with a skeleton: exit %d, stderr %q", code, errOut)
	}
	edited := strings.Replace(out, `"FILL-ME"`, `"cus_unknown"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runDLQ(t, "triage", "apply", path)
	if code != ExitError || !strings.Contains(errOut, "pass `--yes` to run it without a terminal") {
		t.Errorf("apply without a terminal or --yes: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runDLQ(t, "triage", "apply", filepath.Join(dir, "none.yaml"))
	if code != ExitError || !strings.Contains(errOut, "no such file: write one with `dlq triage QUEUE -o yaml") {
		t.Errorf("apply of a missing plan: exit %d, stderr %q", code, errOut)
	}
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Bad flags are one line that names the fix, before anything is read.
func TestTriageFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"triage", "q", "--quiet", "0s"}, "`--quiet 0s`: give a positive duration such as 10m"},
		{[]string{"triage", "q", "--max-groups", "0"}, "`--max-groups` at least 1"},
		{[]string{"triage", "q", "-o", "csv"}, "unknown `--output` \"csv\" for this command: use one of table, json, yaml"},
		{[]string{"triage", "apply", "p.yaml", "--canary-wait", "-1s"}, "`--canary-wait` must be 0"},
	}
	for _, c := range cases {
		_, errOut, code := runDLQ(t, append([]string{"--broker", "demo:"}, c.args...)...)
		if code != ExitError || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, errOut, c.want)
		}
		assertOneLine(t, errOut)
	}
}
