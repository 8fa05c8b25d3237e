package broker

import "strings"

// failurePrefixes start the headers in which client frameworks record why
// a message failed: Spring AMQP, MassTransit, NServiceBus.
var failurePrefixes = []string{"x-exception-", "MT-Fault-", "NServiceBus.ExceptionInfo."}

// failureNames are the other headers that describe a failure or where it
// happened: the way home that Spring (x-original-*), MassTransit
// (MT-Reason; MT-Fault-InputAddress has the prefix) and NServiceBus
// (NServiceBus.FailedQ, NServiceBus.TimeOfFailure) record with it.
var failureNames = []string{"x-original-exchange", "x-original-routingKey", "MT-Reason", "NServiceBus.FailedQ", "NServiceBus.TimeOfFailure"}

// IsFailureHeader reports whether a header (SQS: message attribute) records
// an earlier failure or the origin recorded with it (Spring's x-exception-*
// and x-original-exchange/x-original-routingKey, MassTransit's MT-Fault-*
// and MT-Reason, NServiceBus's NServiceBus.ExceptionInfo.*,
// NServiceBus.FailedQ and NServiceBus.TimeOfFailure): stale once a message
// is redriven, so a redrive strips them by default. Case is ignored.
func IsFailureHeader(k string) bool {
	for _, p := range failurePrefixes {
		if len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
			return true
		}
	}
	for _, n := range failureNames {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

// retryCounters are the headers in which frameworks count the retries of a
// message and stop retrying past their limit: Spring AMQP's retry-count,
// MassTransit's MT-Fault-RetryCount and MT-Fault-RedeliveryCount,
// NServiceBus's NServiceBus.Retries (delayed retries).
var retryCounters = []string{"retry-count", "MT-Fault-RetryCount", "MT-Fault-RedeliveryCount", "NServiceBus.Retries"}

// IsRetryCounter reports whether a header (SQS: message attribute) is a
// framework's retry counter. Case is ignored.
func IsRetryCounter(k string) bool {
	for _, n := range retryCounters {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

// ZeroCount is a counter header's value reset to zero, with its type kept:
// an integer of the same width, "0" for text; ok is false for a value that
// is no count.
func ZeroCount(v any) (any, bool) {
	switch v.(type) {
	case int:
		return int(0), true
	case int8:
		return int8(0), true
	case int16:
		return int16(0), true
	case int32:
		return int32(0), true
	case int64:
		return int64(0), true
	case uint8:
		return uint8(0), true
	case uint16:
		return uint16(0), true
	case uint32:
		return uint32(0), true
	case uint64:
		return uint64(0), true
	case float32:
		return float32(0), true
	case float64:
		return float64(0), true
	case string:
		return "0", true
	case []byte:
		return []byte("0"), true
	}
	return nil, false
}
