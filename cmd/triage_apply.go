package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

type triageApplyOptions struct {
	f   *Factory
	ctx context.Context

	Path       string
	Refresh    bool
	ArchiveDir string
	CanaryWait time.Duration
	RulesFile  string

	format        string
	explicitRules bool
}

func newCmdTriageApply(f *Factory, runF func(*triageApplyOptions) error) *cobra.Command {
	opts := &triageApplyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply PLAN",
		Short: "Review a triage plan, then run each group's action",
		Long: `Read the plan that ` + "`dlq triage QUEUE -o yaml`" + ` wrote (and you edited), read
the queue once more to check that the plan still matches it, show the whole
plan, ask (on a terminal; --yes without one), then run each group's action
in the plan's order, through the same commands a person would run:

  redrive  dlq redrive QUEUE --group ID --canary
  fix      dlq redrive QUEUE --group ID --canary --transform EXPR
  park     dlq discard QUEUE --group ID --archive-to file://DIR/…  (archived
           first), or dlq redrive QUEUE --group ID --to queue:PARK_TO
  wait, look, skip   nothing

Each of them writes its own summary and audit record (one per group). Apply
stops at the first group whose canary stops itself (exit code 6) or that
fails; the groups after it are not touched.

A plan whose acting groups grew or vanished since it was made is refused
with the difference shown: make a new plan, or pass --refresh to take the
queue's groups now, with the plan's choices kept for the groups it knows
(new groups take their suggested action, a new fix is looked at). A fix
whose transform still holds FILL-ME is refused.

Exit codes: 0 every action done; 1 nothing done (bad plan, stale plan,
error before the first action); 2 declined; 3 some groups done, then an
error; 6 a canary stopped (the groups before it are done).`,
		Example: `  dlq triage apply plan.yaml
  dlq triage apply plan.yaml --yes --refresh --archive-dir /var/lib/dlq/parked -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			format, err := outputFormat(f, outputFormats(c)...)
			if err != nil {
				return err
			}
			opts.Path, opts.ctx, opts.format = args[0], c.Context(), format
			opts.explicitRules = c.Flags().Changed("rules")
			if opts.CanaryWait < 0 {
				return flagErrorf("`--canary-wait` must be 0 (the route's default) or a positive duration such as 2m")
			}
			if runF != nil {
				return runF(opts)
			}
			return triageApplyRun(opts.ctx, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Refresh, "refresh", false, "when the queue's groups changed since the plan, apply the plan to them as they are now")
	fl.StringVar(&opts.ArchiveDir, "archive-dir", ".", "where parked groups that are discarded are archived first")
	fl.DurationVar(&opts.CanaryWait, "canary-wait", 0, "settle time after each canary step (default: from the route, see `dlq help redrive`)")
	fl.StringVar(&opts.RulesFile, "rules", "", "rules file for --refresh's new groups (default as `dlq triage`)")
	addOutputFlags(cmd, f, OutputTable, OutputJSON)
	return cmd
}

// readPlanFile reads and checks a plan (YAML or JSON).
func readPlanFile(path string) (inspect.TriagePlan, error) {
	var p inspect.TriagePlan
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return p, flagErrorf("plan %s: no such file: write one with `dlq triage QUEUE -o yaml > %s`", path, path)
		}
		return p, err
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("plan %s: %v: write it again with `dlq triage QUEUE -o yaml`", path, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// triageStep is one group's outcome in apply's summary.
type triageStep struct {
	ID       string          `json:"id"`
	Action   string          `json:"action"`
	Count    int64           `json:"count"`
	Command  string          `json:"command,omitempty"`
	Outcome  string          `json:"outcome"` // done, canary-stopped, failed, not-run, nothing-to-do
	ExitCode int             `json:"exit_code"`
	Error    string          `json:"error,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
}

type triageApplyJSON struct {
	Queue   string               `json:"queue"`
	Changes []inspect.PlanChange `json:"changes"`
	Steps   []triageStep         `json:"groups"`
	Outcome string               `json:"outcome"`
	Error   string               `json:"error,omitempty"`
}

