package broker

// Park is how a run that takes messages leaves one it does not move in the
// source.
type Park int

const (
	// ParkRelease gives it back at once. The default for a queue that
	// declares nothing.
	ParkRelease Park = iota
	// ParkRotate publishes an unchanged copy at the back of the same queue
	// with confirms, then acknowledges the original: a release would deliver
	// it again at once, and raise a quorum queue's delivery count. The
	// source must be a Publisher; without one a run releases.
	ParkRotate
	// ParkHold keeps it taken (hidden) until the run ends, then releases
	// it: each delivery raises a receive count, so the run takes it once.
	ParkHold
)

// Traits describe how a queue is best read and written. Adapters declare
// them (QueueTraits); the zero value is the safe default: release what is
// not moved, one receiver, no ordering, headers rather than attributes.
type Traits struct {
	Park Park
	// HoldInPlace, with ParkRotate, is how many parked messages a run may
	// hold unacknowledged and release together at its end, where the queue
	// puts them back in their places with their order kept, before rotation
	// takes over.
	HoldInPlace int
	// ReceiveBatch is the most messages one receive hands out; a run's
	// window rounds up to a multiple of it.
	ReceiveBatch int
	// ParallelReceivers: several subscriptions of the queue (competing
	// consumers, one a worker) keep a run's pipeline full, where one
	// subscription's prefetch does not.
	ParallelReceivers bool
	// Ordered: messages of a group are delivered in order, one group message
	// at a time. A run reads it with one worker and keeps each group's
	// order; a publish to it carries a group and a deduplication ID.
	Ordered bool
	// MaxAttributes is how many message attributes the queue keeps on a
	// message; 0 means it keeps headers instead, and a message that carries
	// attributes has them turned into headers before it is published.
	MaxAttributes int
	// Attributes reports whether a message taken from the queue keeps its
	// metadata as message attributes rather than headers; nil: none does.
	Attributes func(m *Message) bool
	// PeekAll is the mode in which a whole queue is read without taking
	// it (a dry run without a limit); PeekAuto leaves it to the adapter.
	// A stream is always read as one.
	PeekAll PeekMode
	// SinceByAge: the queue keeps no arrival times to start a read at (an
	// archive), so a read from a time keeps the messages dead-lettered
	// since then instead.
	SinceByAge bool
	// ParallelRead: reading the queue decodes messages on every processor
	// (an archive), so a run that reads it keeps them all.
	ParallelRead bool
	// FilesOnly: the queue's broker publishes to files only (an archive); a
	// queue or exchange named without a broker is one on another broker.
	FilesOnly bool
	// StableIDs: the broker gives every message an ID no other message has,
	// and a message delivered again keeps it (SQS's MessageId). A run that
	// is given a message it already moved (a standard SQS queue may deliver
	// a deleted message again, and a restarted server may forget a delete)
	// deletes it again rather than sending it twice. RabbitMQ's IDs are the
	// publisher's or a fingerprint, which two messages may share.
	StableIDs bool
	// Retains: reading never removes a message (a RabbitMQ stream), so a
	// run cannot take messages from the queue; it is exported and the
	// archive redriven instead.
	Retains bool
}

// QueueTraits declares the Traits of a queue. q is the queue as inspected;
// when it could not be, only its Name is set.
type QueueTraits interface {
	Traits(q Queue) Traits
}

// TraitsOf returns the Traits b declares for q, or the zero Traits when it
// declares none.
func TraitsOf(b any, q Queue) Traits {
	if t, ok := b.(QueueTraits); ok {
		return t.Traits(q)
	}
	return Traits{}
}
