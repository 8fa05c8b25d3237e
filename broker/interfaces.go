package broker

import (
	"context"
	"time"
)

// Broker is an open connection to one backend. Everything it can do beyond
// naming itself and closing is a capability interface below.
type Broker interface {
	System() System
	// String is the broker's address with credentials redacted; it is safe
	// to print and to write to the audit log.
	String() string
	Close() error
}

// QueueLister lists every queue with a health snapshot.
type QueueLister interface {
	Queues(ctx context.Context) ([]Queue, error)
}

// Namer lists queue names cheaply, in one listing call without depths or
// dead-letter relations: what shell completion asks for. Names start with
// prefix ("" for all), sorted.
type Namer interface {
	QueueNames(ctx context.Context, prefix string) ([]string, error)
}

// ExchangeNamer lists exchange names (RabbitMQ), like Namer; the default
// exchange, which has no name, is left out.
type ExchangeNamer interface {
	ExchangeNames(ctx context.Context, prefix string) ([]string, error)
}

// QueueInspector describes one queue. A missing queue is ErrNotFound.
type QueueInspector interface {
	Queue(ctx context.Context, name string) (Queue, error)
}

// PeekMode selects how a peek reads a queue without taking messages away.
type PeekMode string

const (
	// PeekAuto lets the adapter pick the safest mode for the queue kind.
	PeekAuto PeekMode = ""
	// PeekHold holds up to Limit deliveries unacknowledged, then returns them
	// all at once (classic queues: order kept, redelivered flag set).
	PeekHold PeekMode = "hold"
	// PeekRotate republishes each message to the back of the same queue with
	// publisher confirms and only then acknowledges the original. A full
	// rotation keeps order and never raises a delivery count.
	PeekRotate PeekMode = "rotate"
	// PeekStream reads a stream from an offset; nothing changes.
	PeekStream PeekMode = "stream"
	// PeekReceive receives (SQS) and returns each message at once with a
	// visibility timeout of zero; the receive count goes up by one.
	PeekReceive PeekMode = "receive"
	// PeekRequeue returns each delivery with nack-requeue (quorum queues:
	// delivery count +1, message to the back). Only on explicit request.
	PeekRequeue PeekMode = "requeue"
)

// PeekOptions bound and shape a peek.
type PeekOptions struct {
	// Limit is the most messages to visit; 0 means all of them.
	Limit int
	Mode  PeekMode
	// Offset, for streams: "first", "last", "next", a number, or an RFC 3339
	// time.
	Offset string
	// MaxUnacked bounds how many deliveries are held unacknowledged at once
	// (hold mode); 0 means the adapter's default.
	MaxUnacked int
	// Force accepts a risk that the adapter would otherwise refuse with
	// ErrUnsafe. It never permits losing a message.
	Force bool
	// GetUnreadable accepts that a message the adapter's client cannot
	// decode is read another way that counts a delivery (RabbitMQ: the
	// management API's get on a quorum queue with a delivery limit).
	GetUnreadable bool
}

// PeekReport says what a peek read and what, if anything, it changed.
type PeekReport struct {
	Read int64    `json:"read"`
	Mode PeekMode `json:"mode"`
	// Changed is one line for stderr describing what the peek changed on the
	// broker ("20 messages now carry the redelivered flag"); empty when
	// nothing changed.
	Changed string `json:"changed,omitempty"`
	// OutOfReach counts messages the queue held when the peek began that
	// it could not see without taking them (an SQS FIFO queue shows only
	// the head of each message group, and none of a group with a message
	// in flight); 0 when the read saw everything it was asked to.
	OutOfReach int64 `json:"out_of_reach,omitempty"`
}

// Peeker reads messages without removing them, following the peek-safety
// rules of each queue kind. visit is called once per message in queue order;
// returning ErrStop ends the walk early without error. Messages handed to
// visit must not be retained after it returns unless cloned.
type Peeker interface {
	Peek(ctx context.Context, queue string, opts PeekOptions, visit func(*Message) error) (PeekReport, error)
}

