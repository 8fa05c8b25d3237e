package inspect

// Celery (task message protocol 2, the default since Celery 4) publishes a
// task with these AMQP headers and the body [args, kwargs, embed]; a task
// that raises Reject(requeue=False), or fails with task_acks_late and
// task_acks_on_failure_or_timeout off, is rejected and RabbitMQ
// dead-letters it with x-death. Celery writes no failure text: the reason
// stays the broker's ("rejected", "expired", …). (celery/app/amqp.py,
// as_task_v2; docs "Message Protocol".)
//
//	header    field
//	task      message_type (the task's name)
//	id        id (the task id; also the correlation_id property)
//	retries   attempts (the retries Celery made: self.retry, autoretry_for)
//	lang      with root_id, what tells a Celery message from an
//	root_id   application's own "task" header
const (
	celeryTask    = "task"
	celeryID      = "id"
	celeryRetries = "retries"
	celeryLang    = "lang"
	celeryRootID  = "root_id"
)

func decodeCelery(in *failureInput, f *Failure) bool {
	task, id := in.text(celeryTask), in.text(celeryID)
	if task == "" || id == "" {
		return false
	}
	if _, ok := in.m.Headers[celeryLang]; !ok {
		if _, ok := in.m.Headers[celeryRootID]; !ok {
			return false
		}
	}
	f.Framework = "celery"
	f.MessageType = task
	f.ID = id
	f.Attempts = in.int(celeryRetries)
	return true
}
