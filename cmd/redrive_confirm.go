package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/redrive"
)

// errNothingToMove ends a redrive whose preview found nothing to move.
var errNothingToMove = errors.New("nothing to move")

// confirmOnTerminal asks on a terminal, unless --yes; without a terminal it
// lets the command go on (a redrive loses nothing).
func confirmOnTerminal(f *Factory, what string) error {
	if f.Options.Yes || !f.IO.CanPrompt() {
		return nil
	}
	return ask(f, what)
}

// confirmRedrive shows on a terminal what the run would do (a dry run:
// counts per destination, a sample, what stays and why) and asks, as
// `terraform apply` does. It returns how many messages would move and
// their IDs (nil when it did not read). how words a canary's steps in the
// question. --yes, or no terminal, skips it.
func confirmRedrive(ctx context.Context, f *Factory, src broker.Broker, queue string, dst broker.Broker, ro redrive.Options, resume bool, how string) (int64, []string, error) {
	if f.Options.Yes || !f.IO.CanPrompt() {
		return 0, nil, nil
	}
	if resume {
		// The preview would read the interrupted run's journal as its
		// own; ask plainly.
		return 0, nil, confirmOnTerminal(f, fmt.Sprintf("finish the interrupted redrive of `%s` to %s", ro.SourceName, ro.Dest))
	}
	if ro.Read == nil {
		f.IO.Statusf("dlq: reading `%s` to preview the redrive (%s)…", ro.SourceName, readingNote(ctx, src, queue))
	}
	s, err := redrive.Preview(ctx, src, queue, dst, ro)
	if err != nil {
		err = suggestQueue(ctx, src, queue, err)
		if ro.Dest.Kind == broker.ToQueue {
			err = suggestQueue(ctx, dst, ro.Dest.Queue, err)
		}
		return 0, nil, err
	}
	n := printPreview(f.IO.ErrOut, ro.SourceName, s)
	if q, ok := ro.Filter.(*inspect.Query); ok {
		warnMissingPaths(f, "--filter", q)
	} else if g, ok := ro.Filter.(groupFilter); ok && g.query() != nil {
		warnMissingPaths(f, "--filter", g.query())
	}
	if n == 0 {
		if _, err := redriveOutcome(s, nil, true, false); err != nil {
			return 0, nil, err
		}
		f.IO.Statusf("nothing to move; %s", dryRunResult(s, "moved"))
		return 0, nil, errNothingToMove
	}
	if s.ReadChanged != "" {
		f.IO.Statusf("dlq: no message was moved yet, but reading `%s` changed it: %s", ro.SourceName, s.ReadChanged)
	}
	return n, s.IDs, confirmOnTerminal(f, fmt.Sprintf("move these %d messages%s", n, how))
}

// readingNote says what reading all of queue to look at it does: a
// rotation republishes each message; other reads move none (what they
// may change, such as redelivered flags, is reported after the read).
func readingNote(ctx context.Context, b broker.Broker, queue string) string {
	// As the dry run chooses its mode (redrive's dryRun).
	rotate := broker.TraitsOf(b, broker.Queue{Name: queue}).PeekAll == broker.PeekRotate
	if qi, ok := b.(broker.QueueInspector); ok && rotate {
		if q, err := qi.Queue(ctx, queue); err == nil {
			rotate = broker.TraitsOf(b, q).PeekAll == broker.PeekRotate
		}
	}
	if rotate {
		return "rotating it: each message is republished to its back, see `dlq help peek-safety`"
	}
	return "no message is moved, see `dlq help peek-safety`"
}
