package inspect

import "strings"

// Dramatiq (its RabbitMQ broker) sends a message as a JSON body; a message
// whose retries are spent is nacked without requeue, and RabbitMQ
// dead-letters it into the queue's "<queue>.XQ" with x-death. The Retries
// middleware keeps the count and the last retried failure's traceback in
// the options (dramatiq/message.py Message; dramatiq/middleware/retries.py;
// dramatiq/brokers/rabbitmq.py xq_name).
//
//	body field          field
//	actor_name          message_type
//	message_id          id
//	queue_name          origin queue (without a .DQ or .XQ suffix)
//	options.retries     attempts
//	options.traceback   stack; its root cause: exception_type and message
const dramatiqOrigin = "queue_name"

func decodeDramatiq(in *failureInput, f *Failure) bool {
	b := &in.body
	if b[bkActorName] == nil || b[bkQueueName] == nil || b[bkMessageIdDQ] == nil {
		return false
	}
	f.Framework = "dramatiq"
	f.MessageType = in.field(bkActorName)
	f.ID = in.field(bkMessageIdDQ)
	if q := dramatiqQueue(in.field(bkQueueName)); q != "" {
		f.Origin = &FailureOrigin{Queue: q, From: dramatiqOrigin}
	}
	if opts := objectOrNil(b[bkOptions]); opts != nil {
		if n, ok := parseInt(rawText(jsonField(opts, []string{"retries"}))); ok {
			f.Attempts = n
		}
		if tb := rawText(jsonField(opts, []string{"traceback"})); tb != "" {
			f.Stack = tb
			f.ExceptionType, f.Message = pythonRootCause(tb)
		}
	}
	return true
}

// dramatiqQueue is the queue a Dramatiq queue name stands for: its delay
// queue (.DQ) and dead-letter queue (.XQ) belong to the queue without the
// suffix (dramatiq/common.py q_name).
func dramatiqQueue(name string) string {
	for _, s := range []string{".DQ", ".XQ"} {
		if base, ok := strings.CutSuffix(name, s); ok {
			return base
		}
	}
	return name
}

// pythonRootCause returns the type and message of the first exception of a
// Python traceback (the one the others were raised while handling, or
// from): the last line of its first block, "module.Type: message".
func pythonRootCause(tb string) (typ, msg string) {
	first := tb
	for _, sep := range []string{"\nThe above exception was the direct cause", "\nDuring handling of the above exception"} {
		if i := strings.Index(first, sep); i >= 0 {
			first = first[:i]
		}
	}
	lines := strings.Split(strings.TrimRight(first, "\n \t"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(lines[i], " ") || strings.HasPrefix(l, "Traceback (most recent call last)") {
			continue
		}
		return splitTyped(l)
	}
	return "", ""
}
