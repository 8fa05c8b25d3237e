package inspect

import (
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// celeryDeadLetter is a task message as Celery 5.2.6 (Debian bookworm's
// python3-celery, task protocol 2: celery/app/amqp.py as_task_v2) publishes
// it after one self.retry(), as RabbitMQ dead-lettered it when the task
// raised Reject(requeue=False): the headers and body taken from a DLQ that
// cmd's TestCeleryWorkerIntegration filled with a real worker.
func celeryDeadLetter() *broker.Message {
	return &broker.Message{
		Headers: map[string]any{
			"argsrepr": "(4711, '19.99')", "eta": nil, "expires": nil, "group": nil, "group_index": nil,
			"id": "fe171cc9-1a09-42a7-8d1b-4c04067b4ad7", "ignore_result": false, "kwargsrepr": "{'currency': 'EUR'}",
			"lang": "py", "origin": "gen22518@vm", "parent_id": "fe171cc9-1a09-42a7-8d1b-4c04067b4ad7",
			"retries": int64(1), "root_id": "fe171cc9-1a09-42a7-8d1b-4c04067b4ad7", "shadow": nil,
			"task": "shop.charge_card", "timelimit": []any{nil, nil},
			"x-death": []any{map[string]any{"count": int64(1), "exchange": "", "queue": "shop.work", "reason": "rejected",
				"routing-keys": []any{"shop.work"}}},
		},
		Properties: broker.Properties{ContentType: "application/json", ContentEncoding: "utf-8",
			CorrelationID: "fe171cc9-1a09-42a7-8d1b-4c04067b4ad7"},
		Body: []byte(`[[4711, "19.99"], {"currency": "EUR"}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]`),
	}
}

func TestFailureOfCelery(t *testing.T) {
	got := FailureOf(celeryDeadLetter())
	want := &Failure{Framework: "celery", MessageType: "shop.charge_card", ID: "fe171cc9-1a09-42a7-8d1b-4c04067b4ad7", Attempts: 1}
	if d := testdiff.Diff(want, got); d != "" {
		t.Errorf("FailureOf(celery dead letter) (-want +got):\n%s", d)
	}

	// An application's own "task" and "id" headers, without Celery's lang
	// or root_id, are not Celery's.
	own := &broker.Message{Headers: map[string]any{"task": "nightly-report", "id": "42"}, Body: []byte(`{}`)}
	if f := FailureOf(own); f != nil {
		t.Errorf("FailureOf(an app's task header) = %+v, want nil", f)
	}
	// A Celery message whose sender set no retries counts no attempts.
	m := celeryDeadLetter()
	delete(m.Headers, "retries")
	if f := FailureOf(m); f == nil || f.Attempts != 0 || f.Framework != "celery" {
		t.Errorf("FailureOf(celery without retries) = %+v, want celery with 0 attempts", f)
	}
}
