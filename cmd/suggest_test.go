package cmd

import (
	"context"
	"errors"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// listingBroker is a broker that lists the queues it holds.
type listingBroker struct{ names []string }

func (b listingBroker) System() broker.System { return broker.RabbitMQ }
func (b listingBroker) String() string        { return "fake" }
func (b listingBroker) Close() error          { return nil }
func (b listingBroker) Queues(context.Context) ([]broker.Queue, error) {
	qs := make([]broker.Queue, len(b.names))
	for i, n := range b.names {
		qs[i] = broker.Queue{Name: n}
	}
	return qs, nil
}

// A suggestion follows from what the broker holds, not from the words of
// the error: a missing queue gets its nearest names whatever the error
// says, and a queue that exists gets none, even when the error names it.
func TestSuggestQueue(t *testing.T) {
	b := listingBroker{names: []string{"orders.dlq", "orders.dlq2"}}
	ctx := context.Background()
	tests := []struct {
		name, queue string
		err         error
		want        string
	}{
		{"missing queue", "ordrs.dlq", broker.Errorf(broker.ErrNotFound, "peek", "queue `ordrs.dlq` not found"), "peek: queue `ordrs.dlq` not found; did you mean `orders.dlq`, `orders.dlq2`?"},
		{"missing queue, error not naming it", "ordrs.dlq", broker.Errorf(broker.ErrNotFound, "read queue", "object not found"), "read queue: object not found; did you mean `orders.dlq`, `orders.dlq2`?"},
		{"existing queue, missing message", "orders.dlq", broker.Errorf(broker.ErrNotFound, "show", "no message `x` in `orders.dlq`"), "show: no message `x` in `orders.dlq`"},
		{"not a not-found", "ordrs.dlq", errors.New("queue `ordrs.dlq` refused"), "queue `ordrs.dlq` refused"},
	}
	for _, tt := range tests {
		if got := errString(suggestQueue(ctx, b, tt.queue, tt.err)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
