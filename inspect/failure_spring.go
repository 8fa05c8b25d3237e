package inspect

import "strings"

// Spring AMQP (RepublishMessageRecoverer) and Spring Cloud Stream's RabbitMQ
// binder (republishToDlq) republish a failed message to the DLQ with these
// headers (org.springframework.amqp.rabbit.retry.RepublishMessageRecoverer's
// X_* constants; the binder's RabbitMessageChannelBinder uses the same):
//
//	header                   field
//	x-exception-stacktrace   stack; the innermost "Caused by:" is the root
//	                         cause (exception_type, message)
//	x-exception-message      message when the trace names no cause
//	x-original-exchange      origin.exchange (the way home)
//	x-original-routingKey    origin.routing_key; with the default exchange
//	                         ("") it is the queue
//	retry-count              attempts (Spring AMQP 3.2+, the count it reads
//	                         itself, since RabbitMQ 4 ignores a client's x-death)
//	__TypeId__               message_type (Jackson2JsonMessageConverter)
const (
	springStacktrace = "x-exception-stacktrace"
	springMessage    = "x-exception-message"
	springExchange   = "x-original-exchange"
	springRoutingKey = "x-original-routingKey"
	springRetryCount = "retry-count"
	springTypeID     = "__TypeId__"
)

func decodeSpring(in *failureInput, f *Failure) bool {
	stack, msg := in.text(springStacktrace), in.text(springMessage)
	_, hasEx := in.m.Headers[springExchange]
	rk := in.text(springRoutingKey)
	if stack == "" && msg == "" && !hasEx && rk == "" {
		return false
	}
	f.Framework = "spring"
	f.Stack = stack
	if stack != "" {
		f.ExceptionType, f.Message = javaRootCause(stack)
		if f.Message == "" && f.ExceptionType == "" {
			f.Message = msg
		}
		if !hasCausedBy(stack) && msg != "" {
			// The first line of a trace without a cause repeats the message.
			f.Message = msg
		}
	} else {
		f.Message = msg
	}
	if ex := in.text(springExchange); ex != "" || hasEx || rk != "" {
		f.Origin = &FailureOrigin{Exchange: ex, RoutingKey: rk, From: springExchange}
		if ex == "" {
			f.Origin.Queue = rk
			f.Origin.From = springRoutingKey
		}
	}
	f.Attempts = in.int(springRetryCount)
	f.MessageType = in.text(springTypeID)
	return true
}

func hasCausedBy(stack string) bool { return strings.Contains(stack, "Caused by: ") }
