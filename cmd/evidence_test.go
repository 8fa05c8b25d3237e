package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// A command that changes messages or topology refuses to start, with one
// line naming the fix and exit 1, when its audit log cannot be opened
// (here its directory is a regular file: ENOTDIR, which root gets too); the
// broker is untouched.
func TestMutatingCommandsRefuseAnUnwritableAuditLog(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(notDir, "audit.jsonl")
	check := func(t *testing.T, stderr string, code ExitCode) {
		t.Helper()
		if code != ExitError {
			t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
		}
		assertOneLine(t, stderr)
		if !strings.Contains(stderr, "nothing was changed") || !strings.Contains(stderr, "set `--audit-log`") {
			t.Errorf("stderr does not say that nothing changed and how to fix it: %s", stderr)
		}
	}
	for _, args := range [][]string{
		{"purge", "orders.dlq", "--no-archive"},
		{"purge", "orders.dlq", "--archive-to", "file://" + filepath.Join(dir, "purged.jsonl")},
		{"discard", "orders.dlq", "--filter", "true", "--no-archive", "--force"},
		{"redrive", "orders.dlq", "--to", "origin"},
	} {
		t.Run(args[0]+" "+args[2], func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(10)}
			f, outs := moveFactory(t, b, false)
			code := execute(context.Background(), f, append(args, "--yes", "--audit-log", audit))
			_, stderr := outs()
			check(t, stderr, code)
			assertNamedFlagsExist(t, args, stderr)
			if b.consumed || b.peeked || len(b.dlq) != 10 || len(b.dest) != 0 {
				t.Errorf("the queue was touched: consumed %v, peeked %v, %d left, %d moved", b.consumed, b.peeked, len(b.dlq), len(b.dest))
			}
		})
	}
	t.Run("topology apply", func(t *testing.T) {
		b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
		f, outs := topoFactory(t, b, false)
		code := execute(context.Background(), f, []string{"topology", "apply", "-f", ladderSpec, "--yes", "--audit-log", audit})
		_, stderr := outs()
		check(t, stderr, code)
		if len(b.applied) != 0 {
			t.Errorf("%d changes applied", len(b.applied))
		}
	})
}

// An audit log that opens but cannot be written (/dev/full: ENOSPC, for
// root too) fails a purge that removed messages: exit 1, one line saying
// what was done and that it was not recorded, and audit_error in the JSON.
func TestRemovalFailsWhenTheAuditRecordCannotBeWritten(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	b := &moveFake{dlq: fakeDead(10)}
	f, outs := moveFactory(t, b, false)
	code := execute(context.Background(), f, []string{"purge", "orders.dlq", "--no-archive", "--yes", "--audit-log", "/dev/full", "-o", "json"})
	stdout, stderr := outs()
	if code != ExitError {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
	}
	assertOneLine(t, stderr)
	if !strings.Contains(stderr, "the audit log could not record it") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr does not say the audit record failed: %s", stderr)
	}
	var sum struct {
		Moved      int64  `json:"discarded"`
		AuditError string `json:"audit_error"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if sum.Moved != 10 || !strings.Contains(sum.AuditError, "no space left on device") {
		t.Errorf("moved %d, audit_error %q: want messages removed and the audit failure", sum.Moved, sum.AuditError)
	}
}

// fullArchive is an archive that takes room batches of messages, then
// fails every write as a full disk does.
type fullArchive struct {
	mu   sync.Mutex
	room int
}

func (a *fullArchive) System() broker.System { return broker.Archive }
func (a *fullArchive) String() string        { return "file:///full/purged.jsonl" }
func (a *fullArchive) Close() error          { return nil }
func (a *fullArchive) Publish(ctx context.Context, outs []broker.Outgoing) ([]error, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.room <= 0 {
		return nil, &os.PathError{Op: "write", Path: "/full/purged.jsonl", Err: syscall.ENOSPC}
	}
	a.room--
	return make([]error, len(outs)), nil
}

// assertNamedFlagsExist fails when text names a `--flag` that the command
// args run does not have: an error must not send a person to a flag that
// is not there.
func assertNamedFlagsExist(t *testing.T, args []string, text string) {
	t.Helper()
	ios, _, _, _ := Test()
	c, _, err := NewRootCmd(NewFactory(ios, args)).Find(args)
	if err != nil {
		t.Fatalf("find %v: %v", args, err)
	}
	for _, m := range namedFlag.FindAllStringSubmatch(text, -1) {
		if c.Flag(m[1]) == nil {
			t.Errorf("%q names `--%s`, which `dlq %s` does not have", text, m[1], c.Name())
		}
	}
}

var namedFlag = regexp.MustCompile("`--([a-z][a-z0-9-]*)")

// A purge whose archive fills up after it removed some messages says to
// run it again, without naming `--resume`, which purge does not have; a
// redrive that stops the same way names it. Every flag the error names is
// one of the command's.
func TestStoppedRemovalHintNamesOnlyItsFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{args: []string{"purge", "orders.dlq", "--archive-to", "file:///full/purged.jsonl"}, want: "run it again to continue", not: "--resume"},
		{args: []string{"discard", "orders.dlq", "--filter", "true", "--force", "--archive-to", "file:///full/purged.jsonl"}, want: "run it again to continue", not: "--resume"},
		{args: []string{"redrive", "orders.dlq", "--to", "file:///full/purged.jsonl", "--no-journal"}, want: "run it again with `--resume` to continue"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(1000)}
			f, outs := moveFactory(t, b, false)
			f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
				return &fullArchive{room: 1}, ref, nil
			}
			code := execute(context.Background(), f, append(tc.args, "--yes"))
			_, stderr := outs()
			if code != ExitPartial {
				t.Errorf("exit %d, want %d (partly done); stderr: %s", code, ExitPartial, stderr)
			}
			assertOneLine(t, stderr)
			if !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, tc.want) || (tc.not != "" && strings.Contains(stderr, tc.not)) {
				t.Errorf("stderr %q: want the full disk and %q, without %q", stderr, tc.want, tc.not)
			}
			assertNamedFlagsExist(t, tc.args, stderr)
		})
	}
}

