package redrive

import (
	"context"
	"math"

	"github.com/dlq-tools/dlq/broker"
)

// PreviewIDs is how many message IDs a preview names.
const PreviewIDs = 5

// PreviewDiffs is how many transformed messages a preview shows as diffs,
// as a dry run does.
const PreviewDiffs = 3

// Preview is the dry run shown before a run with opts is confirmed: what
// would move where and what would stay, and the diffs of the first
// PreviewDiffs transformed messages. Its IDs are those of every message it
// would move (a front end names the first PreviewIDs), so that the
// confirmed run can move exactly those (Options.IDs) without deciding
// again. It reads as a dry run does; opts' progress and journal are not
// used.
func Preview(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options) (Summary, error) {
	opts.DryRun, opts.DiffLimit, opts.MaxIDs = true, PreviewDiffs, math.MaxInt
	opts.Progress, opts.Journal = nil, nil
	return Run(ctx, src, queue, dst, opts)
}

// Selective reports whether the options choose among the messages (a
// filter, IDs, an age window, a dedupe key, a redrive limit), so that a run
// decides for each message and may leave some in the source; a run that
// is not selective takes messages from the head of the queue.
func (o Options) Selective() bool { return newSelector(o).selective() }
