package rabbitmq

import (
	"context"
	"errors"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.OriginResolver = (*Broker)(nil)
	_ broker.Purger         = (*Broker)(nil)
	_ broker.FlowWatcher    = (*Broker)(nil)
)

// Origin is where a dead letter came from: the exchange and routing keys
// recorded in the death that deathOf takes for the origin: the most recent
// (x-death[0], RabbitMQ keeps the list newest first) unless that is the TTL
// expiry of a retry queue (see originEntry), so that a message that went
// around a retry ladder goes back to the queue whose consumer rejected it,
// not through the retry delay again.
// An exchange of "" (the default exchange) becomes the queue it died in.
// When x-death was stripped, the queue of x-last-death-queue (3.13 and 4.x)
// is used, else that of x-first-death-queue.
//
// Republishing to the recorded exchange and keys routes the message as it
// was first routed, so with a fanout or topic exchange that also fed other
// queues, those receive a copy as well; a destination queue named by the caller targets one queue.
// A message without a death record (published into the queue directly) has
// no origin: ErrNotFound, naming the destination option.
func (b *Broker) Origin(ctx context.Context, queue string, m *broker.Message) (broker.Destination, error) {
	d := m.Death
	if d == nil {
		d = deathOf(m.Headers)
	}
	// The op names no message: callers cache the answer for every message
	// with the same death record, and name each message themselves.
	op := "find the origin of a message in `" + queue + "`"
	if d == nil || d.Queue == "" {
		return broker.Destination{}, &broker.Error{Kind: broker.ErrNotFound, Op: op,
			Hint: broker.Hintf("it has no x-death header (it was not dead-lettered into `%s` by RabbitMQ), so its origin is unknown: choose a destination with %s or %s", queue, broker.OptTo.With("queue:NAME"), broker.OptTo.With("exchange:NAME:KEY"))}
	}
	via := "x-death"
	if len(d.History) == 0 {
		via = "x-last-death-queue"
	}
	if len(d.History) == 0 || d.Exchange == "" {
		return broker.Destination{Kind: broker.ToQueue, Queue: d.Queue, Via: via}, nil
	}
	keys := d.RoutingKeys
	if len(keys) == 0 {
		keys = []string{""}
	}
	return broker.Destination{Kind: broker.ToExchange, Exchange: d.Exchange, RoutingKeys: append([]string(nil), keys...), Via: via}, nil
}

// Purge removes every ready message of queue (queue.purge) and returns how
// many. Unacknowledged deliveries of other consumers are not touched.
func (b *Broker) Purge(ctx context.Context, queue string) (int64, error) {
	var n int
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		var err error
		n, err = ch.QueuePurge(queue, false)
		return err
	})
	if errors.Is(err, broker.ErrNotFound) {
		return 0, b.notFoundQueue("purge queue `"+queue+"`", queue)
	}
	if err != nil {
		var be *broker.Error
		if errors.As(err, &be) && be.Op == "" {
			be.Op = "purge queue `" + queue + "`"
		}
		return 0, err
	}
	return int64(n), nil
}
