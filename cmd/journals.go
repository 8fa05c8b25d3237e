package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/redrive"
)

type redriveJournalsOptions struct {
	f      *Factory
	Prune  bool
	format string
}

func newCmdRedriveJournals(f *Factory, runF func(*redriveJournalsOptions) error) *cobra.Command {
	opts := &redriveJournalsOptions{f: f}
	c := &cobra.Command{
		Use:   "journals [--prune]",
		Short: "List redrive journals; --prune removes the finished ones",
		Long: `List the journals of redrive runs (in $XDG_STATE_HOME/dlq/journal): running,
interrupted (` + "`dlq redrive SOURCE --resume`" + ` finishes them) or finished. --prune
removes the finished ones; interrupted and running journals are never
removed. Finished journals older than a week are removed by later runs.`,
		Example: "  dlq redrive journals\n  dlq redrive journals --prune",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveJournalsRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.Prune, "prune", false, "remove the finished journals")
	return c
}

func redriveJournalsRun(o *redriveJournalsOptions) error {
	f := o.f
	dir := redrive.JournalDir()
	if o.Prune {
		removed, err := redrive.PruneJournals(dir, 0, f.Now())
		if err != nil {
			return err
		}
		f.IO.Statusf("removed %d finished journals from %s", len(removed), dir)
	}
	js, err := redrive.ListJournals(dir)
	if err != nil {
		return err
	}
	if o.format == OutputJSON {
		if js == nil {
			js = []redrive.JournalInfo{}
		}
		return writeJSON(f.IO.Out, js)
	}
	if len(js) == 0 {
		f.IO.Statusf("no journals in %s", dir)
		return nil
	}
	t := NewTable("STATE", "STARTED", "SOURCE", "DESTINATION", "BROKER", "PATH")
	for _, j := range js {
		t.Row(j.State, j.Header.Started.Local().Format(time.DateTime), j.Header.Source, j.Header.Destination, j.Header.Broker, j.Path)
	}
	t.Width = terminalWidth(f)
	return t.Render(f.IO.Out, f.IO.ColorEnabled())
}
