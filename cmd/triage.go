package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

// OutputYAML is YAML, the triage plan file.
const OutputYAML = "yaml"

// triageFlags are what shapes a triage: the rules and the quiet time.
type triageFlags struct {
	RulesFile string
	Quiet     time.Duration
	ParkTo    string
	MaxGroups int
	Limit     int
	Peek      peekFlags

	rules []inspect.TriageRule
}

func (t *triageFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.RulesFile, "rules", "", "YAML rules file tried before the built-in rules (default $XDG_CONFIG_HOME/dlq/triage-rules.yaml when it exists; see `dlq triage rules`)")
	fl.DurationVar(&t.Quiet, "quiet", inspect.DefaultQuiet, "a group counts as stopped when none of its messages died within this")
	fl.StringVar(&t.ParkTo, "park-to", "", "park permanent failures by moving them to this queue instead of discarding them archive-first")
	fl.IntVar(&t.MaxGroups, "max-groups", 10000, "most distinct groups; further ones are counted as (other)")
	fl.IntVarP(&t.Limit, "limit", "n", 0, "read only the first N messages (0: all)")
	t.Peek.register(c)
}

func (t *triageFlags) validate(f *Factory, explicitRules bool) error {
	if t.Quiet <= 0 {
		return flagErrorf("`--quiet %s`: give a positive duration such as 10m", t.Quiet)
	}
	if t.Limit < 0 || t.MaxGroups < 1 {
		return flagErrorf("`--limit` must be 0 (all) or more, `--max-groups` at least 1")
	}
	if err := t.Peek.validate(); err != nil {
		return err
	}
	rules, err := loadTriageRules(f, t.RulesFile, explicitRules)
	if err != nil {
		return err
	}
	t.rules = rules
	return nil
}

// triageRulesPath is the default rules file.
func triageRulesPath(f *Factory) string {
	return filepath.Join(filepath.Dir(f.ConfigPath()), "triage-rules.yaml")
}

// triageRulesFile is the YAML of a rules file.
type triageRulesFile struct {
	Rules []inspect.TriageRule `yaml:"rules"`
}

// loadTriageRules is the rules of path (the default file when path is
// empty and it exists) before the built-in ones.
func loadTriageRules(f *Factory, path string, explicit bool) ([]inspect.TriageRule, error) {
	builtin := inspect.BuiltinRules()
	if path == "" {
		path = triageRulesPath(f)
		if _, err := os.Stat(path); err != nil {
			return builtin, nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && explicit {
			return nil, flagErrorf("`--rules %s`: no such file: check the path, or see the format with `dlq triage rules --help`", path)
		}
		return nil, fmt.Errorf("read rules file %s: %w", path, err)
	}
	var rf triageRulesFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("rules file %s: %v: see the format with `dlq triage rules --help`", path, err)
	}
	for i := range rf.Rules {
		rf.Rules[i].Origin = path
		if err := rf.Rules[i].Compile(); err != nil {
			return nil, fmt.Errorf("rules file %s: %w", path, err)
		}
	}
	return append(rf.Rules, builtin...), nil
}

type triageOptions struct {
	f   *Factory
	ctx context.Context

	Ref    string
	Triage triageFlags

	format string
}

const triageRulesHelp = `Each failure group is placed by the first rule that matches it, user rules
first, then the built-in table (` + "`dlq triage rules`" + ` lists it). A rule has a
name, a kind (transient, permanent or fixable) and patterns, each of which
must match: reason (a regular expression, case-insensitive, over an example
reason of the group and its template), type (a regular expression over its
exception types) and framework (one of its frameworks, exactly). A fixable
rule's transform is a jq skeleton where {field} is the reason's
(?P<field>…) capture.

The kind and the group's timeline choose the action:
  transient  redrive (with a canary) when the group stopped arriving (no
             death within --quiet); wait while it still arrives; look when
             dlq redrove its messages 3 times already
  fixable    fix: complete the --transform skeleton, then redrive (canary)
  permanent  park: discard archive-first, or move to --park-to QUEUE
  no rule    look: an unknown failure is never guessed into a destructive
             action

A rules file (--rules, default $XDG_CONFIG_HOME/dlq/triage-rules.yaml):

  rules:
    - name: pricing-down
      kind: transient
      reason: 'pricing service unavailable'
    - name: legacy-events
      kind: permanent
      type: 'UnknownEventException'
      framework: masstransit
    - name: missing-tenant
      kind: fixable
      reason: 'tenant (?P<field>\w+) missing'
      transform: '.body.{field} = "FILL-ME"'`

