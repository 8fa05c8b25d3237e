package cmd

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
	"github.com/dlq-tools/dlq/tui"
)

func TestRedriveCanaryFlags(t *testing.T) {
	for _, tc := range []struct {
		args  string
		steps []redrive.CanaryStep
		err   string
	}{
		{args: "q --canary", steps: redrive.DefaultCanarySteps},
		{args: "q --canary=2,50% --canary-wait 3s --canary-max-returns 2", steps: []redrive.CanaryStep{{Count: 2}, {Percent: 50}}},
		{args: "q --canary 2,50%", err: "write the steps with an equals sign, `--canary=2,50%`"},
		{args: "q --canary=0", err: "`--canary=0`: step \"0\""},
		{args: "q --canary-wait 1m", err: "add `--canary`"},
		{args: "q --canary --canary-max-returns -1", err: "`--canary-max-returns -1`"},
		{args: "q --canary --server-side", err: "`--server-side` cannot"},
		{args: "q --canary --no-redrive-header", err: "drop `--no-redrive-header`"},
		{args: "q --canary --to file:///tmp/x.jsonl", err: "archive never do"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := &Factory{IO: ios, Options: &GlobalOptions{}, Now: time.Now}
			var got *redriveOptions
			cmd := newCmdRedrive(f, func(o *redriveOptions) error { got = o; return nil })
			cmd.SetArgs(splitArgs(tc.args))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.ExecuteContext(context.Background())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := testdiff.Diff(tc.steps, got.Canary.steps); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if p := got.plan(); p["canary"] != got.Canary.Steps {
				t.Errorf("the journal's plan has canary %q, want %q", p["canary"], got.Canary.Steps)
			}
		})
	}
}

