package inspect

import "strings"

// NServiceBus moves a message that exhausted its retries to the error queue
// with these headers (NServiceBus's FaultsHeaderKeys and
// ExceptionHeaderHelper); on SQS every header sits inside the body:
// {Headers, Body (base64), S3BodyKey}.
//
//	header                                     field
//	NServiceBus.ExceptionInfo.ExceptionType    exception_type
//	NServiceBus.ExceptionInfo.Message          message
//	NServiceBus.ExceptionInfo.StackTrace       stack (Exception.ToString());
//	                                           its innermost " ---> " is the
//	                                           root cause
//	NServiceBus.ExceptionInfo.InnerExceptionType  exception_type of the root
//	                                           cause when the trace has none
//	NServiceBus.FailedQ                        origin.queue (queue@machine:
//	                                           the way home)
//	NServiceBus.TimeOfFailure                  failed_at (yyyy-MM-dd
//	                                           HH:mm:ss:ffffff Z)
//	NServiceBus.ProcessingEndpoint             consumer
//	NServiceBus.Retries                        attempts (delayed retries)
//	NServiceBus.EnclosedMessageTypes           message_type (the first, without
//	                                           its assembly)
const (
	nsbExceptionType = "NServiceBus.ExceptionInfo.ExceptionType"
	nsbInnerType     = "NServiceBus.ExceptionInfo.InnerExceptionType"
	nsbMessage       = "NServiceBus.ExceptionInfo.Message"
	nsbStackTrace    = "NServiceBus.ExceptionInfo.StackTrace"
	nsbFailedQ       = "NServiceBus.FailedQ"
	nsbTimeOfFailure = "NServiceBus.TimeOfFailure"
	nsbEndpoint      = "NServiceBus.ProcessingEndpoint"
	nsbRetries       = "NServiceBus.Retries"
	nsbMessageTypes  = "NServiceBus.EnclosedMessageTypes"

	nsbTimeLayout = "2006-01-02 15:04:05.999999 Z" // its colon before the fraction made a dot
)

func decodeNServiceBus(in *failureInput, f *Failure) bool {
	typ, msg, failedQ := in.text(nsbExceptionType), in.text(nsbMessage), in.text(nsbFailedQ)
	envelope := in.envelope == "nservicebus"
	if typ == "" && msg == "" && failedQ == "" && !envelope {
		return false
	}
	f.Framework = "nservicebus"
	f.ExceptionType, f.Message = typ, msg
	f.Stack = in.text(nsbStackTrace)
	if t, m := dotnetInnerCause(f.Stack); t != "" || m != "" {
		f.ExceptionType, f.Message = t, m
	} else if inner := in.text(nsbInnerType); inner != "" {
		f.ExceptionType = inner
	}
	if q := queueOfAddress(failedQ); q != "" {
		f.Origin = &FailureOrigin{Queue: q, From: nsbFailedQ}
	}
	f.FailedAt = parseTime(in.text(nsbTimeOfFailure))
	f.Consumer = in.text(nsbEndpoint)
	f.Attempts = in.int(nsbRetries)
	mt := in.text(nsbMessageTypes)
	mt, _, _ = strings.Cut(mt, ";")
	mt, _, _ = strings.Cut(mt, ",")
	f.MessageType = strings.TrimSpace(mt)
	if envelope {
		f.Envelope = "nservicebus"
	}
	return true
}