func newCmdTriage(f *Factory, runF func(*triageOptions) error) *cobra.Command {
	opts := &triageOptions{f: f}
	cmd := &cobra.Command{
		Use:   "triage QUEUE|file://ARCHIVE",
		Short: "Suggest an action for each failure group, with its evidence: a plan to review and apply",
		Long: `Read every message of a queue or archive once, as ` + "`dlq stats`" + ` does (never
removing anything), and give, for each failure group: its count and share,
template, exception type and framework, first and last seen and whether it
is still arriving, attempts so far and earlier redrives (from dlq's
x-dlq-redrive mark), where a redrive to the origin sends it, and the action
suggested with the rule that chose it and why.

-o yaml writes the plan file: edit its actions (redrive, wait, fix, park,
look, skip), complete the transforms of fixes, set park_to, then run it with
` + "`dlq triage apply PLAN`" + `. -o json is the same plan as JSON.

` + triageRulesHelp,
		Example: `  dlq triage orders.dlq
  dlq triage orders.dlq -o yaml > plan.yaml
  dlq triage orders.dlq --quiet 30m --park-to orders.parked -o json
  dlq triage file://dump.jsonl.gz --rules my-rules.yaml`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Ref = queue
		opts.ctx = c.Context()
		opts.format = format
		if err := opts.Triage.validate(f, c.Flags().Changed("rules")); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return triageRun(opts.ctx, opts)
	})
	opts.Triage.register(cmd)
	addOutputFlags(cmd, f, OutputTable, OutputJSON, OutputYAML)
	cmd.AddCommand(newCmdTriageRules(f), newCmdTriageApply(f, nil))
	return cmd
}

// readTriagePlan reads ref once and plans it.
func readTriagePlan(ctx context.Context, f *Factory, ref string, t *triageFlags) (inspect.TriagePlan, error) {
	defer collectOften()()
	b, p, queue, err := openPeeker(ctx, f, ref)
	if err != nil {
		return inspect.TriagePlan{}, err
	}
	defer b.Close()
	now := f.Now()
	tr := inspect.NewTriage(queue, inspect.TriageOptions{
		Window:    t.Peek.window(b, now),
		Source:    inspect.NewQueueSource(b, queue),
		MaxGroups: t.MaxGroups,
		Now:       now,
	})
	progress := newProgress(f, "read")
	rep, err := tr.Read(ctx, p, queue, fullRead(ctx, b, queue, t.Peek.options(now, t.Limit)), progress.tick)
	progress.done()
	if rep.Changed != "" {
		f.IO.Statusf("%s", rep.Changed)
	}
	if err != nil {
		return inspect.TriagePlan{}, suggestQueue(ctx, b, queue, err)
	}
	res, ev := tr.Result()
	plan := inspect.BuildPlan(res, ev, t.rules, t.Quiet)
	plan.Queue = ref
	if f.Options.Broker != "" && !strings.HasPrefix(ref, "file://") {
		plan.Broker = broker.Redact(f.Options.Broker)
	}
	if f.Options.Context != "" && plan.Broker == "" && !strings.HasPrefix(ref, "file://") {
		plan.Broker = f.Options.Context
	}
	if t.ParkTo != "" {
		for i := range plan.Groups {
			if plan.Groups[i].Action == inspect.ActionPark {
				plan.Groups[i].ParkTo = t.ParkTo
			}
		}
	}
	return plan, nil
}

func triageRun(ctx context.Context, opts *triageOptions) error {
	f := opts.f
	plan, err := readTriagePlan(ctx, f, opts.Ref, &opts.Triage)
	if err != nil {
		return err
	}
	switch opts.format {
	case OutputJSON:
		return writeJSON(f.IO.Out, plan)
	case OutputYAML:
		return writePlanYAML(f.IO.Out, plan)
	}
	if plan.Total == 0 {
		f.IO.Statusf("%s has no messages", opts.Ref)
		return nil
	}
	t := triageTable(plan)
	t.Width = terminalWidth(f)
	t.Shrink = []Shrink{{Column: 6, Min: 24}, {Column: 4, Min: 14}}
	if err := t.Render(f.IO.Out, f.IO.ColorEnabled()); err != nil {
		return err
	}
	printTriageDetails(f.IO.Out, plan)
	f.IO.Statusf("%d messages in %d groups; write the plan with `-o yaml > plan.yaml`, edit the actions, run it with `dlq triage apply plan.yaml`", plan.Total, len(plan.Groups))
	return nil
}

