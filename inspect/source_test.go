package inspect

import (
	"context"
	"errors"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// originFake answers every Origin call with dest or err and counts them.
type originFake struct {
	dest  broker.Destination
	err   error
	calls int
}

func (o *originFake) Origin(ctx context.Context, queue string, m *broker.Message) (broker.Destination, error) {
	o.calls++
	return o.dest, o.err
}

func TestQueueSource(t *testing.T) {
	ctx := context.Background()
	named := &broker.Message{Death: &broker.Death{Queue: "orders"}}
	bare := &broker.Message{}

	o := &originFake{dest: broker.Destination{Kind: broker.ToQueue, Queue: "arn:aws:sqs:us-east-1:000000000000:payments"}}
	q := &QueueSource{b: o, queue: "payments-dlq"}
	got := []string{q.Of(ctx, named), q.Of(ctx, bare), q.Of(ctx, bare)}
	if want := []string{"orders", "payments", "payments"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("sources %q, want %q", got, want)
	}
	if o.calls != 1 {
		t.Errorf("the broker was asked %d times, want once for the queue", o.calls)
	}

	none := &QueueSource{b: &originFake{err: errors.New("no x-death")}, queue: "q"}
	if s := none.Of(ctx, bare); s != "" {
		t.Errorf("source %q when the broker cannot tell, want none", s)
	}
	var nilSource *QueueSource
	if s := nilSource.Of(ctx, named); s != "orders" {
		t.Errorf("nil QueueSource: %q, want the message's own source", s)
	}
}
