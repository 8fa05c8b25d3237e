package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// A message dlq's client cannot decode stops every read of its queue; a
// peek shows it with its position (see `dlq help peek-safety`). discard and
// redrive take it by that position (--position), without decoding it.

// unreadableFlags are --position of discard and redrive.
type unreadableFlags struct {
	Position int64
	// AllowDrop is redrive's --allow-drop: move into a queue that drops.
	AllowDrop bool
}

func (u *unreadableFlags) register(c *cobra.Command, verb string) {
	c.Flags().Int64Var(&u.Position, "position", 0, "take only the message at this position (1: the head of the queue) that dlq cannot decode, as `dlq peek` names it; the broker "+verb+" it without dlq reading it")
}

// validate refuses --position with flags that select or shape messages:
// the message taken is the one at the position, moved as it is.
func (u *unreadableFlags) validate(c *cobra.Command, others ...string) error {
	if u.Position == 0 {
		if c.Flags().Changed("position") {
			return flagErrorf("`--position` is 1 (the head of the queue) or more")
		}
		return nil
	}
	if u.Position < 0 {
		return flagErrorf("`--position` is 1 (the head of the queue) or more")
	}
	for _, o := range others {
		if c.Flags().Changed(o) {
			return flagErrorf("`--position` takes one message as it is: drop `--%s`", o)
		}
	}
	return nil
}

// takeUnreadableRun moves the unreadable message at u.Position of ref to
// to (redrive), or removes it after archive kept it (discard).
func takeUnreadableRun(ctx context.Context, f *Factory, verb, ref string, u unreadableFlags, to *broker.Destination, toName string, archive *archiveFlags, format string) error {
	src, queue, name, err := f.openToChange(ctx, verb, ref, false)
	if err != nil {
		return err
	}
	defer src.Close()
	if to != nil && !u.AllowDrop {
		if err := redrive.CheckDrop(ctx, src, *to, "nothing was moved"); err != nil {
			return err
		}
	}
	if err := needYes(f, verb); err != nil {
		return err
	}
	taker, ok := src.(broker.UnreadableTaker)
	if !ok {
		return broker.Errorf(broker.ErrUnsupported, verb+" "+name, "%s reads every message it holds: select messages by `--id` instead of `--position`", src.String())
	}
	what := fmt.Sprintf("%s the message at position %d of `%s`, which dlq cannot decode", verb, u.Position, name)
	if to != nil {
		what += " (to " + toName + ")"
	} else {
		what += archive.clause()
	}
	if err := requireYes(f, what); err != nil {
		return err
	}
	var keep func(*broker.Message) error
	sum := redrive.Summary{Source: name, Destination: toName, Examined: 1}
	if to == nil {
		ab, arch, dest, err := archive.open(ctx, f, src, queue)
		if err != nil {
			return err
		}
		if ab != nil {
			defer ab.Close()
			keep = func(m *broker.Message) error {
				errs, err := arch.Publish(ctx, []broker.Outgoing{{Message: m, Dest: dest}})
				if err = errors.Join(append(errs, err)...); err == nil {
					sum.Archived++
				}
				return err
			}
		}
	}
	start := time.Now()
	m, runErr := taker.TakeUnreadable(ctx, queue, broker.TakeOptions{Position: u.Position, To: to}, keep)
	sum.Elapsed = time.Since(start)
	if m != nil {
		sum.IDs = []string{m.ID}
	}
	if runErr == nil {
		sum.Moved = 1
		sum.Destinations = map[string]int64{toName: 1}
	}
	if to == nil {
		sum.Destination = "discard"
		return finishRemoval(f, format, verb, src, name, archive.ArchiveTo, "", nil, sum, runErr, false)
	}
	exitErr, aerr := f.auditRun(AuditRecord{Action: verb, Broker: src.String(), Source: name, Destination: toName}, sum, runErr, false)
	exitErr = auditFailed(exitErr, aerr, "moved 1 message")
	if failedToStart(format, sum, runErr) {
		return exitErr
	}
	if err := printSummary(f, format, sum, aerr, exitErr); err != nil && exitErr == nil {
		return err
	}
	return exitErr
}
