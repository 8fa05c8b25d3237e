package archive

import "github.com/dlq-tools/dlq/broker"

var _ broker.QueueTraits = (*Broker)(nil)

// Traits: a message that is not moved is released (it stays in the file).
// Messages archived from SQS keep their metadata as message attributes. An
// archive has line offsets but no arrival times, so a read from a time
// selects by dead-letter age; it is decoded in parallel; it is written as
// a file and publishes to nothing else.
func (b *Broker) Traits(broker.Queue) broker.Traits {
	return broker.Traits{
		Attributes:   func(m *broker.Message) bool { return m.System == broker.SQS },
		SinceByAge:   true,
		ParallelRead: true,
		FilesOnly:    true,
	}
}