func writePlanYAML(w io.Writer, plan inspect.TriagePlan) error {
	fmt.Fprintf(w, "# dlq triage plan for %s: edit each group's action (%s),\n# complete fix transforms, set park_to to park in a queue; then: dlq triage apply FILE\n",
		human.Visible(plan.Queue), strings.Join(inspect.TriageActions, ", "))
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(plan); err != nil {
		return err
	}
	return enc.Close()
}

func topValue(v []inspect.HotValue) string {
	if len(v) == 0 {
		return "-"
	}
	s := v[0].Value
	if len(v) > 1 {
		s += fmt.Sprintf(" +%d", len(v)-1)
	}
	return s
}

// triageSeen is a group's timeline in a cell: "2h ago ▁▂▇ arriving".
func triageSeen(g inspect.PlanGroup, now time.Time) string {
	if g.LastSeen == nil {
		return "-"
	}
	s := humanAge(now.Sub(*g.LastSeen)) + " ago " + inspect.Sparkline(g.Trend)
	if g.Arriving {
		s += " arriving"
	}
	return s
}

func triageTable(p inspect.TriagePlan) *Table {
	t := NewTable("ID", "COUNT", "SHARE", "ACTION", "RULE", "LAST SEEN", "TEMPLATE", "TYPE", "FRAMEWORK", "ATTEMPTS", "REDRIVEN", "DESTINATION")
	for _, g := range p.Groups {
		e := g.Evidence
		t.Row(orDash(g.ID), g.Count, fmt.Sprintf("%.1f%%", g.Share*100), g.Action, g.Rule, triageSeen(g, p.Created),
			human.Visible(truncate(g.Template, 70)), human.Visible(shortType(topValue(e.ExceptionTypes))), human.Visible(topValue(e.Frameworks)),
			strconv.FormatInt(e.AttemptsMax, 10), fmt.Sprintf("%d (max %d)", e.Redriven, e.RedrivesMax), human.Visible(topValue(e.Destinations)))
	}
	return t
}

// printTriageDetails writes, under the table, each group's reason for its
// action and what the action needs.
func printTriageDetails(w io.Writer, p inspect.TriagePlan) {
	fmt.Fprintln(w)
	for _, g := range p.Groups {
		fmt.Fprintf(w, "%s %s: %s (%s, rule %s)\n", orDash(g.ID), g.Action, human.Visible(g.Why), g.Kind, g.Rule)
		switch g.Action {
		case inspect.ActionFix:
			fmt.Fprintf(w, "    --transform '%s'   (complete it)\n", human.Visible(g.Transform))
		case inspect.ActionPark:
			if g.ParkTo != "" {
				fmt.Fprintf(w, "    move to queue %s\n", human.Visible(g.ParkTo))
			} else {
				fmt.Fprintln(w, "    discard, archived first")
			}
		}
	}
}

func newCmdTriageRules(f *Factory) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the triage rules: the rules file's, then the built-in table",
		Long:  triageRulesHelp,
		Example: `  dlq triage rules
  dlq triage rules --rules my-rules.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			format, err := outputFormat(f, outputFormats(c)...)
			if err != nil {
				return err
			}
			rules, err := loadTriageRules(f, file, c.Flags().Changed("rules"))
			if err != nil {
				return err
			}
			switch format {
			case OutputJSON:
				return writeJSON(f.IO.Out, rules)
			case OutputYAML:
				return yaml.NewEncoder(f.IO.Out).Encode(triageRulesFile{Rules: rules})
			}
			t := NewTable("NAME", "KIND", "REASON", "TYPE", "FRAMEWORK", "TRANSFORM", "FROM")
			for _, r := range rules {
				t.Row(r.Name, r.Kind, orDash(r.Reason), orDash(r.Type), orDash(r.Framework), orDash(r.Transform), r.Origin)
			}
			t.Width = terminalWidth(f)
			t.Shrink = []Shrink{{Column: 2, Min: 30}}
			return t.Render(f.IO.Out, f.IO.ColorEnabled())
		},
	}
	cmd.Flags().StringVar(&file, "rules", "", "YAML rules file (default $XDG_CONFIG_HOME/dlq/triage-rules.yaml when it exists)")
	addOutputFlags(cmd, f, OutputTable, OutputJSON, OutputYAML)
	return cmd
}

// shortType is an exception type without its package: the table's cell.
func shortType(t string) string {
	if i := strings.LastIndexAny(t, ".:"); i >= 0 && i < len(t)-1 && !strings.Contains(t, " ") {
		return t[i+1:]
	}
	if i := strings.LastIndex(t, "."); i >= 0 && strings.Contains(t, " +") {
		return t[i+1:]
	}
	return t
}