// An unfixed consumer sends the first moved message back: the canary
// stops after step 1 with exit 6, JSON and the audit record say so, and
// --resume after the fix moves the rest.
func TestRedriveCanaryStopsAndResumes(t *testing.T) {
	b := &moveFake{dlq: fakeDead(12)}
	b.published = func() { // b.mu is held
		b.dlq = append(b.dlq, b.dest...)
		b.dest = nil
	}
	f, outs := moveFactory(t, b, false)
	f.Options.Output = OutputJSON
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", format: OutputJSON, Canary: canaryFlags{Steps: canaryDefault},
		changed: func(n string) bool { return n == "canary-wait" }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := redriveRun(context.Background(), o)
	stdout, stderr := outs()
	if code := exitCodeFor(err); code != ExitCanaryStopped {
		t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, err, ExitCanaryStopped, stderr)
	}
	if !strings.Contains(err.Error(), "dlq redrive orders.dlq --resume") {
		t.Errorf("the error does not name the command that resumes: %v", err)
	}
	var got struct {
		Moved  int64 `json:"moved"`
		Canary struct {
			Selected int64 `json:"selected"`
			Steps    []struct {
				Moved, Returned int64
			} `json:"steps"`
			Stopped *struct{ Step int } `json:"stopped"`
			Returns []struct {
				Same bool `json:"same_group"`
			} `json:"returns"`
			Left          int64  `json:"left"`
			ResumeCommand string `json:"resume_command"`
		} `json:"canary"`
		Error *jsonErrorBody `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	c := got.Canary
	if got.Moved != 1 || c.Selected != 12 || len(c.Steps) != 1 || c.Steps[0].Returned != 1 || c.Stopped == nil || c.Stopped.Step != 1 ||
		c.Left != 11 || len(c.Returns) != 1 || !c.Returns[0].Same || c.ResumeCommand != "dlq redrive orders.dlq --resume" ||
		got.Error == nil || got.Error.Kind != "canary-stopped" || got.Error.ExitCode != ExitCanaryStopped {
		t.Errorf("json: %s", stdout)
	}
	if len(b.dlq) != 12 {
		t.Fatalf("dlq holds %d, want 12 (11 never moved, 1 back)", len(b.dlq))
	}
	data, err := os.ReadFile(f.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	var rec AuditRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != "canary-stopped" || rec.Canary == nil || rec.Canary.StoppedAt != 1 || rec.Canary.Returned != 1 || rec.Counts["moved"] != 1 {
		t.Errorf("audit %s", data)
	}

	// The fix is deployed: --resume takes the canary's settings and goes on.
	b.published = nil
	state := os.Getenv("XDG_STATE_HOME")
	f2, outs2 := moveFactory(t, b, false)
	t.Setenv("XDG_STATE_HOME", state) // the first run's state
	f2.Options.AuditLog = f.AuditPath()
	o2 := &redriveOptions{f: f2, Source: "orders.dlq", To: "origin", Resume: true, changed: func(string) bool { return false }}
	if err := o2.validate(); err != nil {
		t.Fatal(err)
	}
	err = redriveRun(context.Background(), o2)
	stdout, stderr = outs2()
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	if len(b.dest) != 12 || len(b.dlq) != 0 {
		t.Fatalf("dest %d, dlq %d; want 12, 0", len(b.dest), len(b.dlq))
	}
	if !strings.Contains(stderr, "continuing the canary of `orders.dlq` at step 1, 1 moved before") || !strings.Contains(stdout, "canary: steps 1, 5, 10%=2, 25%=3, rest of 12 selected") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if loadCanaryState(redrive.JournalKey(b.String(), "orders.dlq")) != nil {
		t.Error("the state of the finished canary was kept")
	}
}

func TestRedriveCanaryTextSaysWhereItStopped(t *testing.T) {
	b := &moveFake{dlq: fakeDead(12)}
	b.published = func() {
		for _, m := range b.dest {
			m.Headers["x-exception-message"] = "NullPointerException in OrderHandler"
		}
		b.dlq = append(b.dlq, b.dest...)
		b.dest = nil
	}
	f, outs := moveFactory(t, b, false)
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", format: OutputTable, Canary: canaryFlags{Steps: canaryDefault},
		changed: func(n string) bool { return n == "canary-wait" }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := redriveRun(context.Background(), o)
	stdout, stderr := outs()
	if code := exitCodeFor(err); code != ExitCanaryStopped {
		t.Fatalf("exit %d (%v); stderr:\n%s", code, err, stderr)
	}
	for _, want := range []string{
		"moved 1 of 1 messages examined in `orders.dlq`",
		"canary: steps 1, 5, 10%=2, 25%=3, rest of 12 selected; wait 0s after each (--canary-wait); returns counted in `orders.dlq`",
		"  step 1 (1): moved 1; 1 came back by then",
		"canary stopped at step 1 (1): 1 moved messages came back (allowed 0)",
		"in `orders.dlq`, new failure group",
		": NullPointerException in OrderHandler",
		"11 selected messages were not moved and stay in `orders.dlq`",
		"after a fix, continue with: dlq redrive orders.dlq --resume",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "dlq: canary step 1 moved 1; waiting 0s") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// The TUI's group redrive in canary steps: an unfixed consumer stops it
// after step 1; the notice says why, and the audit record has its steps.
func TestTUICanaryGroupRedriveStops(t *testing.T) {
	b := &moveFake{dlq: fakeDead(12)}
	b.published = func() {
		b.dlq = append(b.dlq, b.dest...)
		b.dest = nil
	}
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	f.Options.AuditLog = t.TempDir() + "/audit.jsonl"
	tb := tuiBackend(f, b, &tuiOptions{f: f, Limit: 1000, CanaryWait: time.Millisecond}, false, f.Logger)
	var ids []string
	for _, m := range b.dlq {
		ids = append(ids, m.ID)
	}
	var notes []string
	res, err := tb.Redrive(context.Background(), tui.ActionRequest{Queue: "orders.dlq", IDs: ids, Expected: 12, Groups: []string{"abc"}, Canary: true,
		Dest: broker.Destination{Kind: broker.ToQueue, Queue: "orders"}}, func(p tui.Progress) { notes = append(notes, p.Step) })
	if err == nil || !strings.Contains(err.Error(), "canary stopped at step 1 (1): 1 moved messages came back, the same failure group") ||
		!strings.Contains(err.Error(), "11 stay in orders.dlq") {
		t.Fatalf("err %v, want the canary's stop", err)
	}
	if res.Done != 1 || len(b.dlq) != 12 {
		t.Errorf("done %d, dlq %d; want 1, 12", res.Done, len(b.dlq))
	}
	if !slices.Contains(notes, "step 1 moved 1, waiting 1ms for returns") {
		t.Errorf("progress notes %q", notes)
	}
	recs := readAudit(t, f.Options.AuditLog)
	if len(recs) != 1 || recs[0].Action != "tui-redrive" || recs[0].Outcome != "canary-stopped" || recs[0].Canary == nil || recs[0].Canary.StoppedAt != 1 {
		t.Errorf("audit %+v", recs)
	}
}

// A canary's dry run moves nothing and shows the plan its steps would
// follow, in text and JSON.
func TestRedriveCanaryDryRun(t *testing.T) {
	for _, format := range []string{OutputTable, OutputJSON} {
		t.Run(format, func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(40)}
			f, outs := moveFactory(t, b, false)
			f.Options.Output = format
			o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", DryRun: true, format: format, Canary: canaryFlags{Steps: canaryDefault},
				changed: func(string) bool { return false }}
			if err := o.validate(); err != nil {
				t.Fatal(err)
			}
			if err := redriveRun(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			stdout, _ := outs()
			if b.consumed || len(b.dest) != 0 {
				t.Fatalf("a dry run consumed %t, moved %d", b.consumed, len(b.dest))
			}
			if format == OutputTable {
				for _, want := range []string{"would move 40 of 40 messages examined", "canary: steps 1, 5, 10%=4, 25%=10, rest of 40 selected; wait 30s after each (the minimum 30s"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("stdout lacks %q:\n%s", want, stdout)
					}
				}
				return
			}
			var got struct {
				DryRun bool `json:"dry_run"`
				Canary struct {
					Plan []redrive.CanaryPlanStep `json:"plan"`
				} `json:"canary"`
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			want := []redrive.CanaryPlanStep{{Label: "1", Size: 1}, {Label: "5", Size: 5}, {Label: "10%", Size: 4}, {Label: "25%", Size: 10}, {Label: "rest"}}
			if d := testdiff.Diff(want, got.Canary.Plan); d != "" || !got.DryRun {
				t.Errorf("dry run %t, plan (-want +got):\n%s", got.DryRun, d)
			}
		})
	}
}

// On a terminal the question names the canary's steps; "y" runs them all.
func TestRedriveCanaryAsksOnTerminal(t *testing.T) {
	b := &moveFake{dlq: fakeDead(12)}
	f, outs := moveFactory(t, b, true)
	f.IO.In = strings.NewReader("y\n")
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", format: OutputTable, Canary: canaryFlags{Steps: "2,50%"},
		changed: func(n string) bool { return n == "canary-wait" }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := redriveRun(context.Background(), o)
	stdout, stderr := outs()
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "move these 12 messages in canary steps of 2, 50%, then the rest, stopping if moved messages come back? [y/N]") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if len(b.dest) != 12 || !strings.Contains(stdout, "  step 1 (2): moved 2") || !strings.Contains(stdout, "  step 3 (rest): moved 4") {
		t.Errorf("moved %d; stdout:\n%s", len(b.dest), stdout)
	}
}

// What a stopped canary keeps for --resume (its state, its journals)
// holds no password, though the destination named one.
func TestRedriveCanaryKeepsNoSecret(t *testing.T) {
	const secret = "canary-s3cret"
	b := &moveFake{dlq: fakeDead(12)}
	b.published = func() { // b.mu is held
		b.dlq = append(b.dlq, b.dest...)
		b.dest = nil
	}
	f, outs := moveFactory(t, b, false)
	f.Options.Output = OutputJSON
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		_, dest, _ := strings.Cut(ref, "#")
		return b, dest, nil
	}
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "amqp://ops:" + secret + "@fake:5672/#queue:orders", format: OutputJSON,
		Canary: canaryFlags{Steps: canaryDefault}, changed: func(n string) bool { return n == "canary-wait" }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := redriveRun(context.Background(), o)
	stdout, stderr := outs()
	if code := exitCodeFor(err); code != ExitCanaryStopped {
		t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, err, ExitCanaryStopped, stderr)
	}
	if loadCanaryState(redrive.JournalKey(b.String(), "orders.dlq")) == nil {
		t.Fatal("the stopped canary kept no state")
	}
	kept := 0
	walkErr := filepath.WalkDir(os.Getenv("XDG_STATE_HOME"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		kept++
		if strings.Contains(string(data), secret) {
			t.Errorf("%s holds the password:\n%s", path, data)
		}
		return nil
	})
	if walkErr != nil {
		t.Fatal(walkErr)
	}
	if kept < 2 {
		t.Errorf("%d files kept, want the canary's state and a journal at least", kept)
	}
	for name, s := range map[string]string{"stdout": stdout, "stderr": stderr, "error": err.Error()} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the password: %s", name, s)
		}
	}
}
