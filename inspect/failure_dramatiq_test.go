package inspect

import (
	"encoding/json"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// dramatiqTraceback is what the Retries middleware keeps in
// options.traceback (traceback.format_exc(limit=30)) when the actor's
// exception was raised while handling another.
const dramatiqTraceback = "Traceback (most recent call last):\n" +
	"  File \"/app/shop/tasks.py\", line 12, in charge\n" +
	"    resp = gateway.charge(order_id, amount)\n" +
	"  File \"/app/shop/gateway.py\", line 40, in charge\n" +
	"    raise ConnectionResetError(104, 'Connection reset by peer')\n" +
	"ConnectionResetError: [Errno 104] Connection reset by peer\n" +
	"\n" +
	"The above exception was the direct cause of the following exception:\n" +
	"\n" +
	"Traceback (most recent call last):\n" +
	"  File \"/usr/lib/python3/dist-packages/dramatiq/worker.py\", line 485, in process_message\n" +
	"    res = actor(*message.args, **message.kwargs)\n" +
	"shop.errors.PaymentFailed: order 4711 could not be charged\n"

// TestFailureOfDramatiq: a message as Dramatiq's RabbitmqBroker sends it
// (dramatiq/message.py: the JSON of queue_name, actor_name, args, kwargs,
// options, message_id, message_timestamp), after the Retries middleware
// retried it 3 times and then failed it into "shop.XQ".
func TestFailureOfDramatiq(t *testing.T) {
	m := &broker.Message{
		Headers: map[string]any{"x-death": []any{map[string]any{"count": int64(1), "exchange": "", "queue": "shop",
			"reason": "rejected", "routing-keys": []any{"shop"}}}},
		Body: []byte(`{"queue_name":"shop","actor_name":"charge","args":[4711,"19.99"],"kwargs":{},` +
			`"options":{"retries":3,"traceback":` + jsonString(dramatiqTraceback) + `,"redis_message_id":null},` +
			`"message_id":"0e4c2a5e-8f5b-4a59-9b57-3a1f0f2f3b7c","message_timestamp":1764148800000}`),
	}
	got := FailureOf(m)
	want := &Failure{Framework: "dramatiq", ExceptionType: "ConnectionResetError", Message: "[Errno 104] Connection reset by peer",
		Stack: dramatiqTraceback, Origin: &FailureOrigin{Queue: "shop", From: "queue_name"}, Attempts: 3,
		MessageType: "charge", ID: "0e4c2a5e-8f5b-4a59-9b57-3a1f0f2f3b7c"}
	if d := testdiff.Diff(want, got); d != "" {
		t.Errorf("FailureOf(dramatiq dead letter) (-want +got):\n%s", d)
	}

	// A message that failed with no retry left has no traceback: the
	// record names the actor and the way home, and the reason stays the
	// broker's.
	m.Body = []byte(`{"queue_name":"shop.DQ","actor_name":"charge","args":[],"kwargs":{},"options":{"eta":1764148800000},"message_id":"m-1","message_timestamp":1}`)
	want = &Failure{Framework: "dramatiq", Origin: &FailureOrigin{Queue: "shop", From: "queue_name"}, MessageType: "charge", ID: "m-1"}
	if d := testdiff.Diff(want, FailureOf(m)); d != "" {
		t.Errorf("FailureOf(dramatiq, no retries) (-want +got):\n%s", d)
	}

	// An application's own body with a queue_name is not Dramatiq's.
	own := &broker.Message{Body: []byte(`{"queue_name":"reports","message_id":"7"}`)}
	if f := FailureOf(own); f != nil {
		t.Errorf("FailureOf(an app's queue_name) = %+v, want nil", f)
	}
}

func TestPythonRootCause(t *testing.T) {
	for _, tt := range []struct{ tb, typ, msg string }{
		{dramatiqTraceback, "ConnectionResetError", "[Errno 104] Connection reset by peer"},
		{"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    1/0\nZeroDivisionError: division by zero\n", "ZeroDivisionError", "division by zero"},
		{"Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n    raise KeyError('sku')\nKeyError: 'sku'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\nValueError: bad\n", "KeyError", "'sku'"},
		{"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nshop.Timeout\n", "shop.Timeout", ""},
		{"", "", ""},
	} {
		typ, msg := pythonRootCause(tt.tb)
		if typ != tt.typ || msg != tt.msg {
			t.Errorf("pythonRootCause(%q) = %q, %q; want %q, %q", tt.tb, typ, msg, tt.typ, tt.msg)
		}
	}
}

// TestFailureOfLaravelAndShoryuken: the SQS job formats that name their
// framework but keep no failure in the message.
func TestFailureOfLaravelAndShoryuken(t *testing.T) {
	// Illuminate\Queue\Queue::createPayloadArray, as a queued job's body.
	laravel := &broker.Message{Body: []byte(`{"uuid":"9b1f6c1e-2f1d-4c0e-8f61-5d0f6f0f2a11","displayName":"App\\Jobs\\SendInvoice",` +
		`"job":"Illuminate\\Queue\\CallQueuedHandler@call","maxTries":3,"maxExceptions":null,"failOnTimeout":false,"backoff":null,` +
		`"timeout":null,"retryUntil":null,"data":{"commandName":"App\\Jobs\\SendInvoice","command":"O:20:\"App\\Jobs\\SendInvoice\":1:{}"}}`)}
	want := &Failure{Framework: "laravel", MessageType: `App\Jobs\SendInvoice`, ID: "9b1f6c1e-2f1d-4c0e-8f61-5d0f6f0f2a11",
		Consumer: `Illuminate\Queue\CallQueuedHandler@call`}
	if d := testdiff.Diff(want, FailureOf(laravel)); d != "" {
		t.Errorf("FailureOf(laravel job) (-want +got):\n%s", d)
	}
	// Shoryuken::Worker.perform_async: the worker class in an attribute.
	shoryuken := &broker.Message{Body: []byte(`{"order_id":4711}`),
		Attributes: map[string]broker.Attribute{"shoryuken_class": {DataType: "String", StringValue: "InvoiceWorker"}}}
	want = &Failure{Framework: "shoryuken", Consumer: "InvoiceWorker"}
	if d := testdiff.Diff(want, FailureOf(shoryuken)); d != "" {
		t.Errorf("FailureOf(shoryuken message) (-want +got):\n%s", d)
	}
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