// An --archive-to in a directory where no file can be made (/proc refuses
// new files, root included) is refused before anything is taken, with one
// line; the queue keeps every message.
func TestRemovalRefusesAnArchiveThatCannotBeWritten(t *testing.T) {
	if err := os.WriteFile("/proc/dlq-evidence-test.jsonl", nil, 0o600); err == nil {
		os.Remove("/proc/dlq-evidence-test.jsonl")
		t.Skip("/proc takes new files here")
	}
	for _, args := range [][]string{
		{"purge", "orders.dlq"},
		{"discard", "orders.dlq", "--filter", "true", "--force"},
	} {
		t.Run(args[0], func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(10)}
			f, outs := moveFactory(t, b, false)
			f.OpenDestination = f.openDestination
			args = append(args, "--archive-to", "file:///proc/dlq-evidence-test.jsonl", "--yes")
			code := execute(context.Background(), f, args)
			_, stderr := outs()
			if code != ExitError {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
			}
			assertOneLine(t, stderr)
			assertNamedFlagsExist(t, args, stderr)
			if !strings.Contains(stderr, "`--archive-to file:///proc/dlq-evidence-test.jsonl`: create archive") || !strings.Contains(stderr, "nothing was changed") {
				t.Errorf("stderr %q does not name the archive and say nothing changed", stderr)
			}
			if b.consumed || len(b.dlq) != 10 {
				t.Errorf("the queue was touched: consumed %v, %d left", b.consumed, len(b.dlq))
			}
		})
	}
}

// A topology apply whose audit record cannot be written fails the same
// way, and its JSON's error says so.
func TestApplyFailsWhenTheAuditRecordCannotBeWritten(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
	f, outs := topoFactory(t, b, false)
	args := []string{"topology", "apply", "-f", ladderSpec, "--yes", "--audit-log", "/dev/full", "-o", "json"}
	code := execute(context.Background(), f, args)
	stdout, stderr := outs()
	if code != ExitError {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
	}
	assertOneLine(t, stderr)
	assertNamedFlagsExist(t, args, stderr)
	if !strings.Contains(stderr, "applied 11 change(s), but the audit log could not record it") {
		t.Errorf("stderr does not say what was applied and that it was not recorded: %s", stderr)
	}
	var out struct {
		Applied []any  `json:"applied"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(out.Applied) != 11 || !strings.Contains(out.Error, "no space left on device") {
		t.Errorf("applied %d, error %q: want 11 and the audit failure", len(out.Applied), out.Error)
	}
}
