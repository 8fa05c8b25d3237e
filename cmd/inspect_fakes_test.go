package cmd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

var inspectNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeQueueBroker is a broker with one queue that can be peeked. It fails
// the test when a peek was expected and never happened.
type fakeQueueBroker struct {
	msgs    []*broker.Message
	report  broker.PeekReport
	err     error
	peeks   []broker.PeekOptions
	queues  []string
	closed  bool
	publish []broker.Outgoing
}

func (b *fakeQueueBroker) System() broker.System { return broker.RabbitMQ }
func (b *fakeQueueBroker) String() string        { return "amqp://guest@fake:5672/" }
func (b *fakeQueueBroker) Close() error          { b.closed = true; return nil }

func (b *fakeQueueBroker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	b.peeks = append(b.peeks, opts)
	b.queues = append(b.queues, queue)
	rep := b.report
	if b.err != nil {
		return rep, b.err
	}
	for _, m := range b.msgs {
		if opts.Limit > 0 && rep.Read >= int64(opts.Limit) {
			break
		}
		rep.Read++
		if err := visit(m); err != nil {
			if err == broker.ErrStop {
				return rep, nil
			}
			return rep, err
		}
	}
	return rep, nil
}

func (b *fakeQueueBroker) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	b.publish = append(b.publish, msgs...)
	return make([]error, len(msgs)), nil
}

// inspectFactory returns a factory whose queues all live on b, with test
// streams (a terminal when tty) and a fixed clock.
func inspectFactory(t *testing.T, b *fakeQueueBroker, tty bool) (*Factory, *IOStreams, func() (string, string)) {
	ios, _, out, errOut := Test()
	ios.SetTTY(tty)
	f := &Factory{IO: ios, Options: &GlobalOptions{}, Now: func() time.Time { return inspectNow }}
	f.OpenQueue = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		return b, ref, nil
	}
	t.Cleanup(func() {
		if !t.Failed() && b.err == nil && len(b.peeks) == 0 {
			t.Error("the queue was never peeked")
		}
		if len(b.peeks) > 0 && !b.closed {
			t.Error("the broker was not closed")
		}
	})
	return f, ios, func() (string, string) { return out.String(), errOut.String() }
}

// deadLetters makes n messages: reasons cycle rejected/expired/body error,
// sources orders/payments.
func deadLetters(n int) []*broker.Message {
	var out []*broker.Message
	for i := range n {
		m := &broker.Message{
			ID: fmt.Sprintf("id-%03d", i), System: broker.RabbitMQ, Queue: "orders.dlq",
			Body:       []byte(fmt.Sprintf(`{"n":%d,"tier":"t%d"}`, i, i%2)),
			Properties: broker.Properties{ContentType: "application/json"},
			Headers:    map[string]any{"tenant": "acme"},
		}
		src := []string{"orders", "payments"}[i%2]
		reason := []string{"rejected", "expired", "rejected"}[i%3]
		if i%3 == 2 {
			m.Body = []byte(fmt.Sprintf(`{"n":%d,"tier":"t%d","error":"timeout \"x\"\nline2"}`, i, i%2))
		}
		m.Death = &broker.Death{Reason: reason, Queue: src, Count: 1, First: inspectNow.Add(-time.Duration(i+1) * time.Minute)}
		m.DeliveryCount = int64(i % 4)
		out = append(out, m)
	}
	return out
}
