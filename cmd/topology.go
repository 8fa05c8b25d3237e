package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/topology"
)

// addTopologyCommands registers `dlq topology` and `dlq help topology-spec`.
func addTopologyCommands(root *cobra.Command, f *Factory) {
	root.AddCommand(newCmdTopology(f), newLazyHelpTopic("topology-spec", "The topology spec file format (dlq topology)", lazyTopics["topology-spec"]))
}

func newCmdTopology(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "topology",
		Short: "Declare retry and dead-letter topologies from a spec file: plan, apply, export, lint, graph",
		Long: `Topology as code. A spec file (YAML, see ` + "`dlq help topology-spec`" + `) declares
exchanges, queues, bindings and policies on RabbitMQ, or queues with their
redrive policies on SQS, directly or through high-level constructs (retry
ladders, work queues with a DLQ, SQS pairs).

  lint    offline checks: dead-letter loops, routes to nowhere, retention
  plan    what would change on the broker, and conflicts it would refuse
  apply   make the broker match the spec (never deletes without --prune)
  export  write a broker's topology as a spec
  graph   draw a spec or a broker as Mermaid or Graphviz`,
	}
	c.AddCommand(newCmdTopologyPlan(f, nil), newCmdTopologyApply(f, nil), newCmdTopologyExport(f, nil),
		newCmdTopologyLint(f, nil), newCmdTopologyGraph(f, nil))
	return c
}

