package rabbitmq

import (
	"context"
	"errors"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// withChannel runs fn on a FRESH channel of the broker's connection and
// closes the channel afterwards. A channel exception (404 on a passive
// declare, 406 on inequivalent arguments) closes only that channel, never
// the connection that the rest of the command uses. When ctx is cancelled
// while fn runs, the channel is closed to unblock it. A lost connection is
// dialled again before the channel is opened. Errors (from opening the
// channel or from fn) come back translated by translateErr.
func (b *Broker) withChannel(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := b.channel(ctx)
	if err != nil {
		return err
	}
	var once sync.Once
	closeCh := func() { once.Do(func() { _ = ch.Close() }) }
	stop := context.AfterFunc(ctx, closeCh)
	err = fn(ch)
	stop()
	closeCh()
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// The channel was closed under fn because of ctx: report that.
		return translateErr("", ctx.Err())
	}
	return translateErr("", err)
}

// channel opens a new channel, reconnecting first when the connection was
// lost.
func (b *Broker) channel(ctx context.Context) (*amqp.Channel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := b.connection(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil && conn.IsClosed() {
		// The connection died between the check and the open: once more.
		if conn, err = b.connection(ctx); err == nil {
			ch, err = conn.Channel()
		}
	}
	if err != nil {
		return nil, translateErr("open channel", err)
	}
	return ch, nil
}
