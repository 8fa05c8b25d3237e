package cmd

import (
	"context"
	"strings"
	"testing"
)

// A filter that fails on every message it is given chose nothing: the run
// exits 1 with one line naming the count and the first error, and moves
// or removes nothing. The summary still counts what stayed.
func TestFilterFailingOnEveryMessageIsAnError(t *testing.T) {
	for _, args := range [][]string{
		{"redrive", "orders.dlq", "--to", "origin", "--filter", `error("no such field")`},
		{"redrive", "orders.dlq", "--to", "origin", "--filter", `error("no such field")`, "--dry-run"},
		{"discard", "orders.dlq", "--no-archive", "--filter", `error("no such field")`},
		{"discard", "orders.dlq", "--no-archive", "--force", "--filter", `error("no such field")`},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(10)}
			f, outs := moveFactory(t, b, false)
			code := execute(context.Background(), f, append(args, "--yes"))
			stdout, stderr := outs()
			if code != ExitError {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
			}
			assertOneLine(t, stderr)
			if want := "`--filter` failed on every message it was given (10); the first error: "; !strings.Contains(stderr, want) || !strings.Contains(stderr, "no such field") {
				t.Errorf("stderr %q: want %q and the filter's error", stderr, want)
			}
			assertNamedFlagsExist(t, args, stderr)
			if len(b.dest) != 0 {
				t.Errorf("%d messages moved", len(b.dest))
			}
			if args[0] == "redrive" && !strings.Contains(stdout, "filter-error") {
				t.Errorf("the summary does not count the failures:\n%s", stdout)
			}
		})
	}
}

// A filter that fails on some messages and judges the others keeps
// today's outcome (exit 0): the summary counts the failures and shows an
// example of their error.
func TestFilterFailingOnSomeMessagesIsCounted(t *testing.T) {
	b := &moveFake{dlq: fakeDead(10)}
	f, outs := moveFactory(t, b, false)
	code := execute(context.Background(), f, []string{"redrive", "orders.dlq", "--to", "origin", "--yes",
		"--filter", `if .body.n < 4 then error("too small") else true end`})
	stdout, stderr := outs()
	if code != ExitOK {
		t.Errorf("exit %d, want 0; stderr: %s", code, stderr)
	}
	if len(b.dest) != 6 {
		t.Errorf("%d moved, want 6", len(b.dest))
	}
	if !strings.Contains(stdout, " 4  filter-error") || !strings.Contains(stdout, "too small") {
		t.Errorf("the summary does not count the 4 failures with an example:\n%s", stdout)
	}
}
