package topology

import "github.com/dlq-tools/dlq/broker"

// SQS's part of the package: the spec's `sqs:` section, the queues of one
// account and region with their attributes.
func init() {
	register(brokerTopology{
		System:    broker.SQS,
		Section:   "sqs",
		Title:     "SQS",
		Rules:     sqsRules,
		Positions: positionsSQS,
		Expand:    expandSQS,
		Declared:  func(m *Model) bool { return m.SQS != nil },
		Lint:      lintSQSModel,
		Graph:     graphSQS,
		Plan:      planSQSBroker,
		Export:    exportSQS,
		Apply:     applySQS,
	})
}

var sqsRules = []Rule{
	{"sqs-dlq-retention", SevError, "an SQS DLQ keeps messages no longer than its source (SQS keeps the original enqueue time)"},
	{"sqs-fifo-mismatch", SevError, "a FIFO source with a standard DLQ or the reverse (SQS rejects it)"},
	{"sqs-dlq-undeclared", SevWarning, "a RedrivePolicy names a queue the spec does not declare"},
	{"sqs-redrive-denied", SevError, "the DLQ's redrive_allow does not admit a source that names it"},
}
