package topology

import "github.com/dlq-tools/dlq/broker"

// RabbitMQ's part of the package: the spec's `rabbitmq:` section, one
// vhost's exchanges, queues, bindings and policies.
func init() {
	register(brokerTopology{
		System:    broker.RabbitMQ,
		Section:   "rabbitmq",
		Title:     "RabbitMQ",
		Rules:     rabbitRules,
		Positions: positionsRabbitMQ,
		Expand:    expandRabbitMQ,
		Declared:  func(m *Model) bool { return m.Rabbit != nil },
		Lint:      lintRabbitMQ,
		Graph:     graphRabbitMQ,
		Plan:      planRabbitMQ,
		Export:    exportRabbitMQ,
		Apply:     applyRabbitMQ,
	})
}

var rabbitRules = []Rule{
	{"dlx-self", SevError, "a queue dead-letters into itself (a loop, or dropped by RabbitMQ's cycle detection)"},
	{"dlx-cycle", SevError, "queues dead-letter into each other in a cycle without a message TTL: messages loop forever"},
	{"dlx-unroutable", SevError, "no binding of the dead-letter exchange matches the dead-letter routing key: dead letters are dropped"},
	{"dlx-undeclared", SevWarning, "the dead-letter exchange is not declared in the spec (it must already exist)"},
	{"binding-undeclared", SevWarning, "a binding names an exchange or queue the spec does not declare"},
	{"ladder-ttl-order", SevWarning, "retry ladder tiers whose delays do not increase"},
	{"quorum-no-delivery-limit", SevWarning, "a quorum queue without a delivery limit: a poison message is redelivered forever (RabbitMQ 3.x; 4.x stops at 20)"},
	{"quorum-silent-drop", SevWarning, "a quorum queue with no dead-letter exchange and no delivery limit: RabbitMQ 4.x applies its default limit of 20 and drops a message after 20 deliveries without a trace"},
	{"limit-no-dlx", SevWarning, "a queue with a delivery limit and no dead-letter exchange: a message that reaches the limit is dropped without a trace"},
	{"classic-queue", SevWarning, "a durable classic queue where a quorum queue would serve (replicated, delivery limit)"},
	{"queue-version-refused", SevWarning, "a classic queue declared with `x-queue-version: 1`, which RabbitMQ 4.3 refuses (classic queues v1 are gone); an error with --rabbitmq-version 4.3 or later"},
	{"delayed-retry-version", SevWarning, "a native delayed retry, which RabbitMQ before 4.3 accepts and ignores (returned messages come back at once); an error with --rabbitmq-version before 4.3"},
	{"queue-mode-ignored", SevInfo, "`x-queue-mode`, which does nothing on RabbitMQ 3.12 and later (4.3 included)"},
	{"ttl-no-dlx", SevWarning, "a queue with a message TTL and no dead-letter exchange: expired messages vanish"},
}
