package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
	"github.com/dlq-tools/dlq/tui"
)

// readAudit returns the records of the audit log at path.
func readAudit(t *testing.T, path string) []AuditRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []AuditRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r AuditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// auditShape is what a test compares of a record: the fields a run fills.
type auditShape struct {
	Action, Source, Destination, Filter, Transform, Outcome, Error string
	Counts                                                         map[string]int64
	IDs                                                            []string
}

func shapes(recs []AuditRecord) []auditShape {
	out := make([]auditShape, len(recs))
	for i, r := range recs {
		out[i] = auditShape{r.Action, r.Source, r.Destination, r.Filter, r.Transform, r.Outcome, r.Error, r.Counts, r.IDs}
	}
	return out
}

// The TUI's redrive and discard keys leave the audit records the commands
// leave, with the counts, IDs and outcome of the run.
func TestTUIActionsAreAudited(t *testing.T) {
	b, err := archive.Demo()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	f.Options.AuditLog = filepath.Join(dir, "audit.jsonl")
	tb := tuiBackend(f, b, &tuiOptions{f: f, Limit: 1000}, false, f.Logger)
	ctx := context.Background()
	var msgs []*broker.Message
	if _, err := tb.Peek(ctx, "orders.dlq", func(m *broker.Message) error { msgs = append(msgs, m); return nil }); err != nil || len(msgs) < 3 {
		t.Fatalf("peek: %d messages, %v", len(msgs), err)
	}
	moved := filepath.Join(dir, "moved.jsonl")
	res, err := tb.Redrive(ctx, tui.ActionRequest{Queue: "orders.dlq", IDs: []string{msgs[0].ID, msgs[1].ID},
		Dest: broker.Destination{Kind: broker.ToFile, Path: moved}}, func(tui.Progress) {})
	if err != nil || res.Done != 2 {
		t.Fatalf("redrive: %+v %v", res, err)
	}
	kept := filepath.Join(dir, "kept.jsonl")
	res, err = tb.Discard(ctx, tui.ActionRequest{Queue: "orders.dlq", IDs: []string{msgs[2].ID}, Archive: kept}, func(tui.Progress) {})
	if err != nil || res.Done != 1 || !strings.Contains(res.Summary, "archived first to "+kept) {
		t.Fatalf("discard: %+v %v", res, err)
	}
	// The demo archive gives nothing up: each run reads all of it.
	n := int64(len(msgs))
	want := []auditShape{
		{Action: "tui-redrive", Source: "orders.dlq", Destination: "file://" + moved, Outcome: "ok",
			Counts: map[string]int64{"examined": n, "moved": 2, "skipped:not-selected": n - 2}, IDs: []string{msgs[0].ID, msgs[1].ID}},
		{Action: "tui-discard", Source: "orders.dlq", Destination: "file://" + kept, Outcome: "ok",
			Counts: map[string]int64{"examined": n, "discarded": 1, "archived": 1, "skipped:not-selected": n - 1}, IDs: []string{msgs[2].ID}},
	}
	if d := testdiff.JSON(t, want, shapes(readAudit(t, f.Options.AuditLog))); d != "" {
		t.Errorf("audit records differ:\n%s", d)
	}
}

// auditRun records a run with the outcome its exit code says, keeps IDs
// the caller named, and records no dry run.
func TestAuditRun(t *testing.T) {
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	f.Options.AuditLog = filepath.Join(t.TempDir(), "audit.jsonl")
	sum := redrive.Summary{Examined: 3, Moved: 2, IDs: []string{"a", "b"}, Failed: map[string]int64{"unroutable": 1}}
	exitErr, aerr := f.auditRun(AuditRecord{Action: "redrive", Source: "q", Filter: ".x"}, sum, nil, false)
	if aerr != nil || exitCodeFor(exitErr) != ExitPartial {
		t.Fatalf("a run that left one message: exit %d (%v), audit %v; want %d", exitCodeFor(exitErr), exitErr, aerr, ExitPartial)
	}
	cancelled := redrive.Summary{Examined: 1, Moved: 1, IDs: []string{"a"}}
	exitErr, aerr = f.auditRun(AuditRecord{Action: "tui-edit", Source: "q", IDs: []string{"orig"}}, cancelled, context.Canceled, false)
	if aerr != nil || exitCodeFor(exitErr) != ExitPartial {
		t.Fatalf("a run cancelled after a move: exit %d (%v), audit %v; want %d", exitCodeFor(exitErr), exitErr, aerr, ExitPartial)
	}
	exitErr, aerr = f.auditRun(AuditRecord{Action: "redrive", Source: "q"}, redrive.Summary{Examined: 4, DryRun: true}, nil, true)
	if exitErr != nil || aerr != nil {
		t.Fatalf("a dry run: %v, audit %v", exitErr, aerr)
	}
	want := []auditShape{
		{Action: "redrive", Source: "q", Filter: ".x", Outcome: "partial",
			Counts: map[string]int64{"examined": 3, "moved": 2, "failed:unroutable": 1}, IDs: []string{"a", "b"}},
		{Action: "tui-edit", Source: "q", Outcome: "partial", Error: context.Canceled.Error(),
			Counts: map[string]int64{"examined": 1, "moved": 1}, IDs: []string{"orig"}},
	}
	if d := testdiff.JSON(t, want, shapes(readAudit(t, f.Options.AuditLog))); d != "" {
		t.Errorf("audit records differ (a dry run records nothing):\n%s", d)
	}
}
