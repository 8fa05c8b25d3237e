package redrive

import (
	"context"

	"github.com/dlq-tools/dlq/broker"
)

// PreviewIDs is how many message IDs a preview names.
const PreviewIDs = 5

// Preview is the dry run shown before a run with opts is confirmed: what
// would move where and what would stay, a sample of PreviewIDs IDs and the
// first message's diff. It reads as a dry run does and changes nothing;
// opts' progress and journal are not used.
func Preview(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options) (Summary, error) {
	opts.DryRun, opts.DiffLimit, opts.MaxIDs = true, 1, PreviewIDs
	opts.Progress, opts.Journal = nil, nil
	return Run(ctx, src, queue, dst, opts)
}
