package inspect

import (
	"context"

	"github.com/dlq-tools/dlq/broker"
)

// Messages is a Peeker over messages already read (the TUI's list): Walk,
// Export and the rest read them as they read a queue, without asking a
// broker again. The queue name is ignored; of the options only Limit
// counts. Nothing is changed, so the report changes nothing either.
type Messages []*broker.Message

var _ broker.Peeker = Messages(nil)

// Peek visits the messages in order until Limit were read, visit returns
// an error, or ctx ends.
func (ms Messages) Peek(ctx context.Context, _ string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	var rep broker.PeekReport
	for _, m := range ms {
		if opts.Limit > 0 && rep.Read >= int64(opts.Limit) {
			break
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Read++
		if err := visit(m); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
