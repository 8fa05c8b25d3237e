package broker

import "strings"

// RabbitMQ, its queue kinds and what its messages carry.
const (
	RabbitMQ System = "rabbitmq"

	KindClassic QueueKind = "classic"
	KindQuorum  QueueKind = "quorum"
	KindStream  QueueKind = "stream"
)

func init() {
	RegisterMessageTraits(RabbitMQ, MessageTraits{
		// x-death, x-rabbitmq-*, x-stream-offset.
		OwnHeader: func(k string) bool {
			return k == "x-death" || strings.HasPrefix(k, "x-rabbitmq-") || k == "x-stream-offset"
		},
	})
}
