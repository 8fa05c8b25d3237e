package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/redrive"
)

// canaryFlags are redrive's --canary, --canary-wait and
// --canary-max-returns.
type canaryFlags struct {
	Steps      string
	Wait       time.Duration
	MaxReturns int64

	steps []redrive.CanaryStep
	// waitSet: --canary-wait was given (now, or to the run resumed).
	waitSet bool
}

// canaryDefault is what a bare --canary means.
const canaryDefault = "1,5,10%,25%"

func (c *canaryFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&c.Steps, "canary", "", "move in growing steps and stop when moved messages come back: bare for 1,5,10%,25%,rest, or --canary=STEPS (counts or shares of the selection, comma-separated)")
	fl.Lookup("canary").NoOptDefVal = canaryDefault
	fl.DurationVar(&c.Wait, "canary-wait", 0, "settle time after each step before counting returns (default: from the route, see `dlq help redrive`)")
	fl.Int64Var(&c.MaxReturns, "canary-max-returns", 0, "moved messages that may come back before the canary stops (default 0: any return stops it)")
	// `--canary 1,5` would make "1,5" a second argument: say how to write it.
	args := cmd.Args
	cmd.Args = func(c *cobra.Command, a []string) error {
		if len(a) == 2 && c.Flags().Changed("canary") {
			if _, err := redrive.ParseCanarySteps(a[1]); err == nil {
				return flagErrorf("`--canary %s`: write the steps with an equals sign, `--canary=%s` (a bare `--canary` takes %s)", a[1], a[1], canaryDefault)
			}
		}
		return args(c, a)
	}
}

func (c *canaryFlags) on() bool { return c.Steps != "" }

func (o *redriveOptions) validateCanary() error {
	c := &o.Canary
	changed := func(n string) bool { return o.changed != nil && o.changed(n) }
	if !c.on() {
		if changed("canary-wait") || changed("canary-max-returns") {
			return flagErrorf("`--canary-wait` and `--canary-max-returns` shape a canary redrive: add `--canary`")
		}
		return nil
	}
	steps, err := redrive.ParseCanarySteps(c.Steps)
	if err != nil {
		return flagErrorf("`--canary=%s`: %v", c.Steps, err)
	}
	c.steps = steps
	c.waitSet = c.waitSet || changed("canary-wait")
	if c.Wait < 0 {
		return flagErrorf("`--canary-wait` must be 0 (count at once) or a positive duration such as 2m")
	}
	if c.MaxReturns < 0 {
		return flagErrorf("`--canary-max-returns %d`: give 0 (any return stops the canary) or more", c.MaxReturns)
	}
	if o.ServerSide {
		return flagErrorf("`--canary` moves in steps, which `--server-side` cannot: the broker moves every message at once; drop one of them")
	}
	if o.NoRedriveHeader {
		return flagErrorf("`--canary` tells the messages it moved by their x-dlq-redrive record, which `--no-redrive-header` leaves out: drop `--no-redrive-header`")
	}
	if strings.HasPrefix(o.To, "file://") {
		return flagErrorf("`--canary` waits for moved messages to fail again, which messages in an archive never do: drop `--canary`, or redrive to a queue")
	}
	return nil
}

// canaryPlan adds the canary settings to a journal's plan.
func (c *canaryFlags) plan(p map[string]string) {
	if !c.on() {
		return
	}
	p["canary"] = c.Steps
	if c.waitSet {
		p["canary-wait"] = c.Wait.String()
	}
	if c.MaxReturns > 0 {
		p["canary-max-returns"] = strconv.FormatInt(c.MaxReturns, 10)
	}
}

// canaryState is what a canary keeps between its steps, so that --resume
// continues a canary that stopped (or was interrupted) where it stopped.
// It holds no secret: the broker is redacted and the plan as journals keep
// it.
type canaryState struct {
	Key         string            `json:"key"`
	Broker      string            `json:"broker"`
	Source      string            `json:"source"`
	Destination string            `json:"destination"`
	Plan        map[string]string `json:"plan"`
	Selected    int64             `json:"selected"`
	NextStep    int               `json:"next_step"`
	Moved       int64             `json:"moved"`
	Stopped     bool              `json:"stopped"`
	Updated     time.Time         `json:"updated"`
}

func canaryStatePath(key string) string {
	return filepath.Join(redrive.StateDir(), "canary", key+".json")
}

// loadCanaryState reads the state of the stopped canary of a source; nil
// when there is none.
func loadCanaryState(key string) *canaryState {
	b, err := os.ReadFile(canaryStatePath(key))
	if err != nil {
		return nil
	}
	var s canaryState
	if json.Unmarshal(b, &s) != nil || s.Key != key {
		return nil
	}
	return &s
}

