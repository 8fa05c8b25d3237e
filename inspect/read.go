package inspect

import (
	"context"

	"github.com/dlq-tools/dlq/broker"
)

// readEach peeks queue through p (borrowing messages from a
// ReusingPeeker), passes each message to add, then runs each when set.
func readEach(ctx context.Context, p broker.Peeker, queue string, opts broker.PeekOptions, add func(context.Context, *broker.Message) error, each func()) (broker.PeekReport, error) {
	peek := p.Peek
	if rp, ok := p.(ReusingPeeker); ok {
		peek = rp.PeekReused
	}
	return peek(ctx, queue, opts, func(m *broker.Message) (err error) {
		// A panic over this message's values ends the read with an error,
		// so the Peeker settles what it holds (a rotation completes).
		defer broker.Recover(m.ID, &err)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := add(ctx, m); err != nil {
			return err
		}
		if each != nil {
			each()
		}
		return nil
	})
}
