package sqs

import (
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.QueueTraits = (*Broker)(nil)

// maxReceive is the most messages one ReceiveMessage returns.
const maxReceive = 10

// Traits: a message that is not moved stays hidden until the run ends (each
// receive raises ApproximateReceiveCount). A receive returns at most 10
// messages, so a standard queue is read by several receivers; a FIFO queue
// (by its kind, or its name when it could not be inspected) by one, group
// order kept. Messages keep their metadata as message attributes, and their
// MessageId for good.
func (b *Broker) Traits(q broker.Queue) broker.Traits {
	fifo := q.Kind == broker.KindSQSFIFO || strings.HasSuffix(q.Name, ".fifo")
	return broker.Traits{
		Park:              broker.ParkHold,
		ReceiveBatch:      maxReceive,
		ParallelReceivers: !fifo,
		Ordered:           fifo,
		MaxAttributes:     maxAttributes,
		Attributes:        func(*broker.Message) bool { return true },
		StableIDs:         true,
	}
}
