// Package rabbitrules holds RabbitMQ's rules that dlq needs in more than one
// place, written once and by version: the settings that apply to a queue
// (from its arguments, its policy, its operator policy and the version's
// defaults), how direct and topic exchanges route, what a version refuses
// or ignores, and how it counts deliveries. The RabbitMQ adapter, topology
// plan and lint call it; it speaks no protocol (no AMQP client, no HTTP).
package rabbitrules