func (s *canaryState) save() error {
	path := canaryStatePath(s.Key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func removeCanaryState(key string) { _ = os.Remove(canaryStatePath(key)) }

// canaryJSON is the canary's part of `-o json`.
type canaryJSON struct {
	*redrive.CanaryReport
	WaitFrom string `json:"wait_from,omitempty"`
	// ResumeCommand continues a canary that stopped, after a fix.
	ResumeCommand string `json:"resume_command,omitempty"`
}

// canarySummaryJSON is a canary redrive's summary as `-o json` writes it.
type canarySummaryJSON struct {
	summaryJSON
	Canary canaryJSON `json:"canary"`
}

// canaryRun is the canary part of a redrive: steps, waits, counts, the
// summary, the audit record and the exit code.
type canaryRun struct {
	o        *redriveOptions
	src, dst broker.Broker
	queue    string
	srcName  string
	jdir     string
	jkey     string
	state    *canaryState // of the canary being resumed, nil otherwise
}

func (c *canaryRun) run(ctx context.Context, ro redrive.Options) error {
	o, f := c.o, c.o.f
	route := redrive.RouteOf(ctx, c.src, c.queue, c.dst, ro.Dest)
	wait, waitFrom := route.Wait, route.WaitFrom
	if o.Canary.waitSet {
		wait, waitFrom = o.Canary.Wait, "--canary-wait"
	}
	co := redrive.CanaryOptions{Steps: o.Canary.steps, Wait: wait, MaxReturns: o.Canary.MaxReturns, Watch: route.Watch, Total: ro.Selected}
	if c.state != nil {
		co.Total, co.Start, co.MovedBefore = c.state.Selected, c.state.NextStep, c.state.Moved
		f.IO.Statusf("dlq: continuing the canary of `%s` at step %d, %d moved before", c.srcName, c.state.NextStep+1, c.state.Moved)
	}
	// The state keeps the plan as a journal does: redacted.
	plan := o.plan()
	for k, v := range plan {
		plan[k] = broker.Redact(v)
	}
	state := &canaryState{Key: c.jkey, Broker: broker.Redact(c.src.String()), Source: c.srcName, Destination: broker.Redact(o.To), Plan: plan}
	if !o.DryRun {
		co.Journal = func(step int) (*redrive.Journal, error) {
			if o.NoJournal {
				return nil, nil
			}
			j, err := redrive.CreateJournal(c.jdir, redrive.JournalHeader{Key: c.jkey, Broker: broker.Redact(c.src.String()), Source: c.srcName, Destination: broker.Redact(o.To), Plan: o.plan()})
			if err != nil {
				return nil, fmt.Errorf("%w: pass `--no-journal` to run without one (an interrupted run then cannot be resumed)", err)
			}
			return j, nil
		}
		co.OnWait = func(step int, moved int64, d time.Duration) {
			f.IO.Statusf("dlq: canary step %d moved %d; waiting %s before counting what came back (%s)", step, moved, d, waitFrom)
		}
		co.OnStep = func(r redrive.CanaryReport) {
			st := r.Steps[len(r.Steps)-1]
			f.IO.Statusf("dlq: canary step %d (%s): %d of the moved messages came back", st.Step, st.Label, st.Returned)
			if st.ReadChanged != "" {
				f.IO.Statusf("dlq: counting them changed: %s", st.ReadChanged)
			}
			if r.NextStep >= 0 {
				state.Selected, state.NextStep, state.Moved, state.Stopped, state.Updated = r.Selected, r.NextStep, r.Moved, r.Stopped != nil, f.Now().UTC()
				if err := state.save(); err != nil {
					f.IO.Statusf("dlq: could not keep the canary's state (%v): `--resume` will start it over", err)
				}
			}
		}
	}
	bar := newRedriveBar(f, "moved")
	if !o.DryRun {
		ro.Progress = bar.update
	}
	restore := oneProcessor(c.src)
	rep, runErr := redrive.Canary(ctx, c.src, c.queue, c.dst, ro, co)
	restore()
	bar.finish()
	sum := rep.Summary
	if runErr != nil && !errors.Is(runErr, redrive.ErrCanaryStopped) {
		runErr = suggestQueue(ctx, c.src, c.queue, runErr)
	}
	sum.Source, sum.Destination = c.srcName, broker.Redact(o.To)
	resumeCmd := ""
	if !o.DryRun {
		switch {
		case rep.NextStep >= 0 && rep.Moved > 0:
			state.Selected, state.NextStep, state.Moved, state.Stopped, state.Updated = rep.Selected, rep.NextStep, rep.Moved, rep.Stopped != nil, f.Now().UTC()
			if err := state.save(); err != nil {
				f.IO.Statusf("dlq: could not keep the canary's state (%v): `--resume` will start it over", err)
			} else {
				resumeCmd = "dlq redrive " + broker.Redact(o.Source) + " --resume"
			}
		case runErr == nil || rep.NextStep < 0:
			removeCanaryState(c.jkey)
		}
		if runErr == nil && !sum.Cancelled && c.state == nil {
			o.supersede(c.jdir, c.jkey, c.srcName, f.Now())
		}
	}
	exitErr, outcome := canaryOutcome(sum, rep, runErr, o.DryRun, resumeCmd)
	var aerr error
	if !o.DryRun {
		rec := AuditRecord{Action: "redrive", Broker: c.src.String(), Source: c.srcName, Destination: o.To,
			Filter: o.Select.Filter, Groups: o.Select.Groups.IDs, Transform: o.Transform,
			Counts: sum.Counts(), IDs: sum.IDs, Outcome: outcome, Error: errString(runErr), Canary: auditCanary(rep)}
		aerr = f.Audit(rec)
		exitErr = auditFailed(exitErr, aerr, fmt.Sprintf("moved %d messages", sum.Moved))
	}
	cj := canaryJSON{CanaryReport: &rep, WaitFrom: waitFrom, ResumeCommand: resumeCmd}
	if o.format == OutputJSON {
		if err := writeJSON(f.IO.Out, canarySummaryJSON{summaryJSON{sum, errString(aerr), jsonErrorOf(exitErr, nil)}, cj}); err != nil && exitErr == nil {
			return err
		}
		return exitErr
	}
	if failedToStart(o.format, sum, runErr) && len(rep.Steps) == 0 {
		return exitErr
	}
	if err := printSummary(f, o.format, sum, aerr, exitErr); err != nil && exitErr == nil {
		return err
	}
	printCanary(f.IO.Out, c.srcName, cj, o.DryRun)
	return exitErr
}

// canaryOutcome maps a canary's result to the exit error and the audit
// outcome: a stop is ExitCanaryStopped ("canary-stopped"), anything else
// as a redrive's.
func canaryOutcome(sum redrive.Summary, rep redrive.CanaryReport, runErr error, dry bool, resumeCmd string) (error, string) {
	if errors.Is(runErr, redrive.ErrCanaryStopped) && rep.Stopped != nil {
		st := rep.Stopped
		next := "fix the cause, then continue with `" + resumeCmd + "`"
		if resumeCmd == "" {
			next = "every selected message had moved"
		}
		return WithExitCode(ExitCanaryStopped, fmt.Errorf("canary stopped at step %d (%s): %d moved messages came back (allowed %d); %d selected messages stay in the source; %s",
			st.Step, st.Label, st.Returned, st.MaxReturns, rep.Left, next)), "canary-stopped"
	}
	outcome, exitErr := redriveOutcome(sum, runErr, dry, false)
	if exitErr != nil && resumeCmd != "" && !dry {
		exitErr = fmt.Errorf("%w; the canary continues with `%s`", exitErr, resumeCmd)
		if sum.Moved > 0 {
			exitErr = Partial(exitErr)
		}
	}
	return exitErr, outcome
}

// auditCanary is the canary's part of an audit record: its steps, where it
// stopped, and how many came back.
func auditCanary(r redrive.CanaryReport) *AuditCanary {
	a := &AuditCanary{Selected: r.Selected, Wait: r.Wait, MaxReturns: r.MaxReturns, Returned: r.Returned, Left: r.Left, RunIDs: r.RunIDs}
	for _, s := range r.Steps {
		a.Steps = append(a.Steps, AuditCanaryStep{Step: s.Step, Label: s.Label, Moved: s.Moved, Returned: s.Returned})
	}
	if r.Stopped != nil {
		a.StoppedAt = r.Stopped.Step
	}
	return a
}

// printCanary writes the canary's plan, its steps and, when it stopped,
// why and how to go on.
func printCanary(w io.Writer, source string, c canaryJSON, dry bool) {
	r := c.CanaryReport
	labels := make([]string, len(r.Plan))
	for i, p := range r.Plan {
		labels[i] = p.Label
		if p.Size > 0 && strings.HasSuffix(p.Label, "%") {
			labels[i] = fmt.Sprintf("%s=%d", p.Label, p.Size)
		}
	}
	fmt.Fprintf(w, "canary: steps %s of %d selected; wait %s after each (%s); returns counted in %s\n",
		strings.Join(labels, ", "), r.Selected, r.Wait, c.WaitFrom, quoteList(r.Watched))
	if dry {
		return
	}
	for _, s := range r.Steps {
		fmt.Fprintf(w, "  step %d (%s): moved %d; %d came back by then\n", s.Step, s.Label, s.Moved, s.Returned)
	}
	if r.Stopped != nil {
		fmt.Fprintf(w, "canary stopped at step %d (%s): %d moved messages came back (allowed %d)\n", r.Stopped.Step, r.Stopped.Label, r.Stopped.Returned, r.Stopped.MaxReturns)
	}
	for _, g := range r.Returns {
		kind := "new failure group"
		if g.Same {
			kind = "same failure group"
		}
		fmt.Fprintf(w, "  %8d  in `%s`, %s %s: %s\n", g.Count, human.Visible(g.Queue), kind, g.Group, human.Visible(g.Reason))
	}
	if r.Stopped != nil || c.ResumeCommand != "" {
		fmt.Fprintf(w, "%d selected messages were not moved and stay in `%s`\n", r.Left, human.Visible(source))
	}
	if c.ResumeCommand != "" {
		fmt.Fprintf(w, "after a fix, continue with: %s\n", c.ResumeCommand)
	}
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + human.Visible(n) + "`"
	}
	return strings.Join(q, ", ")
}
