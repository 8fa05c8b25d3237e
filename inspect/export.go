package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlq-tools/dlq/broker"
)

// ExportOptions shape an export.
type ExportOptions struct {
	Walk WalkOptions
	// Batch is how many messages are published per confirmation (default
	// 500).
	Batch int
	// Progress, when set, is called after each confirmed batch with the
	// total so far.
	Progress func(exported int64)
}

// ExportResult says what an export did.
type ExportResult struct {
	Exported int64             `json:"exported"`
	Peek     broker.PeekReport `json:"peek"`
}

// Export copies the messages of queue that opts select into dest through
// pub, without removing them: the queue is only peeked, under the Peeker's
// safety rules. Messages are published in batches and counted as exported
// only after pub confirmed them (for an archive: written and fsynced).
func Export(ctx context.Context, p broker.Peeker, queue string, pub broker.Publisher, dest broker.Destination, opts ExportOptions) (ExportResult, error) {
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	var res ExportResult
	batch := make([]broker.Outgoing, 0, opts.Batch)
	flush := func(ctx context.Context) error {
		if len(batch) == 0 {
			return nil
		}
		errs, err := pub.Publish(ctx, batch)
		if err != nil {
			return fmt.Errorf("write to %s: %w", dest, err)
		}
		for i, e := range errs {
			if e != nil {
				return fmt.Errorf("write message %s to %s: %w", batch[i].Message.ID, dest, e)
			}
		}
		res.Exported += int64(len(batch))
		clear(batch)
		batch = batch[:0]
		if opts.Progress != nil {
			opts.Progress(res.Exported)
		}
		return nil
	}
	rep, err := Walk(ctx, p, queue, opts.Walk, func(m *broker.Message) error {
		batch = append(batch, broker.Outgoing{Message: m.Clone(), Dest: dest})
		if len(batch) >= opts.Batch {
			return flush(ctx)
		}
		return nil
	})
	res.Peek = rep
	if err == nil || errors.Is(err, context.Canceled) {
		// Write what was read before a cancellation too, so that the count
		// printed is what the archive holds.
		ferr := flush(context.WithoutCancel(ctx))
		if err == nil {
			err = ferr
		}
	}
	return res, err
}
