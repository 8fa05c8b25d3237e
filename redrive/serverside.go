package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// ServerSideOptions shape a move handed to the broker.
type ServerSideOptions struct {
	Dest broker.Destination
	// Rate is the broker's move rate cap, messages per second (SQS: at most
	// 500); 0 lets the broker choose.
	Rate float64
	// Wait monitors the move until it is done (and, for a shovel, removes
	// it); without Wait, ServerSide returns once the move started.
	Wait bool
	// Poll is the monitoring interval (default 1s).
	Poll time.Duration
	// Progress is called with each status while waiting.
	Progress func(broker.MoveTask)
}

// ServerSideRefusal explains why options that need dlq to see each message
// cannot be used for a server-side move, or returns nil.
func ServerSideRefusal(o Options) error {
	var what []any
	if o.Filter != nil {
		what = append(what, broker.OptFilter)
	}
	if len(o.IDs) > 0 {
		what = append(what, broker.OptID)
	}
	if o.DedupeBy != nil {
		what = append(what, broker.OptDedupeBy)
	}
	if len(o.ExcludeIDs) > 0 {
		what = append(what, broker.OptExcludeID)
	}
	if o.Transform != nil {
		what = append(what, broker.OptTransform)
	}
	if len(o.SetHeaders) > 0 {
		what = append(what, broker.OptSetHeader)
	}
	if o.Limit > 0 {
		what = append(what, broker.OptLimit)
	}
	if o.MaxRedrives > 0 {
		what = append(what, broker.OptMaxRedrives)
	}
	if o.OlderThan > 0 || o.NewerThan > 0 {
		what = append(what, broker.Hintf("%s/%s", broker.OptOlderThan, broker.OptNewerThan))
	}
	if o.DryRun {
		what = append(what, broker.OptDryRun)
	}
	if len(what) == 0 {
		return nil
	}
	list := strings.Repeat(", %s", len(what))[2:]
	return broker.Hintf(list+" cannot be used with %s: the broker moves every message as it is, without dlq seeing them; drop %s to let dlq select and rewrite messages", append(what, broker.OptServerSide, broker.OptServerSide)...)
}

// MaxServerSideRate is SQS's cap on MaxNumberOfMessagesPerSecond.
const MaxServerSideRate = 500

// ServerSide starts a server-side move of every message of queue and, with
// opts.Wait, follows it until the broker reports it done.
func ServerSide(ctx context.Context, src broker.Broker, queue string, opts ServerSideOptions) (broker.MoveTask, error) {
	mv, ok := src.(broker.ServerSideMover)
	if !ok {
		return broker.MoveTask{}, broker.Errorf(broker.ErrUnsupported, "server-side move", "%s has no server-side move: drop %s", src, broker.OptServerSide)
	}
	if opts.Rate < 0 || opts.Rate > MaxServerSideRate {
		return broker.MoveTask{}, broker.Hintf("%s %g is out of range for %s: use 1 to %d messages per second", broker.OptRate, opts.Rate, broker.OptServerSide, MaxServerSideRate)
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Dest.Kind == "" {
		opts.Dest.Kind = broker.ToOrigin
	}
	task, err := mv.StartMove(ctx, queue, opts.Dest, broker.MoveOptions{MaxPerSecond: int(opts.Rate)})
	if err != nil {
		return task, err
	}
	if err := ctx.Err(); err != nil && !task.State.Done() {
		// Interrupted while the broker answered: the move runs; name it.
		return task, err
	}
	if !opts.Wait {
		return task, nil
	}
	return WaitMove(ctx, mv, queue, task, opts.Poll, opts.Progress)
}

// WaitMove polls a move until it is done. A move the broker no longer lists
// (a shovel that deleted itself after moving the queue's length) is
// completed. A finished shovel that is still declared is removed.
func WaitMove(ctx context.Context, mv broker.ServerSideMover, queue string, task broker.MoveTask, poll time.Duration, progress func(broker.MoveTask)) (broker.MoveTask, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		tasks, err := mv.MoveStatus(ctx, queue)
		if err != nil && !errors.Is(err, broker.ErrNotFound) {
			return task, err
		}
		found := false
		for _, x := range tasks {
			if x.Handle == task.Handle {
				task, found = x, true
				break
			}
		}
		if !found {
			// SQS lists finished tasks without their handle: the most recent
			// one that started with ours is ours.
			for _, x := range tasks {
				if x.Handle == "" && x.State.Done() && !x.Started.Before(task.Started.Add(-time.Minute)) {
					h := task.Handle
					task, found = x, true
					task.Handle = h
					break
				}
			}
		}
		if !found {
			task.State = broker.MoveCompleted
		}
		if progress != nil {
			progress(task)
		}
		if task.State.Done() {
			if found && task.Lingers {
				// Leave nothing behind: a completed shovel is removed.
				if _, err := mv.CancelMove(context.WithoutCancel(ctx), queue, task.Handle); err != nil && !errors.Is(err, broker.ErrNotFound) && !errors.Is(err, broker.ErrConflict) {
					return task, fmt.Errorf("remove finished move %s: %w", task.Handle, err)
				}
			}
			if task.State == broker.MoveFailed {
				return task, fmt.Errorf("server-side move %s failed: %s", task.Handle, task.Failure)
			}
			if task.State == broker.MoveCancelled {
				return task, fmt.Errorf("server-side move %s was cancelled", task.Handle)
			}
			err := checkLeft(ctx, mv, queue, &task)
			return task, err
		}
		select {
		case <-ctx.Done():
			return task, ctx.Err()
		case <-t.C:
		}
	}
}

// checkLeft looks at the source after a move that reports no counts (a
// RabbitMQ shovel, which ends after moving the queue's length): messages
// the destination refused went back to the source, so a source that is
// not empty means the move may be incomplete. The error says so; the move
// itself stays completed.
func checkLeft(ctx context.Context, mv broker.ServerSideMover, queue string, task *broker.MoveTask) error {
	ms, ok := mv.(broker.MoveSettler)
	if !ok {
		return nil
	}
	left, err := ms.Left(ctx, queue)
	if err != nil {
		return nil
	}
	task.Remaining = &left
	if left == 0 {
		return nil
	}
	held := ""
	if task.ToMove != nil {
		held = fmt.Sprintf(" (it held %d when the move started)", *task.ToMove)
	}
	return broker.Hintf("the server-side move finished, but `%s` still holds %d messages%s: the destination refused some (a full queue with overflow reject-publish returns them), or new ones arrived; look with %s, then run again", queue, left, held, broker.Cmd("peek "+queue))
}
