package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
)

// Without a terminal every command that changes the broker needs --yes,
// and refuses before it reads a message (reading raises an SQS message's
// receive count); a dry run needs none.
func TestChangesNeedYesWithoutATerminal(t *testing.T) {
	for _, args := range [][]string{
		{"redrive", "orders.dlq", "-o", "json"},
		{"redrive", "orders.dlq", "--server-side"},
		{"discard", "orders.dlq", "--filter", ".body.n > 0", "--no-archive"},
		{"discard", "orders.dlq", "--group", "0123456789", "--no-archive"},
		{"purge", "orders.dlq", "--no-archive"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(3)}
			f, outs := moveFactory(t, b, false)
			f.Options.Yes = false
			code := execute(context.Background(), f, args)
			stdout, stderr := outs()
			if code != ExitError || strings.Contains(stdout, "examined") {
				t.Errorf("exit %d, stdout %q; want %d and no summary", code, stdout, ExitError)
			}
			assertOneLine(t, stderr)
			if want := "`dlq " + args[0] + "` changes the broker: pass `--yes` to run it without a terminal"; !strings.Contains(stderr, want) {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if b.consumed || b.peeked || len(b.dlq) != 3 {
				t.Errorf("read before refusing: consumed %v, peeked %v, %d left", b.consumed, b.peeked, len(b.dlq))
			}
		})
	}
	t.Run("dry run", func(t *testing.T) {
		b := &moveFake{dlq: fakeDead(3)}
		f, outs := moveFactory(t, b, false)
		f.Options.Yes = false
		if code := execute(context.Background(), f, []string{"redrive", "orders.dlq", "--dry-run"}); code != ExitOK {
			_, stderr := outs()
			t.Errorf("dry run without --yes: exit %d: %s", code, stderr)
		}
	})
	t.Run("topology apply", func(t *testing.T) {
		b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
		f, _ := topoFactory(t, b, false)
		err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: ladderSpec})
		if exitCodeFor(err) != ExitError || err == nil || !strings.Contains(err.Error(), "`dlq topology apply` changes the broker: pass `--yes`") {
			t.Fatalf("apply without --yes: exit %d (%v)", exitCodeFor(err), err)
		}
		b.verify(t, 0)
	})
}

// A dry run exits with the code of the real run: every message without an
// origin is exit 1 for both.
func TestDryRunExitsAsTheRealRun(t *testing.T) {
	for _, dry := range []bool{true, false} {
		b := &moveFake{dlq: fakeDead(2), noOrigin: true}
		f, outs := moveFactory(t, b, false)
		args := []string{"redrive", "orders.dlq", "--no-journal", "--yes"}
		if dry {
			args = append(args, "--dry-run")
		}
		code := execute(context.Background(), f, args)
		stdout, stderr := outs()
		if code != ExitError || !strings.Contains(stderr, "no-origin 2") {
			t.Errorf("dry run %v: exit %d, want %d; stdout %q, stderr %q", dry, code, ExitError, stdout, stderr)
		}
	}
}

// A selection that matches nothing exits 0 with one line on stderr, from
// --filter as from --group; so does purging an empty queue, without --yes.
func TestEmptySelectionsExitZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "orders.dlq", "--filter", ".body.n > 100", "--yes", "--no-journal"}, "no messages match .body.n > 100; nothing was changed"},
		{[]string{"discard", "orders.dlq", "--older-than", "100h", "--no-archive", "--yes"}, "no messages are older than 100h0m0s; nothing was changed"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(3)}
			f, outs := moveFactory(t, b, false)
			code := execute(context.Background(), f, tc.args)
			_, stderr := outs()
			if code != ExitOK || strings.TrimSpace(stderr) != tc.want {
				t.Errorf("exit %d, stderr %q; want 0 and %q", code, stderr, tc.want)
			}
		})
	}
	t.Run("purge of an empty queue", func(t *testing.T) {
		b := &moveFake{}
		f, outs := moveFactory(t, b, false)
		f.Options.Yes = false
		f.OpenQueue = func(ctx context.Context, ref string) (broker.Broker, string, error) { return depthFake{b}, ref, nil }
		code := execute(context.Background(), f, []string{"purge", "orders.dlq", "--no-archive"})
		_, stderr := outs()
		if want := "nothing to purge: `orders.dlq` is empty; nothing was changed"; code != ExitOK || strings.TrimSpace(stderr) != want {
			t.Errorf("exit %d, stderr %q; want 0 and %q", code, stderr, want)
		}
	})
}

// depthFake is a moveFake that tells its queue's depth.
type depthFake struct{ *moveFake }

func (d depthFake) Queue(ctx context.Context, q string) (broker.Queue, error) {
	zero := int64(0)
	return broker.Queue{Name: q, Depth: int64(len(d.dlq)), InFlight: &zero}, nil
}

