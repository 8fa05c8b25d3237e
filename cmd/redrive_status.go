package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
)

type redriveStatusOptions struct {
	f      *Factory
	Source string
	format string
}

func newCmdRedriveStatus(f *Factory, runF func(*redriveStatusOptions) error) *cobra.Command {
	opts := &redriveStatusOptions{f: f}
	c := &cobra.Command{
		Use:               "status SOURCE",
		Short:             "Show the server-side moves of a queue",
		Example:           "  dlq redrive status https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq\n  dlq redrive status orders.dlq -o json",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Source = args[0]
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveStatusRun(c.Context(), opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func openMover(ctx context.Context, f *Factory, ref string) (broker.Broker, broker.ServerSideMover, string, error) {
	src, queue, err := f.OpenQueue(ctx, ref)
	if err != nil {
		return nil, nil, "", err
	}
	mv, ok := src.(broker.ServerSideMover)
	if !ok {
		src.Close()
		return nil, nil, "", broker.Errorf(broker.ErrUnsupported, "server-side moves", "%s has none", src.String())
	}
	return src, mv, queue, nil
}

func redriveStatusRun(ctx context.Context, o *redriveStatusOptions) error {
	src, mv, queue, err := openMover(ctx, o.f, o.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	tasks, err := mv.MoveStatus(ctx, queue)
	if err != nil {
		return err
	}
	if o.format == OutputJSON {
		if tasks == nil {
			tasks = []broker.MoveTask{}
		}
		return writeJSON(o.f.IO.Out, tasks)
	}
	if len(tasks) == 0 {
		o.f.IO.Statusf("no server-side moves of `%s`", queue)
		return nil
	}
	for _, t := range tasks {
		printTask(o.f.IO.Out, t)
	}
	return nil
}

type redriveCancelOptions struct {
	f      *Factory
	Source string
	Handle string
	format string
}

func newCmdRedriveCancel(f *Factory, runF func(*redriveCancelOptions) error) *cobra.Command {
	opts := &redriveCancelOptions{f: f}
	c := &cobra.Command{
		Use:   "cancel SOURCE [HANDLE]",
		Short: "Stop a server-side move (messages already moved stay moved)",
		Long: `Stop the running server-side move of SOURCE (or the one HANDLE names, as
` + "`dlq redrive status`" + ` shows it). Messages already moved stay at the destination;
the rest stay in SOURCE. On a terminal dlq asks first; without one it needs
--yes.`,
		Example:           "  dlq redrive cancel https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq\n  dlq redrive cancel orders.dlq dlq-move-orders.dlq-1a2b --yes -o json",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Source = args[0]
			if len(args) == 2 {
				opts.Handle = args[1]
			}
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveCancelRun(c.Context(), opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func redriveCancelRun(ctx context.Context, o *redriveCancelOptions) error {
	f := o.f
	if err := f.CheckWritable("redrive cancel"); err != nil {
		return err
	}
	if err := needYes(f, "redrive cancel"); err != nil {
		return err
	}
	src, mv, queue, err := openMover(ctx, f, o.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	handle := o.Handle
	if handle == "" {
		tasks, err := mv.MoveStatus(ctx, queue)
		if err != nil {
			return err
		}
		var running []string
		for _, t := range tasks {
			if !t.State.Done() {
				running = append(running, t.Handle)
			}
		}
		switch len(running) {
		case 0:
			return fmt.Errorf("no running server-side move of `%s`: see `dlq redrive status %s`", queue, o.Source)
		case 1:
			handle = running[0]
		default:
			return flagErrorf("%d server-side moves of `%s` are running: name one (%s)", len(running), queue, strings.Join(running, ", "))
		}
	}
	if err := confirmOnTerminal(f, fmt.Sprintf("stop the server-side move %s of `%s` (messages already moved stay moved)", human.Visible(handle), queue)); err != nil {
		return err
	}
	task, err := mv.CancelMove(ctx, queue, handle)
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	aerr := f.Audit(AuditRecord{Action: "redrive-cancel", Broker: src.String(), Source: queue, Destination: handle, Outcome: outcome, Error: errString(err)})
	if err != nil {
		return auditFailed(err, aerr, "")
	}
	if o.format == OutputJSON {
		if werr := writeJSON(f.IO.Out, task); werr != nil {
			return auditFailed(werr, aerr, "")
		}
	} else {
		printTask(f.IO.Out, task)
	}
	return auditFailed(nil, aerr, "cancelled the move")
}
