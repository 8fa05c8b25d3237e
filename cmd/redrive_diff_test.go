package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/redrive"
)

// demoDryRun runs a dry redrive of the demo's orders.dlq to an archive
// file with transform and checks that nothing was written.
func demoDryRun(t *testing.T, o runOpts, transform string, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	to := filepath.Join(t.TempDir(), "x.jsonl")
	args = append([]string{"redrive", "--broker", "demo:", "orders.dlq", "--to", "file://" + to, "--transform", transform}, args...)
	stdout, stderr, code = runDLQWith(t, o, args...)
	if _, err := os.Stat(to); !os.IsNotExist(err) {
		t.Errorf("%s exists after %v (stat: %v); want nothing written", to, args, err)
	}
	return stdout, stderr, code
}

// countPrefix counts the lines of text that start with prefix.
func countPrefix(text, prefix string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// A dry run with --transform shows the first 3 messages as folded diffs of
// their documents and says how many more there are.
func TestRedriveDryRunShowsTransformDiffs(t *testing.T) {
	stdout, stderr, code := demoDryRun(t, runOpts{}, ".body.retried = true", "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	want := []string{
		"--- 6400749a-e48d-448b-8e67-c8cab29a1f63 before",
		"+++ 6400749a-e48d-448b-8e67-c8cab29a1f63 after",
		"  ⋯ 9 unchanged lines",
		"        }",
		"      ],",
		`      "order_id": "ord_895580",`,
		`+     "retried": true,`,
		`      "total": "21.37"`,
	}
	if !strings.Contains(stdout, strings.Join(want, "\n")+"\n") {
		t.Errorf("the first diff does not start as wanted:\n%s\nstdout:\n%s", diffText(strings.Join(want, "\n"), firstLines(stdout, "--- ", len(want))), stdout)
	}
	if n := countPrefix(stdout, "+++ "); n != 3 {
		t.Errorf("%d diffs, want 3:\n%s", n, stdout)
	}
	if !strings.Contains(stdout, "\n… and 147 more messages through the transform (only the first 3 are shown)\n") {
		t.Errorf("stdout does not count the 147 other messages:\n%s", stdout)
	}
}

// firstLines is n lines of text from the first that starts with prefix.
func firstLines(text, prefix string, n int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return strings.Join(lines[i:min(len(lines), i+n)], "\n")
		}
	}
	return ""
}

// JSON output carries the first 3 diffs and a count of the rest; a message
// the transform fails on has its error instead of a diff, in both outputs,
// with its escapes visible in the text.
func TestRedriveDryRunTransformErrorsInDiffs(t *testing.T) {
	const transform = `if .body.currency == "EUR" then error("no euros \u202e") else .body.retried = true end`
	stdout, stderr, _ := demoDryRun(t, runOpts{}, transform, "--dry-run", "-o", "json")
	var s redrive.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("%v; stdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var got []string
	for _, d := range s.Diffs {
		got = append(got, d.ID+" error="+d.Error+" adds retried="+
			map[bool]string{true: "yes", false: "no"}[strings.Contains(d.Lines, `+     "retried": true`)])
	}
	want := []string{
		"6400749a-e48d-448b-8e67-c8cab29a1f63 error=jq `if .body.currency == \"EUR\" then error(\"no euros \\u202e\") el…`: error: no euros \u202e adds retried=no",
		"e9edf442-8e41-467a-b804-6993f5b37aa6 error= adds retried=yes",
		"b459beb3-4c7c-49b8-bb16-8550d4a89ec8 error=jq `if .body.currency == \"EUR\" then error(\"no euros \\u202e\") el…`: error: no euros \u202e adds retried=no",
	}
	if d := diffText(strings.Join(want, "\n"), strings.Join(got, "\n")); d != "" || s.DiffsMore != 147 {
		t.Errorf("diffs_more %d, want 147; diffs:\n%s", s.DiffsMore, d)
	}

	stdout, _, _ = demoDryRun(t, runOpts{}, transform, "--dry-run")
	if line := "--- 6400749a-e48d-448b-8e67-c8cab29a1f63: the transform failed: jq `if .body.currency == \"EUR\" then error(\"no euros \\u202e\") el…`: error: no euros \\u202e\n"; !strings.Contains(stdout, line) {
		t.Errorf("stdout does not hold\n%s\nstdout:\n%s", line, stdout)
	}
	if strings.Contains(stdout, "\u202e") {
		t.Errorf("stdout carries a raw U+202E:\n%s", stdout)
	}
}

// The preview before the confirmation shows the same first diffs.
func TestRedrivePreviewShowsTransformDiffs(t *testing.T) {
	_, stderr, code := demoDryRun(t, runOpts{TTY: true, Stdin: "n\n"}, ".body.retried = true")
	if code != ExitCancelled {
		t.Errorf("exit %d, want %d (cancelled); stderr:\n%s", code, ExitCancelled, stderr)
	}
	if n := countPrefix(stderr, "+++ "); n != 3 || countPrefix(stderr, `+     "retried": true,`) != 3 ||
		!strings.Contains(stderr, "\n… and 147 more messages through the transform (only the first 3 are shown)\n") {
		t.Errorf("the preview shows %d diffs, want 3 and a count of 147 more:\n%s", n, stderr)
	}
}
