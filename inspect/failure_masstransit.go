package inspect

import "strings"

// MassTransit moves a faulted message to the endpoint's _error queue (a
// skipped one to _skipped) with these headers (MassTransit's
// MessageHeaders constants), and its body is MassTransit's JSON envelope.
// On SQS the headers are message attributes, or sit in the envelope's
// headers object.
//
//	header / envelope field     field
//	MT-Fault-ExceptionType      exception_type
//	MT-Fault-Message            message
//	MT-Fault-StackTrace         stack; an inner " ---> " exception is the
//	                            root cause
//	MT-Reason                   message when there is no fault ("skip")
//	MT-Fault-InputAddress       origin.queue (its last path segment: the way home)
//	MT-Fault-ConsumerType       consumer
//	MT-Fault-Timestamp          failed_at
//	MT-Fault-RetryCount         attempts, plus
//	MT-Fault-RedeliveryCount
//	MT-Fault-MessageType        message_type, else the envelope's first
//	messageType[]               messageType without "urn:message:"
//	message                     the payload inside the envelope
const (
	mtExceptionType   = "MT-Fault-ExceptionType"
	mtMessage         = "MT-Fault-Message"
	mtStackTrace      = "MT-Fault-StackTrace"
	mtReason          = "MT-Reason"
	mtInputAddress    = "MT-Fault-InputAddress"
	mtConsumerType    = "MT-Fault-ConsumerType"
	mtTimestamp       = "MT-Fault-Timestamp"
	mtRetryCount      = "MT-Fault-RetryCount"
	mtRedeliveryCount = "MT-Fault-RedeliveryCount"
	mtMessageType     = "MT-Fault-MessageType"
)

func decodeMassTransit(in *failureInput, f *Failure) bool {
	envelope := in.envelope == "masstransit"
	typ, msg, reason := in.text(mtExceptionType), in.text(mtMessage), in.text(mtReason)
	input := in.text(mtInputAddress)
	if typ == "" && msg == "" && reason == "" && input == "" && !envelope {
		return false
	}
	f.Framework = "masstransit"
	f.ExceptionType, f.Message = typ, msg
	f.Stack = in.text(mtStackTrace)
	if t, m := dotnetInnerCause(f.Stack); t != "" || m != "" {
		f.ExceptionType, f.Message = t, m
	}
	if f.ExceptionType == "" && f.Message == "" {
		f.Message = reason
	}
	if q := queueOfAddress(input); q != "" {
		f.Origin = &FailureOrigin{Queue: q, From: mtInputAddress}
	}
	f.Consumer = in.text(mtConsumerType)
	f.FailedAt = parseTime(in.text(mtTimestamp))
	f.Attempts = in.int(mtRetryCount) + in.int(mtRedeliveryCount)
	f.MessageType = in.text(mtMessageType)
	if envelope {
		f.Envelope = "masstransit"
		if f.MessageType == "" {
			f.MessageType = firstMessageType(in.body[bkMessageType])
		}
	}
	f.MessageType = strings.TrimPrefix(f.MessageType, "urn:message:")
	return true
}

// firstMessageType is the first string of the envelope's messageType array.
func firstMessageType(raw []byte) string {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return rawText(raw)
	}
	i = skipWS(raw, i+1)
	end := skipValue(raw, i)
	if end < 0 {
		return ""
	}
	return rawText(raw[i:end])
}
