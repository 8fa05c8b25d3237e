package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

type purgeOptions struct {
	f   *Factory
	ctx context.Context

	Queue   string
	Archive archiveFlags

	format string
}

func newCmdPurge(f *Factory, runF func(*purgeOptions) error) *cobra.Command {
	opts := &purgeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "purge QUEUE (--archive-to file://… | --no-archive)",
		Short: "Remove every message of a queue, archiving them first",
		Long: `Remove every message of QUEUE. With --archive-to, messages are taken in
batches, each written to the archive and fsynced before it is removed (a
broker-side purge is not used, because it would also remove messages that
arrived after the archive was written). With --no-archive the broker's own
purge is used where there is one. On a terminal dlq shows the queue's depth
and asks; without one it needs --yes.`,
		Example: `  dlq purge orders.dlq --archive-to file://orders-dlq-2024-06-01.jsonl.gz
  dlq purge https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq --no-archive --yes`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Queue = queue
		opts.ctx = c.Context()
		opts.format = format
		if err := opts.Archive.validate("purge"); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return purgeRun(opts.ctx, opts)
	})
	opts.Archive.register(cmd)
	addOutputFlags(cmd, f, OutputTable, OutputJSON)
	return cmd
}

func purgeRun(ctx context.Context, o *purgeOptions) error {
	f := o.f
	src, queue, name, err := f.openToChange(ctx, "purge", o.Queue, false)
	if err != nil {
		return err
	}
	defer src.Close()
	what := fmt.Sprintf("purge every message of `%s`", name)
	if qi, ok := src.(broker.QueueInspector); ok {
		if q, err := qi.Queue(ctx, queue); err == nil {
			if q.Depth == 0 && zero(q.InFlight) && zero(q.Delayed) {
				f.IO.Statusf("nothing to purge: `%s` is empty; nothing was changed", name)
				if o.format == OutputJSON {
					return writeJSON(f.IO.Out, newRemovalJSON(redrive.Summary{Source: name, Destination: "purge"}, nil, nil))
				}
				return nil
			}
			what = fmt.Sprintf("purge all %d messages of `%s`", q.Depth, name)
		}
	}
	if err := needYes(f, "purge"); err != nil {
		return err
	}
	if err := requireYes(f, what+o.Archive.clause()); err != nil {
		return err
	}
	ab, arch, dest, err := o.Archive.open(ctx, f, src, queue)
	if err != nil {
		return err
	}
	if ab != nil {
		defer ab.Close()
	}
	bar := newRedriveBar(f, "purged")
	ro := redrive.Options{Progress: bar.update, Notice: func(s string) { f.IO.Statusf("dlq: %s", s) }}
	restore := oneProcessor(src)
	sum, runErr := redrive.Purge(ctx, src, queue, arch, dest, ro)
	runErr = suggestQueue(ctx, src, queue, runErr)
	restore()
	bar.finish()
	sum.Source = name
	return finishRemoval(f, o.format, "purge", src, name, o.Archive.ArchiveTo, "", nil, sum, runErr, false)
}

// zero reports a count that is unknown or 0.
func zero(n *int64) bool { return n == nil || *n == 0 }
