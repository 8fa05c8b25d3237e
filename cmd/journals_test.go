package cmd

import (
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/redrive"
)

// journals --prune --interrupted removes interrupted journals: without a
// terminal only with --yes.
func TestRedriveJournalsPruneInterrupted(t *testing.T) {
	_, journal := journalFixture(t, "file:///tmp/a.jsonl")
	_, stderr, code := runDLQ(t, "redrive", "journals", "--prune", "--interrupted")
	if code == ExitOK || !strings.Contains(stderr, "--yes") {
		t.Errorf("without --yes: exit %d, want a refusal naming --yes:\n%s", code, stderr)
	}
	if got := journalState(t, journal); got != redrive.JournalInterrupted {
		t.Fatalf("journal %s after a refused prune, want %s", got, redrive.JournalInterrupted)
	}
	_, stderr, code = runDLQ(t, "redrive", "journals", "--prune", "--interrupted", "--yes")
	if code != ExitOK || !strings.Contains(stderr, "removed 1 interrupted journals") {
		t.Errorf("with --yes: exit %d:\n%s", code, stderr)
	}
	if got := journalState(t, journal); got != "removed" {
		t.Errorf("journal %s after the prune, want removed", got)
	}
}
