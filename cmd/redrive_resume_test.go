package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
)

// journalFixture exports the demo's orders.dlq to an archive and writes an
// interrupted journal of a redrive from it to dest (run id "old1"). It
// returns the archive and the journal.
func journalFixture(t *testing.T, dest string) (src, journal string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	src = filepath.Join(t.TempDir(), "dlq.jsonl")
	if _, stderr, code := runDLQ(t, "export", "--broker", "demo:", "orders.dlq", "--to", "file://"+src); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	dir := redrive.JournalDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := redrive.JournalKey("file://"+src, "orders.dlq")
	journal = filepath.Join(dir, key+"-old1.journal")
	hdr := fmt.Sprintf(`H {"v":1,"run_id":"old1","key":%q,"started":"2026-11-25T21:03:00Z","broker":%q,"source":"orders.dlq","destination":%q,"plan":{"to":%q}}`,
		key, "file://"+src, dest, dest)
	if err := os.WriteFile(journal, []byte(hdr+"\nP nothing-real\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return src, journal
}

func journalState(t *testing.T, path string) string {
	t.Helper()
	stdout, stderr, code := runDLQ(t, "redrive", "journals", "-o", "json")
	var js []redrive.JournalInfo
	if code != ExitOK || json.Unmarshal([]byte(stdout), &js) != nil {
		t.Fatalf("journals: exit %d %s %s", code, stdout, stderr)
	}
	for _, j := range js {
		if j.Path == path {
			return j.State
		}
	}
	return "removed"
}

// --resume finishes only an interrupted run with the destination and
// selection given now; another one is named, and nothing moves.
func TestRedriveResumeOnlyTheMatchingJournal(t *testing.T) {
	dir := t.TempDir()
	a, b := "file://"+filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	src, journal := journalFixture(t, a)
	_, stderr, code := runDLQ(t, "redrive", "--broker", "file://"+src, "orders.dlq", "--to", "file://"+b, "--resume", "--yes")
	if code != ExitError || !strings.Contains(stderr, "old1  2026-11-25 21:03 UTC  orders.dlq → "+a+"  every message") {
		t.Errorf("--resume to another destination: exit %d, want %d, naming the interrupted run:\n%s", code, ExitError, stderr)
	}
	if _, err := os.Stat(b); err == nil {
		t.Errorf("--resume to another destination moved messages to %s", b)
	}
	if got := journalState(t, journal); got != redrive.JournalInterrupted {
		t.Errorf("journal %s after the refused resume, want %s", got, redrive.JournalInterrupted)
	}
	_, stderr, code = runDLQ(t, "redrive", "--broker", "file://"+src, "orders.dlq", "--resume", "--yes")
	if code != ExitOK {
		t.Fatalf("--resume: exit %d: %s", code, stderr)
	}
	if got := journalState(t, journal); got != redrive.JournalFinished {
		t.Errorf("journal %s after the resume, want %s", got, redrive.JournalFinished)
	}
}

// A run that completes the redrive an interrupted one had begun (same
// source, destination and selection) closes its journal: later runs no
// longer offer it.
func TestRedriveCompletedRunClosesInterruptedJournal(t *testing.T) {
	a := "file://" + filepath.Join(t.TempDir(), "a.jsonl")
	src, journal := journalFixture(t, a)
	run := func(extra ...string) string {
		t.Helper()
		_, stderr, code := runDLQ(t, append([]string{"redrive", "--broker", "file://" + src, "orders.dlq", "--yes"}, extra...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		return stderr
	}
	// Another selection leaves it.
	run("--to", a, "--limit", "1")
	if got := journalState(t, journal); got != redrive.JournalInterrupted {
		t.Fatalf("journal %s after a run of another selection, want %s", got, redrive.JournalInterrupted)
	}
	if stderr := run("--to", a, "--again"); !strings.Contains(stderr, "closed 1 interrupted journal") {
		t.Errorf("the completing run does not say it closed the journal:\n%s", stderr)
	}
	if got := journalState(t, journal); got != redrive.JournalFinished {
		t.Errorf("journal %s after the completing run, want %s", got, redrive.JournalFinished)
	}
	if stderr := run("--to", a, "--again", "--limit", "1"); strings.Contains(stderr, "interrupted") {
		t.Errorf("a later run still notes an interrupted redrive:\n%s", stderr)
	}
}

// A confirmed run moves the messages its preview chose, and its journal
// records them: --resume of the interrupted run moves only those, not a
// message that arrived since, though the run's filter matches it.
func TestRedriveResumeMovesWhatThePreviewChose(t *testing.T) {
	b := &moveFake{dlq: fakeDead(6)}
	f, outs := moveFactory(t, b, true)
	state := os.Getenv("XDG_STATE_HOME")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.published = cancel // interrupted at its first publish
	code := execute(ctx, f, []string{"redrive", "orders.dlq", "--filter", ".body.n % 2 == 0", "--window", "1", "--concurrency", "1"})
	_, stderr := outs()
	if code != ExitPartial || len(b.dest) == 0 || len(b.dest) == 3 {
		t.Fatalf("the interrupted run: exit %d with %d moved, want %d after some; stderr:\n%s", code, len(b.dest), ExitPartial, stderr)
	}
	b.published = nil
	late := fakeDead(7)[6] // {"n":6}: the filter matches it
	b.dlq = append(b.dlq, late)

	f, outs = moveFactory(t, b, false)
	t.Setenv("XDG_STATE_HOME", state)
	code = execute(context.Background(), f, []string{"redrive", "orders.dlq", "--resume", "--yes"})
	stdout, stderr := outs()
	if code != ExitOK {
		t.Fatalf("--resume: exit %d:\n%s%s", code, stdout, stderr)
	}
	var moved, left []string
	for _, m := range b.dest {
		moved = append(moved, m.ID)
	}
	for _, m := range b.dlq {
		left = append(left, m.ID)
	}
	slices.Sort(moved)
	slices.Sort(left)
	if d := testdiff.Lines([]string{"m00", "m02", "m04"}, moved); d != "" {
		t.Errorf("moved:\n%s", d)
	}
	if d := testdiff.Lines([]string{"m01", "m03", "m05", "m06"}, left); d != "" {
		t.Errorf("left in the source:\n%s", d)
	}
}

// The built binary resumes an interrupted confirmed run (its journal, as
// the run wrote it, lists the three messages its preview chose) and moves
// only those three, though the run's --group matches 35 now.
func TestRedriveResumeMovesWhatThePreviewChoseBinary(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	src := filepath.Join(t.TempDir(), "dlq.jsonl")
	dest := filepath.Join(t.TempDir(), "moved.jsonl")
	if _, stderr, code := runDLQ(t, "export", "--broker", "demo:", "orders.dlq", "--to", "file://"+src); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	const group = "2b50f3125b"
	stdout, stderr, code := runDLQ(t, "peek", "--broker", "file://"+src, "orders.dlq", "--group", group, "-n", "0", "-o", "json")
	var msgs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(stdout), &msgs); code != ExitOK || err != nil || len(msgs) != 35 {
		t.Fatalf("peek: exit %d, %d messages (%v): %s", code, len(msgs), err, stderr)
	}
	chosen := []string{msgs[3].ID, msgs[10].ID, msgs[20].ID}
	// Interrupted before it moved one: a header, its S line, a publish,
	// and no end line.
	dir := redrive.JournalDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := redrive.JournalKey("file://"+src, "orders.dlq")
	hdr := fmt.Sprintf(`H {"v":1,"run_id":"old1","key":%q,"started":"2026-11-25T21:03:00Z","broker":%q,"source":"orders.dlq","destination":%q,"plan":{"to":%q,"group":%q},"chosen":3}`,
		key, "file://"+src, "file://"+dest, "file://"+dest, group)
	journal := hdr + "\nS " + strings.Join(chosen, " ") + "\nP nothing-real\n"
	if err := os.WriteFile(filepath.Join(dir, key+"-old1.journal"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code, _ = runBinary(t, []string{"XDG_STATE_HOME=" + state}, "redrive", "--broker", "file://"+src, "orders.dlq", "--resume", "--yes", "-o", "json")
	if code != ExitOK {
		t.Fatalf("--resume: exit %d:\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runDLQ(t, "peek", "file://"+dest, "-n", "0", "-o", "json")
	msgs = nil
	if err := json.Unmarshal([]byte(stdout), &msgs); code != ExitOK || err != nil {
		t.Fatalf("peek the destination: exit %d (%v): %s", code, err, stderr)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.ID)
	}
	slices.Sort(got)
	slices.Sort(chosen)
	if d := testdiff.Lines(chosen, got); d != "" {
		t.Errorf("moved:\n%s", d)
	}
}
