package broker

import "strings"

// failurePrefixes start the headers in which client frameworks record why
// a message failed: Spring AMQP, MassTransit, NServiceBus.
var failurePrefixes = []string{"x-exception-", "MT-Fault-", "NServiceBus.ExceptionInfo."}

// IsFailureHeader reports whether a header (SQS: message attribute) records
// an earlier failure (Spring's x-exception-*, MassTransit's MT-Fault-*,
// NServiceBus's NServiceBus.ExceptionInfo.*): stale once a message is
// redriven, so a redrive strips them by default. Case is ignored.
func IsFailureHeader(k string) bool {
	for _, p := range failurePrefixes {
		if len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
			return true
		}
	}
	return false
}
