package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// A peek that rotates (or rescues a message near its delivery limit)
// publishes to the queue's own default exchange. A user who may read a
// queue but not write to the default exchange (configure ^$, write ^$,
// read .*: the usual monitoring user) has the publish refused, and the
// refusal closes a channel: on a quorum queue every delivery the peek held
// then goes back with x-delivery-count +1, and a few such peeks dead-letter
// the queue away. So before a peek takes anything, it knows whether it may
// write, from a check that changes nothing (writeCheck), and a read that
// could only be made by writing is refused up front.

// errNoWrite says why a peek may not publish: read-only mode, or the user
// lacks write permission on the default exchange.
type errNoWrite struct {
	readOnly bool
	user     string
	vhost    string
	cause    error
}

func (e *errNoWrite) Error() string {
	if e.readOnly {
		return "dlq runs read-only"
	}
	return fmt.Sprintf("user `%s` may not write to the default exchange of vhost `%s`", e.user, e.vhost)
}

func (e *errNoWrite) Unwrap() error { return e.cause }

// canWrite reports nil when a peek may publish copies to the default
// exchange, and an *errNoWrite when it may not. The answer of the broker is
// asked once (writeCheck) and kept.
func (b *Broker) canWrite(ctx context.Context) error {
	if b.readOnly {
		return &errNoWrite{readOnly: true}
	}
	b.mu.Lock()
	known, err := b.writeKnown, b.writeErr
	b.mu.Unlock()
	if known {
		return err
	}
	err = b.writeCheck(ctx)
	var nw *errNoWrite
	if err != nil && !errors.As(err, &nw) {
		return err // the check itself failed: ask again next time
	}
	b.mu.Lock()
	b.writeKnown, b.writeErr = true, err
	b.mu.Unlock()
	return err
}

// writeCheck publishes one empty message to the default exchange with a
// routing key that names no queue, on a channel of its own in confirm mode.
// An allowed publish routes nowhere and is confirmed (mandatory is off, and
// the default exchange has no alternate exchange): nothing changes. A
// refused one closes that channel with access-refused (403), and nothing
// else was held on it.
func (b *Broker) writeCheck(ctx context.Context) error {
	ch, err := b.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return err
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	key := newTag("dlq.write-check.no-such-queue")
	if err := ch.PublishWithContext(ctx, "", key, false, false, amqp.Publishing{DeliveryMode: amqp.Transient}); err != nil {
		return b.noWrite(err)
	}
	wait := b.timeout
	if wait <= 0 {
		wait = DefaultTimeout
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c, ok := <-confirms:
		if ok && c.Ack {
			return nil
		}
		if !ok {
			select {
			case e := <-closed:
				if e != nil {
					return b.noWrite(e)
				}
			default:
			}
			return amqp.ErrClosed
		}
		return fmt.Errorf("the broker refused (nack) a message routed to no queue")
	case e := <-closed:
		if e == nil {
			return amqp.ErrClosed
		}
		return b.noWrite(e)
	case <-t.C:
		return fmt.Errorf("no confirm within %s for a message routed to no queue", wait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noWrite turns an access-refused channel error into *errNoWrite; other
// errors pass.
func (b *Broker) noWrite(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.AccessRefused {
		return &errNoWrite{user: b.user, vhost: b.vhost, cause: err}
	}
	return err
}

// noWriteRefusal is the error for a peek of info in mode that needs to
// publish when it may not (why). The broker is unchanged: nothing was held.
func noWriteRefusal(info peekInfo, mode broker.PeekMode, why *errNoWrite) error {
	kind, fix := broker.ErrAccessDenied, fmt.Sprintf("grant user `%s` write permission on `amq.default` in vhost `%s` (rabbitmqctl set_permissions), or peek as a user who has it", why.user, why.vhost)
	if why.readOnly {
		kind, fix = broker.ErrReadOnly, "peek without read-only mode, as a user who may write to the default exchange"
	}
	var what string
	switch {
	case info.kind == broker.KindQuorum && !info.limited:
		what = fmt.Sprintf("quorum queue `%s` is read by rotating it (republishing each message), which needs to write, and %s; a read that returns its messages would raise their x-delivery-count", info.name, why)
	case info.kind == broker.KindQuorum && info.limited:
		what = fmt.Sprintf("quorum queue `%s` has a delivery limit of %d: a read that returns its messages raises their x-delivery-count, and a few reads dead-letter them (or drop them without a dead-letter exchange); dlq reads it by rotating (republishing each message to the same queue), which needs to write, and %s", info.name, info.deliveryLimit, why)
	default:
		what = fmt.Sprintf("%s mode republishes messages to queue `%s`, which needs to write, and %s", mode, info.name, why)
	}
	return &broker.Error{Kind: kind, Op: "peek queue `" + info.name + "`", Err: why.cause,
		Msg: "nothing was read or changed: " + what + ": " + fix}
}
