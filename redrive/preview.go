package redrive

import (
	"context"

	"github.com/dlq-tools/dlq/broker"
)

// PreviewIDs is how many message IDs a preview names.
const PreviewIDs = 5

// PreviewDiffs is how many transformed messages a preview shows as diffs,
// as a dry run does.
const PreviewDiffs = 3

// Preview is the dry run shown before a run with opts is confirmed: what
// would move where and what would stay, a sample of PreviewIDs IDs and the
// diffs of the first PreviewDiffs transformed messages. It reads as a dry
// run does and changes nothing; opts' progress and journal are not used.
func Preview(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options) (Summary, error) {
	opts.DryRun, opts.DiffLimit, opts.MaxIDs = true, PreviewDiffs, PreviewIDs
	opts.Progress, opts.Journal = nil, nil
	return Run(ctx, src, queue, dst, opts)
}