func triageApplyRun(ctx context.Context, o *triageApplyOptions) error {
	f := o.f
	plan, err := readPlanFile(o.Path)
	if err != nil {
		return err
	}
	if cur := currentBrokerName(f); plan.Broker != "" && cur != "" && cur != plan.Broker {
		return flagErrorf("plan %s is for broker %s, not %s: give `--broker` or `--context` as when it was made", o.Path, human.Visible(plan.Broker), human.Visible(cur))
	}
	if err := f.CheckWritable("triage apply"); err != nil {
		return err
	}
	if err := needYes(f, "triage apply"); err != nil {
		return err
	}
	quiet, err := time.ParseDuration(plan.Quiet)
	if err != nil || quiet <= 0 {
		quiet = inspect.DefaultQuiet
	}
	tf := triageFlags{Quiet: quiet, MaxGroups: 10000}
	if tf.rules, err = loadTriageRules(f, o.RulesFile, o.explicitRules); err != nil {
		return err
	}
	cur, err := readTriagePlan(ctx, f, plan.Queue, &tf)
	if err != nil {
		return err
	}
	changes, stale := inspect.ComparePlan(plan, cur)
	out := triageApplyJSON{Queue: plan.Queue, Changes: changes, Steps: []triageStep{}}
	if len(changes) > 0 && o.format != OutputJSON {
		printPlanChanges(f.IO.ErrOut, changes)
	}
	if stale {
		if !o.Refresh {
			err := fmt.Errorf("the queue changed since plan %s was made (groups it acts on grew or vanished): review the difference, then make a new plan or pass `--refresh`", o.Path)
			if o.format == OutputJSON {
				out.Outcome, out.Error = "refused", err.Error()
				_ = writeJSON(f.IO.Out, out)
			}
			return err
		}
		plan = inspect.Refresh(plan, cur)
		for i, g := range plan.Groups {
			if g.Action == inspect.ActionFix && strings.Contains(g.Transform, inspect.TransformTodo) {
				plan.Groups[i].Action = inspect.ActionLook
			}
		}
		if err := plan.Validate(); err != nil {
			return fmt.Errorf("refreshed plan: %w", err)
		}
	}
	steps := make([]triageStep, 0, len(plan.Groups))
	for _, g := range plan.Groups {
		st := triageStep{ID: g.ID, Action: g.Action, Count: g.Count, Outcome: "nothing-to-do"}
		if g.Acts() {
			args := o.stepArgs(plan.Queue, g)
			st.Command = "dlq " + strings.Join(quoteArgs(args), " ")
			st.Outcome = "not-run"
		}
		steps = append(steps, st)
	}
	printPlanReview(f.IO.ErrOut, plan, steps)
	acting := 0
	for _, st := range steps {
		if st.Command != "" {
			acting++
		}
	}
	if acting == 0 {
		out.Steps, out.Outcome = steps, "ok"
		f.IO.Statusf("nothing to apply: no group of the plan is to redrive, fix or park")
		if o.format == OutputJSON {
			return writeJSON(f.IO.Out, out)
		}
		return nil
	}
	if err := requireYes(f, fmt.Sprintf("apply this plan to %s (%d groups)", human.Visible(plan.Queue), acting)); err != nil {
		return err
	}
	var runErr error
	done := 0
	for i, g := range plan.Groups {
		if !g.Acts() {
			continue
		}
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		if o.format != OutputJSON {
			f.IO.Statusf("\n── %s %s (%d messages): %s", g.Action, g.ID, g.Count, steps[i].Command)
		}
		res, err := o.runStep(ctx, plan.Queue, g)
		steps[i].Result = res
		steps[i].ExitCode = int(exitCodeFor(err))
		if err == nil {
			steps[i].Outcome = "done"
			done++
			continue
		}
		steps[i].Error = errorText(err)
		if exitCodeFor(err) == ExitCanaryStopped {
			steps[i].Outcome = "canary-stopped"
			runErr = WithExitCode(ExitCanaryStopped, fmt.Errorf("group %s: the canary stopped itself; the groups after it were not touched", g.ID))
		} else {
			steps[i].Outcome = "failed"
			runErr = fmt.Errorf("group %s: %w", g.ID, err)
			if done > 0 || exitCodeFor(err) == ExitPartial {
				runErr = Partial(runErr)
			}
		}
		break
	}
	out.Steps = steps
	out.Outcome = "ok"
	if runErr != nil {
		out.Outcome, out.Error = "stopped", errorText(runErr)
	}
	if o.format == OutputJSON {
		if err := writeJSON(f.IO.Out, out); err != nil {
			return err
		}
	} else {
		printApplySummary(f.IO.ErrOut, steps)
	}
	return runErr
}

// currentBrokerName is the broker as a plan records it.
func currentBrokerName(f *Factory) string {
	if f.Options.Broker != "" {
		return broker.Redact(f.Options.Broker)
	}
	return f.Options.Context
}

var safeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// stepArgs is the command that runs g's action.
func (o *triageApplyOptions) stepArgs(queue string, g inspect.PlanGroup) []string {
	switch g.Action {
	case inspect.ActionPark:
		if g.ParkTo != "" {
			return []string{"redrive", queue, "--group", g.ID, "--to", "queue:" + g.ParkTo}
		}
		name := safeName.ReplaceAllString(strings.TrimPrefix(queue, "file://"), "_")
		path := filepath.Join(o.ArchiveDir, fmt.Sprintf("parked-%s-%s-%s.jsonl.gz", strings.Trim(name, "_"), g.ID, o.f.Now().UTC().Format("20060102T150405Z")))
		return []string{"discard", queue, "--group", g.ID, "--archive-to", "file://" + path}
	}
	args := []string{"redrive", queue, "--group", g.ID, "--canary"}
	if o.CanaryWait > 0 {
		args = append(args, "--canary-wait", o.CanaryWait.String())
	}
	if g.Action == inspect.ActionFix {
		args = append(args, "--transform", g.Transform)
	}
	return args
}

// runStep runs g's action through its command (redrive or discard) on the
// same factory, answering its question (apply asked already); in JSON
// mode it returns the command's JSON.
func (o *triageApplyOptions) runStep(ctx context.Context, queue string, g inspect.PlanGroup) (json.RawMessage, error) {
	f := o.f
	args := o.stepArgs(queue, g)
	saved := *f.Options
	savedOut := f.IO.Out
	defer func() {
		*f.Options = saved
		f.IO.Out = savedOut
	}()
	var buf bytes.Buffer
	f.Options.Yes = true
	if o.format == OutputJSON {
		f.Options.Output = OutputJSON
		f.IO.Out = &buf
	} else {
		f.Options.Output = ""
	}
	var c *cobra.Command
	if args[0] == "discard" {
		c = newCmdDiscard(f, nil)
	} else {
		c = newCmdRedrive(f, nil)
	}
	f.Options.JQ = ""
	c.SetArgs(args[1:])
	c.SetIn(f.IO.In)
	c.SetOut(f.IO.Out)
	c.SetErr(f.IO.ErrOut)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.ExecuteContext(ctx)
	if o.format == OutputJSON && json.Valid(bytes.TrimSpace(buf.Bytes())) {
		return json.RawMessage(bytes.TrimSpace(buf.Bytes())), err
	}
	return nil, err
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"|&;<>()$`\\*?[]{}!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = human.Visible(a)
	}
	return out
}

func printPlanChanges(w io.Writer, changes []inspect.PlanChange) {
	fmt.Fprintln(w, "The queue's groups changed since the plan was made:")
	for _, c := range changes {
		sign := map[string]string{"grew": "~", "shrank": "~", "vanished": "-", "new": "+"}[c.Change]
		fmt.Fprintf(w, "  %s %-10s %-8s %d → %d  %s\n", sign, c.ID, c.Change, c.Was, c.Now, human.Visible(truncate(c.Template, 70)))
	}
}

// printPlanReview shows the whole plan before anything is done, as
// terraform shows a plan: what each group's action will do.
func printPlanReview(w io.Writer, p inspect.TriagePlan, steps []triageStep) {
	fmt.Fprintf(w, "Plan for %s:\n", human.Visible(p.Queue))
	counts := map[string]int64{}
	for i, g := range p.Groups {
		sign := " "
		switch g.Action {
		case inspect.ActionRedrive, inspect.ActionFix:
			sign = "~"
		case inspect.ActionPark:
			sign = "-"
		}
		fmt.Fprintf(w, "  %s %-7s %-10s %7d  %s\n", sign, g.Action, orDash(g.ID), g.Count, human.Visible(truncate(g.Template, 70)))
		if steps[i].Command != "" {
			fmt.Fprintf(w, "              %s\n", steps[i].Command)
			counts[g.Action] += g.Count
		}
	}
	fmt.Fprintf(w, "Plan: %d messages to redrive with a canary, %d to fix and redrive, %d to park; the rest left alone.\n",
		counts[inspect.ActionRedrive], counts[inspect.ActionFix], counts[inspect.ActionPark])
}

func printApplySummary(w io.Writer, steps []triageStep) {
	fmt.Fprintln(w, "\nTriage apply:")
	for _, s := range steps {
		if s.Command == "" {
			continue
		}
		line := fmt.Sprintf("  %-10s %-7s %-14s", s.ID, s.Action, s.Outcome)
		if s.Error != "" {
			line += " " + human.Visible(s.Error)
		}
		fmt.Fprintln(w, line)
	}
}
