package archive

import "github.com/dlq-tools/dlq/broker"

var _ broker.QueueTraits = (*Broker)(nil)

// Traits: a message that is not moved is released (it stays in the file).
// Messages archived from SQS keep their metadata as message attributes.
func (b *Broker) Traits(broker.Queue) broker.Traits {
	return broker.Traits{Attributes: func(m *broker.Message) bool { return m.System == broker.SQS }}
}