// A cancel after some messages moved is partly done (exit 3), and says how
// many moved.
func TestCancelAfterMovesIsPartlyDone(t *testing.T) {
	b := &moveFake{dlq: fakeDead(20)}
	f, outs := moveFactory(t, b, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.published = cancel
	code := execute(ctx, f, []string{"redrive", "orders.dlq", "--window", "1", "--concurrency", "1", "--no-journal", "--yes"})
	_, stderr := outs()
	moved := len(b.dest)
	if code != ExitPartial || moved == 0 || moved == 20 {
		t.Fatalf("exit %d with %d moved, want %d after some; stderr %s", code, moved, ExitPartial, stderr)
	}
	if !strings.Contains(stderr, "cancelled after moving ") {
		t.Errorf("stderr %q does not say how many moved", stderr)
	}
}

// The progress line measures moves against the selection when it is known,
// and otherwise says its total is the queue's depth.
func TestProgressSaysWhatItMeasures(t *testing.T) {
	for _, tc := range []struct {
		p    redrive.Progress
		want string
	}{
		{redrive.Progress{Examined: 84, Moved: 24, Skipped: 60, Total: 200}, "moved 24, examined 84 of ~200 in the queue"},
		{redrive.Progress{Examined: 84, Moved: 24, Skipped: 60, Total: 60, Selected: true}, "moved 24/60"},
	} {
		ios, _, _, errOut := Test()
		ios.SetTTY(true)
		bar := newRedriveBar(&Factory{IO: ios}, "moved")
		bar.update(tc.p)
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("progress %q, want %q in it", errOut.String(), tc.want)
		}
	}
}

// A discard's and a purge's JSON summary count "discarded", not "moved";
// a purge that stops says how many it removed.
func TestRemovalSummariesSayDiscarded(t *testing.T) {
	b := &moveFake{dlq: fakeDead(3)}
	f, outs := moveFactory(t, b, false)
	code := execute(context.Background(), f, []string{"discard", "orders.dlq", "--filter", ".body.n > 0", "--no-archive", "--yes", "-o", "json"})
	stdout, stderr := outs()
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); code != ExitOK || err != nil {
		t.Fatalf("exit %d (%v): %s %s", code, err, stdout, stderr)
	}
	want := map[string]any{"discarded": 2.0}
	counts := map[string]any{}
	for _, k := range []string{"discarded", "moved"} {
		if v, ok := got[k]; ok {
			counts[k] = v
		}
	}
	if d := testdiff.JSON(t, want, counts); d != "" {
		t.Errorf("summary counts differ:\n%s", d)
	}
	// The audit record counts as the summary does.
	recs := readAudit(t, f.AuditPath())
	if len(recs) != 1 {
		t.Fatalf("%d audit records, want 1", len(recs))
	}
	if d := testdiff.JSON(t, map[string]int64{"examined": 3, "discarded": 2, "skipped:filtered": 1}, recs[0].Counts); d != "" {
		t.Errorf("the discard's audit counts differ:\n%s", d)
	}

	b = &moveFake{dlq: fakeDead(1000)}
	f, outs = moveFactory(t, b, false)
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		return &fullArchive{room: 1}, ref, nil
	}
	code = execute(context.Background(), f, []string{"purge", "orders.dlq", "--archive-to", "file:///full/purged.jsonl", "--yes"})
	_, stderr = outs()
	if code != ExitPartial || !strings.Contains(stderr, "stopped after removing ") {
		t.Errorf("exit %d, stderr %q: want %d and how many were removed", code, stderr, ExitPartial)
	}
	recs = readAudit(t, f.AuditPath())
	if len(recs) != 1 || recs[0].Action != "purge" {
		t.Fatalf("audit records %+v, want one purge", recs)
	}
	if _, moved := recs[0].Counts["moved"]; moved || recs[0].Counts["discarded"] == 0 || recs[0].Counts["discarded"] != recs[0].Counts["archived"] {
		t.Errorf("the purge's audit counts %v: want discarded (as many as archived) and no moved", recs[0].Counts)
	}
}

// `dlq audit` lists a discard's and a purge's counts as discarded, those
// earlier versions recorded as moved too, and a redrive's as moved.
func TestAuditListsRemovalsAsDiscarded(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	old := `{"time":"2026-11-01T10:00:00Z","user":"ana","host":"h","command":"dlq discard q","action":"discard","source":"q","counts":{"examined":5,"moved":4},"outcome":"ok"}
{"time":"2026-11-01T10:01:00Z","user":"ana","host":"h","command":"dlq tui","action":"tui-purge","source":"q","counts":{"moved":2},"outcome":"ok"}
{"time":"2026-11-01T10:02:00Z","user":"ana","host":"h","command":"dlq redrive q","action":"redrive","source":"q","counts":{"examined":3,"moved":3},"outcome":"ok"}
`
	if err := os.WriteFile(log, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runDLQ(t, "audit", "--audit-log", log, "-o", "json")
	var recs []AuditRecord
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || code != ExitOK {
		t.Fatalf("exit %d (%v): %s %s", code, err, stdout, stderr)
	}
	var got []map[string]int64
	for _, r := range recs {
		got = append(got, r.Counts)
	}
	want := []map[string]int64{{"examined": 5, "discarded": 4}, {"discarded": 2}, {"examined": 3, "moved": 3}}
	if d := testdiff.JSON(t, want, got); d != "" {
		t.Errorf("counts differ:\n%s", d)
	}
	stdout, _, _ = runDLQ(t, "audit", "--audit-log", log)
	if !strings.Contains(stdout, "discarded=4 examined=5") || !strings.Contains(stdout, "examined=3 moved=3") {
		t.Errorf("the table does not word the counts so:\n%s", stdout)
	}
}
