package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// redriveServerSide hands the move to the broker and follows it.
func redriveServerSide(ctx context.Context, o *redriveOptions, src broker.Broker, queue string, dest broker.Destination) error {
	f := o.f
	if dest.Kind == broker.ToFile {
		return flagErrorf("`--server-side` cannot write an archive: drop `--server-side` or choose a queue")
	}
	bar := newRedriveBar(f, "server-side")
	task, err := redrive.ServerSide(ctx, src, queue, redrive.ServerSideOptions{Dest: dest, Rate: o.Rate, Wait: true,
		Progress: func(t broker.MoveTask) {
			p := redrive.Progress{}
			if t.Moved != nil {
				p.Moved = *t.Moved
			}
			if t.ToMove != nil {
				p.Total, p.Examined, p.Selected = *t.ToMove, p.Moved, true
			}
			if t.Remaining != nil {
				p.Moved = 0
				bar.verb = fmt.Sprintf("server-side, %d left", *t.Remaining)
			}
			bar.update(p)
		}})
	bar.finish()
	outcome := "ok"
	var exitErr error
	switch {
	case errors.Is(err, context.Canceled) && task.Handle != "":
		outcome = "cancelled"
		exitErr = WithExitCode(ExitCancelled, fmt.Errorf("stopped watching; the broker keeps moving (%s): `dlq redrive status %s`, or stop it with `dlq redrive cancel %s`", task.Handle, o.Source, o.Source))
	case err != nil && task.Handle != "":
		outcome = "failed"
		exitErr = Partial(err)
	case err != nil:
		outcome = "failed"
		exitErr = err
	}
	counts := map[string]int64{}
	if task.Moved != nil {
		counts["moved"] = *task.Moved
	}
	aerr := f.Audit(AuditRecord{Action: "redrive-server-side", Broker: src.String(), Source: queue, Destination: o.To,
		Counts: counts, Outcome: outcome, Error: errString(err)})
	exitErr = auditFailed(exitErr, aerr, "the broker was handed the move")
	if o.format == OutputJSON {
		if werr := writeJSON(f.IO.Out, task); werr != nil && exitErr == nil {
			return werr
		}
	} else if task.Handle != "" {
		printTask(f.IO.Out, task)
	}
	return exitErr
}

func printTask(w io.Writer, t broker.MoveTask) {
	fmt.Fprintf(w, "%s  %s → %s  %s", t.Handle, t.Source, t.Destination, t.State)
	if t.Moved != nil {
		fmt.Fprintf(w, "  moved %d", *t.Moved)
		if t.ToMove != nil {
			fmt.Fprintf(w, " of %d", *t.ToMove)
		}
	}
	if t.Remaining != nil {
		fmt.Fprintf(w, "  %d left in the source", *t.Remaining)
	}
	if t.MaxPerSecond > 0 {
		fmt.Fprintf(w, "  ≤%d msg/s", t.MaxPerSecond)
	}
	if !t.Started.IsZero() {
		fmt.Fprintf(w, "  started %s", t.Started.UTC().Format(time.RFC3339))
	}
	if t.Failure != "" {
		fmt.Fprintf(w, "  failure: %s", t.Failure)
	}
	fmt.Fprintln(w)
}
