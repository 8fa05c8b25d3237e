package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archiveLines counts the messages in an archive file written by a test.
func archiveLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// An archive is never changed by a redrive that reads it: a second redrive
// of the same messages to the same destination is refused before anything
// is sent (its dry run too), and --again sends them anyway.
func TestRedriveArchiveTwiceIsRefused(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	src, out := filepath.Join(dir, "dlq.jsonl"), filepath.Join(dir, "out.jsonl")
	if _, stderr, code := runDLQ(t, "export", "--broker", "demo:", "orders.dlq", "--to", "file://"+src); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	n := archiveLines(t, src)
	redrive := func(extra ...string) (string, ExitCode) {
		t.Helper()
		args := append([]string{"redrive", "--broker", "file://" + src, "orders.dlq", "--to", "file://" + out, "--yes"}, extra...)
		_, stderr, code := runDLQ(t, args...)
		return stderr, code
	}
	if stderr, code := redrive(); code != ExitOK {
		t.Fatalf("first redrive: exit %d: %s", code, stderr)
	}
	if got := archiveLines(t, out); got != n {
		t.Fatalf("first redrive wrote %d messages, want %d", got, n)
	}
	for _, extra := range [][]string{nil, {"--dry-run"}, {"--limit", "1"}} {
		stderr, code := redrive(extra...)
		if code != ExitError {
			t.Errorf("%v: exit %d, want %d: %s", extra, code, ExitError, stderr)
		}
		if !strings.Contains(stderr, "already redriven to file://"+out) || !strings.Contains(stderr, "--again") {
			t.Errorf("%v: stderr does not say where the messages went and how to send them anyway:\n%s", extra, stderr)
		}
		if got := archiveLines(t, out); got != n {
			t.Fatalf("%v: the refused redrive sent messages: %d in the destination, want %d", extra, got, n)
		}
	}
	if stderr, code := redrive("--again", "--limit", "2"); code != ExitOK {
		t.Fatalf("--again: exit %d: %s", code, stderr)
	}
	if got := archiveLines(t, out); got != n+2 {
		t.Fatalf("--again: %d messages in the destination, want %d", got, n+2)
	}
}
