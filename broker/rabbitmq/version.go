package rabbitmq

import "github.com/dlq-tools/dlq/internal/rabbitrules"

// requeueCounts is rabbitrules.RequeueCounts of the server: the version the AMQP
// connection announced in its server properties, else the one the
// management API reported.
func (b *Broker) requeueCounts() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	v := b.amqpVersion
	if v == "" {
		v = b.version
	}
	b.mu.Unlock()
	return rabbitrules.RequeueCounts(rabbitrules.ParseVersion(v))
}