// Receipt identifies one delivery for settling. Tag is a RabbitMQ delivery
// tag or an archive line; Handle is an SQS receipt handle.
type Receipt struct {
	Tag    uint64
	Handle string
}

// Delivery is a message taken for moving; it must be settled with Ack or
// Release on its Subscription.
type Delivery struct {
	Message *Message
	Receipt Receipt
}

// ConsumeOptions shape a Subscription.
type ConsumeOptions struct {
	// Prefetch bounds the deliveries held unsettled at once.
	Prefetch int
	// Limit stops the subscription (io.EOF) after this many deliveries; 0
	// means until the queue is drained.
	Limit int64
	// Visibility is how long SQS hides a received message; 0 means the
	// queue's own visibility timeout.
	Visibility time.Duration
	// Idle is how long to wait for a message before reporting the queue
	// drained (io.EOF).
	Idle time.Duration
}

// Subscription hands out deliveries one at a time. Deliveries are settled
// only by Ack (remove: call after the destination confirmed) or Release
// (return unchanged). Close releases everything still unsettled.
type Subscription interface {
	// Next returns the next delivery or io.EOF when the queue is drained or
	// the limit reached.
	Next(ctx context.Context) (*Delivery, error)
	Ack(ctx context.Context, receipts ...Receipt) error
	Release(ctx context.Context, receipts ...Receipt) error
	Close() error
}

// Consumer takes messages for moving.
type Consumer interface {
	Consume(ctx context.Context, queue string, opts ConsumeOptions) (Subscription, error)
}

// Extender keeps unsettled SQS messages hidden while slow work finishes.
type Extender interface {
	Extend(ctx context.Context, d time.Duration, receipts ...Receipt) error
}

// Outgoing is one message to publish to a concrete destination (never
// ToOrigin).
type Outgoing struct {
	Message *Message
	Dest    Destination
	// DeduplicationID and GroupID are for SQS FIFO queues. A redrive sets a
	// new DeduplicationID so that SQS does not drop the message as a
	// duplicate of its original.
	DeduplicationID string
	GroupID         string
	// Requeue marks a message put back, unchanged, at the back of the queue
	// it was just taken from. Such a publish loses nothing when it cannot be
	// routed (only a deleted queue makes it so, and the original went with
	// the queue), so RabbitMQ publishes it without mandatory, and identical
	// copies need not wait for each other's confirms to tell their returns
	// apart.
	Requeue bool
	// Resent is set by Publish: the destination confirmed the message, but
	// only after a send whose answer was lost (a cut connection, a restart)
	// was sent again, so it may hold the message twice.
	Resent bool
}

// Publisher sends messages and waits for the broker to take responsibility
// for them (RabbitMQ publisher confirms with mandatory; SQS SendMessageBatch
// success; archive fsync). Publish returns one error per message, nil for a
// confirmed one; a message returned as unroutable gets ErrUnroutable. The
// second result is a failure of the whole call, after which no result may be
// trusted as confirmed.
type Publisher interface {
	Publish(ctx context.Context, msgs []Outgoing) ([]error, error)
}

// OriginResolver finds the destination a dead letter came from on this
// broker: the exchange and routing keys of its last death (RabbitMQ), or its
// source queue (SQS). Ambiguity is ErrConflict with the candidates named.
type OriginResolver interface {
	Origin(ctx context.Context, queue string, m *Message) (Destination, error)
}

// Purger removes every message of a queue on the broker side.
type Purger interface {
	Purge(ctx context.Context, queue string) (int64, error)
}

// FlowWatcher reports broker flow control (RabbitMQ connection.blocked):
// fn is called with blocked=true and the broker's reason when publishing is
// paused, and blocked=false when it resumes.
type FlowWatcher interface {
	WatchFlow(fn func(blocked bool, reason string))
}
