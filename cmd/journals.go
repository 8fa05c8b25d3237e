package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/redrive"
)

type redriveJournalsOptions struct {
	f           *Factory
	Prune       bool
	Interrupted bool
	format      string
}

func newCmdRedriveJournals(f *Factory, runF func(*redriveJournalsOptions) error) *cobra.Command {
	opts := &redriveJournalsOptions{f: f}
	c := &cobra.Command{
		Use:   "journals [--prune [--interrupted]]",
		Short: "List redrive journals; --prune removes the finished ones",
		Long: `List the journals of redrive runs (in $XDG_STATE_HOME/dlq/journal): running,
interrupted (` + "`dlq redrive SOURCE --resume`" + ` finishes them) or finished. --prune
removes the finished ones; --prune --interrupted removes the interrupted ones
too, after asking (without a terminal it needs --yes): their runs can then no
longer be resumed, and what they had in flight is no longer reported. Running
journals are never removed. A run that completes the same redrive (same
source, destination and selection) as an interrupted one closes its journal.
Finished journals older than a week are removed by later runs.`,
		Example: "  dlq redrive journals\n  dlq redrive journals --prune\n  dlq redrive journals --prune --interrupted --yes",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if opts.Interrupted && !opts.Prune {
				return flagErrorf("`--interrupted` needs `--prune`")
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveJournalsRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.Prune, "prune", false, "remove the finished journals")
	c.Flags().BoolVar(&opts.Interrupted, "interrupted", false, "with --prune, remove the interrupted journals too (they can no longer be resumed)")
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
	if o.Interrupted {
		if err := pruneInterrupted(f, dir); err != nil {
			return err
		}
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
	t := NewTable("ID", "STATE", "STARTED", "SOURCE", "DESTINATION", "BROKER", "PATH")
	for _, j := range js {
		t.Row(j.Header.RunID, j.State, j.Header.Started.Local().Format(time.DateTime), j.Header.Source, j.Header.Destination, j.Header.Broker, j.Path)
	}
	t.Width = terminalWidth(f)
	return t.Render(f.IO.Out, f.IO.ColorEnabled())
}

// pruneInterrupted removes the interrupted journals, after naming them and
// asking (--yes without a terminal).
func pruneInterrupted(f *Factory, dir string) error {
	js, err := redrive.ListJournals(dir)
	if err != nil {
		return err
	}
	var paths []string
	for _, j := range js {
		if j.State == redrive.JournalInterrupted {
			paths = append(paths, j.Path)
			f.IO.Statusf("%s", describeJournal(j))
		}
	}
	if len(paths) == 0 {
		f.IO.Statusf("no interrupted journals in %s", dir)
		return nil
	}
	if err := requireYes(f, fmt.Sprintf("remove these %d interrupted journals (their runs can no longer be resumed)", len(paths))); err != nil {
		return err
	}
	removed, err := redrive.RemoveJournals(paths)
	f.IO.Statusf("removed %d interrupted journals from %s", len(removed), dir)
	return err
}