// loadTopology reads a spec (path "-" is stdin). A malformed spec prints
// every problem, one per line with file:line:column, to stderr.
func loadTopology(f *Factory, path string) (*topology.Model, error) {
	if path == "" {
		return nil, flagErrorf("`-f` is required: the spec file (see `dlq help topology-spec`)")
	}
	var data []byte
	var err error
	name := path
	if path == "-" {
		name = "<stdin>"
		data, err = io.ReadAll(io.LimitReader(f.IO.In, 8<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read spec %s: %w: check `-f`", name, err)
	}
	m, err := topology.LoadBytes(name, data)
	var se *topology.SpecError
	if errors.As(err, &se) {
		for _, p := range se.Problems {
			fmt.Fprintln(f.IO.ErrOut, p.String())
		}
		return nil, fmt.Errorf("%s: %d problem(s) in the spec: fix them and run again", name, len(se.Problems))
	}
	return m, err
}

// ---- plan ----

type topologyPlanOptions struct {
	f                *Factory
	File             string
	DetailedExitcode bool
	Prune            bool
}

func newCmdTopologyPlan(f *Factory, runF func(*topologyPlanOptions) error) *cobra.Command {
	opts := &topologyPlanOptions{f: f}
	c := &cobra.Command{
		Use:   "plan -f SPEC",
		Short: "Show what apply would change, and the conflicts it would refuse",
		Long: `Read what the broker has (the management API for RabbitMQ, GetQueueAttributes
for SQS; nothing is declared) and print the difference with the spec:

  + create      the object does not exist
  ~ update      changes in place: a policy, SQS queue attributes
  ! conflict    an existing queue or exchange differs in what cannot change
                in place (arguments, type, durability): RabbitMQ would answer
                406 PRECONDITION_FAILED. The plan says how to fix it: a policy
                instead of an argument, or a migration to a new queue.
  - delete      only with --prune: objects under the spec's name_prefix that
                the spec no longer has

A plan with conflicts exits 1. With --detailed-exitcode, a plan without
conflicts exits 0 when nothing would change and 5 when changes are pending.`,
		Example: `  dlq topology plan -f topology.yaml --broker amqp://ops@rabbit/shop
  dlq topology plan -f queues.yaml --broker sqs://eu-west-1 --detailed-exitcode
  dlq topology plan -f topology.yaml --output json | jq '.changes[] | select(.action=="conflict")'`,
		Args: cobra.NoArgs,
		RunE: needsSpecFile(&opts.File, func(c *cobra.Command) error {
			if runF != nil {
				return runF(opts)
			}
			return topologyPlanRun(c.Context(), opts)
		}),
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "spec file (- for stdin)")
	c.Flags().BoolVar(&opts.DetailedExitcode, "detailed-exitcode", false, "exit 0 when nothing would change, 5 when changes are pending")
	c.Flags().BoolVar(&opts.Prune, "prune", false, "also plan deleting objects under the spec's name_prefix that the spec lacks")
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

type planJSON struct {
	*topology.Plan
	Summary topology.Summary `json:"summary"`
}

// makeTopologyPlan loads the spec, opens the broker and plans.
func makeTopologyPlan(ctx context.Context, f *Factory, file string, prune bool) (*topology.Plan, broker.Broker, error) {
	m, err := loadTopology(f, file)
	if err != nil {
		return nil, nil, err
	}
	b, err := f.OpenBroker(ctx)
	if err != nil {
		return nil, nil, err
	}
	popts := topology.PlanOptions{Prune: prune, PruneScope: m.Prefix}
	if prune && m.Prefix == "" {
		b.Close()
		return nil, nil, flagErrorf("`--prune` needs `name_prefix` in the spec: only objects whose names start with it are ever deleted")
	}
	pctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	p, err := topology.MakePlan(pctx, b, m, popts)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	if p.Skipped != "" {
		f.IO.Statusf("the spec's %s section is for another broker: plan it with a %s `--broker`", p.Skipped, p.Skipped)
	}
	return p, b, nil
}

func topologyPlanRun(ctx context.Context, opts *topologyPlanOptions) error {
	f := opts.f
	format, err := outputFormat(f, OutputTable, OutputJSON)
	if err != nil {
		return err
	}
	p, b, err := makeTopologyPlan(ctx, f, opts.File, opts.Prune)
	if err != nil {
		return err
	}
	defer b.Close()
	if format == OutputJSON {
		if err := writeJSON(f.IO.Out, planJSON{p, p.Summary()}); err != nil {
			return err
		}
	} else if err := topology.WritePlan(f.IO.Out, p, f.IO.ColorEnabled()); err != nil {
		return err
	}
	if n := p.Summary().Conflict; n > 0 {
		return fmt.Errorf("the plan has %d conflict(s): apply would refuse to start; resolve them as the plan explains", n)
	}
	if opts.DetailedExitcode && p.HasChanges() {
		return WithExitCode(ExitChanges, nil)
	}
	return nil
}

// ---- apply ----

type topologyApplyOptions struct {
	f     *Factory
	File  string
	Prune bool
}

func newCmdTopologyApply(f *Factory, runF func(*topologyApplyOptions) error) *cobra.Command {
	opts := &topologyApplyOptions{f: f}
	c := &cobra.Command{
		Use:   "apply -f SPEC",
		Short: "Make the broker match the spec",
		Long: `Plan, then carry out the plan in dependency order: RabbitMQ exchanges, policies,
queues, bindings (policies first, so that queues are born with their
dead-letter settings); SQS dead-letter queues before the queues that name
them in a RedrivePolicy.

Apply refuses to start when the plan has a conflict: the broker is left
unchanged. It is idempotent: applying the same spec again changes nothing.
It never deletes anything unless --prune is given, and then only objects
under the spec's name_prefix, only empty queues, and only after confirmation
(--yes without a terminal). Every apply writes an audit record.`,
		Example: `  dlq topology apply -f topology.yaml --broker amqp://ops@rabbit/shop
  dlq topology apply -f queues.yaml --broker sqs://eu-west-1 --output json
  dlq topology apply -f topology.yaml --prune --yes`,
		Args: cobra.NoArgs,
		RunE: needsSpecFile(&opts.File, func(c *cobra.Command) error {
			if runF != nil {
				return runF(opts)
			}
			return topologyApplyRun(c.Context(), opts)
		}),
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "spec file (- for stdin)")
	c.Flags().BoolVar(&opts.Prune, "prune", false, "delete objects under the spec's name_prefix that the spec lacks (asks first)")
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

type applyJSON struct {
	Plan    planJSON          `json:"plan"`
	Applied []topology.Change `json:"applied"`
	Failed  *topology.Change  `json:"failed,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func topologyApplyRun(ctx context.Context, opts *topologyApplyOptions) error {
	f := opts.f
	format, err := outputFormat(f, OutputTable, OutputJSON)
	if err != nil {
		return err
	}
	if err := f.CheckWritable("topology apply"); err != nil {
		return err
	}
	p, b, err := makeTopologyPlan(ctx, f, opts.File, opts.Prune)
	if err != nil {
		return err
	}
	defer b.Close()
	s := p.Summary()
	rec := AuditRecord{Action: "topology-apply", Broker: b.String(), Source: opts.File,
		Counts: map[string]int64{"create": int64(s.Create), "update": int64(s.Update), "delete": int64(s.Delete), "conflict": int64(s.Conflict)}}
	// audit records the outcome and returns the audit log's failure.
	audit := func(outcome string, err error) error {
		rec.Outcome = outcome
		if err != nil {
			rec.Error = errorText(err)
		}
		return f.Audit(rec)
	}
	if format != OutputJSON {
		if err := topology.WritePlan(f.IO.ErrOut, p, f.IO.ColorEnabled() && f.IO.IsStderrTTY()); err != nil {
			return err
		}
	}
	if s.Conflict > 0 {
		var err error = &topology.ConflictError{Conflicts: p.Conflicts()}
		err = auditFailed(err, audit("failed", err), "")
		if format == OutputJSON {
			_ = writeJSON(f.IO.Out, applyJSON{Plan: planJSON{p, s}, Applied: []topology.Change{}, Error: errorText(err)})
		}
		return err
	}
	if !p.HasChanges() {
		err := auditFailed(nil, audit("ok", nil), "changed nothing")
		if format == OutputJSON {
			return errors.Join(err, writeJSON(f.IO.Out, applyJSON{Plan: planJSON{p, s}, Applied: []topology.Change{}, Error: errString(err)}))
		}
		if err == nil {
			fmt.Fprintln(f.IO.Out, "Nothing to do: the broker already matches the spec.")
		}
		return err
	}
	if err := needYes(f, "topology apply"); err != nil {
		return auditFailed(err, audit("cancelled", err), "")
	}
	if s.Delete > 0 {
		if err := requireYes(f, fmt.Sprintf("delete %d object(s) that the spec no longer has (listed above with -)", s.Delete)); err != nil {
			return auditFailed(err, audit("cancelled", err), "")
		}
	}
	start := f.Now()
	progress := func(c topology.Change, err error) {
		if format == OutputJSON {
			return
		}
		verb := map[topology.Action]string{topology.Create: "created", topology.Update: "updated", topology.Remove: "deleted"}[c.Action]
		if err != nil {
			fmt.Fprintf(f.IO.Out, "%s failed: %s %s: %v\n", c.Action.Marker(), c.Kind, c.Name, err)
			return
		}
		fmt.Fprintf(f.IO.Out, "%s %s %s %s\n", c.Action.Marker(), verb, c.Kind, c.Name)
	}
	res, err := topology.Apply(ctx, b, p, progress)
	rec.Counts["applied"] = int64(len(res.Applied))
	var exitErr, aerr error
	switch {
	case err == nil:
		aerr = audit("ok", nil)
		exitErr = auditFailed(nil, aerr, fmt.Sprintf("applied %d change(s)", len(res.Applied)))
	case errors.Is(err, context.Canceled):
		aerr = audit("cancelled", err)
		exitErr = auditFailed(err, aerr, "")
	case len(res.Applied) > 0:
		aerr = audit("partial", err)
		exitErr = auditFailed(Partial(fmt.Errorf("applied %d of %d change(s), then: %w; re-run apply to continue", len(res.Applied), len(p.Changes), err)), aerr, "")
	default:
		aerr = audit("failed", err)
		exitErr = auditFailed(err, aerr, "")
	}
	if format == OutputJSON {
		out := applyJSON{Plan: planJSON{p, s}, Applied: res.Applied, Failed: res.Failed}
		if out.Applied == nil {
			out.Applied = []topology.Change{}
		}
		if err != nil || aerr != nil {
			out.Error = errString(auditFailed(err, aerr, fmt.Sprintf("applied %d change(s)", len(res.Applied))))
		}
		if jerr := writeJSON(f.IO.Out, out); jerr != nil && exitErr == nil {
			exitErr = jerr
		}
	}
	if exitErr != nil {
		return exitErr
	}
	if format != OutputJSON {
		fmt.Fprintf(f.IO.Out, "Applied %d change(s) in %s: %d created, %d updated, %d deleted.\n",
			len(res.Applied), f.Now().Sub(start).Round(time.Millisecond), s.Create, s.Update, s.Delete)
	}
	return nil
}

// ---- export ----

// needsSpecFile is the RunE of a command that reads a spec file (-f): it
// refuses to run without one.
func needsSpecFile(file *string, run func(c *cobra.Command) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		if *file == "" {
			return flagErrorf("`-f` is required: the spec file (see `dlq help topology-spec`)")
		}
		return run(c)
	}
}

// ---- lint ----

// ---- graph ----

func topologySpecHelp() string {
	return topology.SpecGuide + "\nEVERY FIELD\n\n" + topology.SchemaReference()
}
