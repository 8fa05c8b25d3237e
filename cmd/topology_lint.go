package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/internal/rabbitrules"
	"github.com/dlq-tools/dlq/topology"
)

type topologyLintOptions struct {
	f      *Factory
	File   string
	Strict bool
	// RabbitMQVersion is the RabbitMQ version the spec is for.
	RabbitMQVersion string
}

func lintRulesHelp() string {
	var b strings.Builder
	for _, r := range topology.Rules {
		fmt.Fprintf(&b, "  %-26s %-8s %s\n", r.Name, r.Severity, r.Doc)
	}
	return b.String()
}

func newCmdTopologyLint(f *Factory, runF func(*topologyLintOptions) error) *cobra.Command {
	opts := &topologyLintOptions{f: f}
	c := &cobra.Command{
		Use:   "lint -f SPEC",
		Short: "Check a spec offline for dead-letter mistakes",
		Long: `Validate a spec and check the topology it declares, without a broker. Each
finding names its place (file:line:column), its severity and its rule.
Lint exits 1 when it finds an error (or, with --strict, a warning).
With --rabbitmq-version, what that version refuses or ignores (x-queue-version
1 from 4.3, a native delayed retry before 4.3) is an error, and what only other
versions do is left out.

Rules (silence one with ` + "`lint: {ignore: [RULE]}`" + ` in the spec):
` + lintRulesHelp(),
		Example: `  dlq topology lint -f topology.yaml
  dlq topology lint -f topology.yaml --strict --output json
  dlq topology lint -f topology.yaml --rabbitmq-version 4.3`,
		Args: cobra.NoArgs,
		RunE: needsSpecFile(&opts.File, func(c *cobra.Command) error {
			if v := opts.RabbitMQVersion; v != "" && !rabbitrules.ParseVersion(v).Known {
				return flagErrorf("--rabbitmq-version %q is not a RabbitMQ version: give MAJOR.MINOR, for example 4.3", v)
			}
			if runF != nil {
				return runF(opts)
			}
			return topologyLintRun(opts)
		}),
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "spec file (- for stdin)")
	c.Flags().BoolVar(&opts.Strict, "strict", false, "fail on warnings too")
	c.Flags().StringVar(&opts.RabbitMQVersion, "rabbitmq-version", "", "RabbitMQ version the spec is for (`VERSION`, for example 4.3): its refusals become errors")
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func topologyLintRun(opts *topologyLintOptions) error {
	f := opts.f
	format, err := outputFormat(f, OutputTable, OutputJSON)
	if err != nil {
		return err
	}
	m, err := loadTopology(f, opts.File)
	if err != nil {
		return err
	}
	fs := topology.LintWith(m, topology.LintOptions{RabbitMQVersion: opts.RabbitMQVersion})
	errs, warns := topology.CountSeverity(fs, topology.SevError), topology.CountSeverity(fs, topology.SevWarning)
	if format == OutputJSON {
		if fs == nil {
			fs = []topology.Finding{}
		}
		if err := writeJSON(f.IO.Out, map[string]any{"findings": fs, "errors": errs, "warnings": warns}); err != nil {
			return err
		}
	} else {
		color := f.IO.ColorEnabled()
		for _, fd := range fs {
			sev := string(fd.Severity)
			if color {
				code := "\x1b[33m"
				if fd.Severity == topology.SevError {
					code = "\x1b[31m"
				}
				sev = code + sev + "\x1b[0m"
			}
			fmt.Fprintf(f.IO.Out, "%s: %s: %s [%s]\n", fd.Pos, sev, fd.Message, fd.Rule)
		}
		if len(fs) == 0 {
			f.IO.Statusf("%s: no findings", opts.File)
		} else {
			f.IO.Statusf("%d error(s), %d warning(s)", errs, warns)
		}
	}
	if errs > 0 || (opts.Strict && warns > 0) {
		return WithExitCode(ExitError, fmt.Errorf("lint found %d error(s) and %d warning(s)", errs, warns))
	}
	return nil
}
