package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// The dead letters of each framework, with the headers it publishes them
// with (Spring AMQP RepublishMessageRecoverer, MassTransit MessageHeaders,
// NServiceBus FaultsHeaderKeys), as inspect's TestFailureOf decodes them.

func springDead(id string) *broker.Message {
	return &broker.Message{Body: []byte(`{"sku":42}`), RoutingKey: "orders.dlq", Properties: broker.Properties{MessageID: id},
		Headers: map[string]any{
			"x-exception-message":    "Listener method threw exception",
			"x-exception-stacktrace": "java.lang.IllegalStateException: price missing",
			"x-original-exchange":    "shop",
			"x-original-routingKey":  "order.created",
			"retry-count":            int32(3),
			"tenant":                 "acme",
		}}
}

func massTransitDead(id string) *broker.Message {
	return &broker.Message{Properties: broker.Properties{MessageID: id, ContentType: "application/vnd.masstransit+json"},
		Body: []byte(`{"messageId":"` + id + `","messageType":["urn:message:Shop:SubmitOrder"],"message":{"orderId":"o-1"},"headers":{}}`),
		Headers: map[string]any{
			"MT-Reason":              "fault",
			"MT-Fault-ExceptionType": "System.ArgumentException",
			"MT-Fault-Message":       "no lines",
			"MT-Fault-InputAddress":  "rabbitmq://localhost/shop/submit-order",
			"MT-Fault-RetryCount":    int32(5),
			"MT-Host-MachineName":    "web-1",
		}}
}

func nserviceBusDead(id string) *broker.Message {
	return &broker.Message{Body: []byte(`{"OrderId":7}`), Properties: broker.Properties{MessageID: id},
		Headers: map[string]any{
			"NServiceBus.ExceptionInfo.ExceptionType": "System.TimeoutException",
			"NServiceBus.ExceptionInfo.Message":       "timed out",
			"NServiceBus.FailedQ":                     "billing@MACHINE01",
			"NServiceBus.TimeOfFailure":               "2014-11-11 02:26:58:000462 Z",
			"NServiceBus.MessageId":                   id,
			"NServiceBus.Retries":                     "2",
		}}
}

func frameworkFake(t *testing.T) *fakeBroker {
	f := newFake(t, broker.RabbitMQ)
	f.declare("mixed.dlq", broker.KindClassic)
	for _, q := range []string{"orders", "order-events", "submit-order", "billing"} {
		f.declare(q, broker.KindClassic)
	}
	f.bind("ex", "orders.new", "orders")
	f.bind("shop", "order.created", "order-events")
	f.put("mixed.dlq", dead("xdeath", `{"n":1}`), springDead("spring"), massTransitDead("mt"), nserviceBusDead("nsb"))
	return f
}

// Messages with different origins go to each of theirs in one run, each by
// the first record it carries, and the dry run says which.
func TestRedriveToOriginFromFrameworkMetadata(t *testing.T) {
	f := frameworkFake(t)
	// A Spring dead letter that RabbitMQ dead-lettered later: x-death first.
	both := springDead("both")
	both.Headers["x-death"] = dead("", "").Headers["x-death"]
	both.Death = dead("", "").Death
	f.put("mixed.dlq", both)

	dry, err := Run(context.Background(), f, "mixed.dlq", f, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"exchange:ex:orders.new":      "",
		"exchange:shop:order.created": "x-original-exchange",
		"queue:submit-order":          "MT-Fault-InputAddress",
		"queue:billing":               "NServiceBus.FailedQ",
	}
	gotRules := map[string]string{}
	for d := range dry.Destinations {
		gotRules[d] = dry.OriginRules[d]
	}
	if d := testdiff.Diff(want, gotRules); d != "" {
		t.Errorf("dry run's destinations and rules (-want +got):\n%s", d)
	}
	if dry.Destinations["exchange:ex:orders.new"] != 2 {
		t.Errorf("x-death destinations %v, want the Spring message that also has x-death there", dry.Destinations)
	}

	s, err := Run(context.Background(), f, "mixed.dlq", f, Options{})
	if err != nil || s.Moved != 5 {
		t.Fatalf("moved %d, err %v; want 5", s.Moved, err)
	}
	for q, ids := range map[string][]string{"orders": {"xdeath", "both"}, "order-events": {"spring"}, "submit-order": {"mt"}, "billing": {"nsb"}} {
		if d := testdiff.Diff(ids, f.readyIDs(q)); d != "" {
			t.Errorf("%s holds (-want +got):\n%s", q, d)
		}
	}
	// The failure headers go, and the origin recorded with them;
	// application headers and retry counters stay.
	sp := f.ready("order-events")[0].Headers
	for _, k := range []string{"x-exception-message", "x-exception-stacktrace", "x-original-exchange", "x-original-routingKey"} {
		if _, ok := sp[k]; ok {
			t.Errorf("Spring header %s kept", k)
		}
	}
	if sp["tenant"] != "acme" || sp["retry-count"] != int32(3) {
		t.Errorf("tenant %v, retry-count %#v; want acme, int32(3)", sp["tenant"], sp["retry-count"])
	}
	mt := f.ready("submit-order")[0]
	for k := range mt.Headers {
		if k == "MT-Reason" || len(k) > 9 && k[:9] == "MT-Fault-" {
			t.Errorf("MassTransit header %s kept", k)
		}
	}
	if string(mt.Body) != string(massTransitDead("mt").Body) || mt.Headers["MT-Host-MachineName"] != "web-1" {
		t.Errorf("MassTransit message changed: body %s, headers %v", mt.Body, mt.Headers)
	}
	nsb := f.ready("billing")[0].Headers
	for _, k := range []string{"NServiceBus.FailedQ", "NServiceBus.TimeOfFailure", "NServiceBus.ExceptionInfo.Message"} {
		if _, ok := nsb[k]; ok {
			t.Errorf("NServiceBus header %s kept", k)
		}
	}
	if nsb["NServiceBus.MessageId"] != "nsb" {
		t.Errorf("NServiceBus.MessageId lost: %v", nsb)
	}
}

// The broker's own last resort (an SQS DLQ's only source) comes after the
// framework's record; a message without either still asks the broker.
func TestFrameworkOriginBeforeTheOnlySource(t *testing.T) {
	f := frameworkFake(t)
	f.declare("fallback", broker.KindClassic)
	f.origin = func(m *broker.Message) (broker.Destination, error) {
		return broker.Destination{Kind: broker.ToQueue, Queue: "fallback", Via: "the DLQ's only source queue"}, nil
	}
	plain := &broker.Message{Body: []byte("x"), Properties: broker.Properties{MessageID: "plain"}}
	f.put("mixed.dlq", plain)
	s, err := Run(context.Background(), f, "mixed.dlq", f, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"queue:fallback": 2, "exchange:shop:order.created": 1, "queue:submit-order": 1, "queue:billing": 1}
	if d := testdiff.Diff(want, s.Destinations); d != "" {
		t.Errorf("destinations (-want +got):\n%s", d)
	}
	if r := s.OriginRules["queue:fallback"]; r != "the DLQ's only source queue" {
		t.Errorf("rule of queue:fallback = %q", r)
	}
}

// --to exchange:NAME without a key keeps each message's original key.
func TestExchangeWithoutKeyKeepsTheOriginalKey(t *testing.T) {
	f := frameworkFake(t)
	s, err := Run(context.Background(), f, "mixed.dlq", f, Options{DryRun: true, Dest: broker.Destination{Kind: broker.ToExchange, Exchange: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Destinations["exchange:shop:order.created"]; n != 1 {
		t.Errorf("destinations %v: want the Spring message with its x-original-routingKey, not the DLQ's name", s.Destinations)
	}
	if n := s.Destinations["exchange:shop:orders.dlq"]; n != 0 {
		t.Errorf("destinations %v: the DLQ's own name used as a key", s.Destinations)
	}
}

func TestKeepFailureHeadersAndResetRetries(t *testing.T) {
	f := frameworkFake(t)
	s, err := Run(context.Background(), f, "mixed.dlq", f, Options{KeepFailureHeaders: true, ResetRetries: true, ResetHeaders: []string{"x-attempt"}})
	if err != nil || s.Moved != 4 {
		t.Fatalf("moved %d, err %v", s.Moved, err)
	}
	sp := f.ready("order-events")[0].Headers
	if sp["x-original-exchange"] != "shop" || sp["x-exception-message"] == nil {
		t.Errorf("--keep-failure-headers dropped Spring's headers: %v", sp)
	}
	if sp["retry-count"] != int32(0) {
		t.Errorf("retry-count = %#v, want int32(0)", sp["retry-count"])
	}
	if mt := f.ready("submit-order")[0].Headers; mt["MT-Fault-RetryCount"] != int32(0) {
		t.Errorf("MT-Fault-RetryCount = %#v, want int32(0)", mt["MT-Fault-RetryCount"])
	}
	if nsb := f.ready("billing")[0].Headers; nsb["NServiceBus.Retries"] != "0" {
		t.Errorf("NServiceBus.Retries = %#v, want \"0\"", nsb["NServiceBus.Retries"])
	}

	g := frameworkFake(t)
	m := dead("app", `{}`)
	m.Headers["x-attempt"] = int64(7)
	g.put("mixed.dlq", m)
	if _, err := Run(context.Background(), g, "mixed.dlq", g, Options{ResetHeaders: []string{"x-attempt"}}); err != nil {
		t.Fatal(err)
	}
	for _, got := range g.ready("orders") {
		if got.ID == "app" && got.Headers["x-attempt"] != int64(0) {
			t.Errorf("x-attempt = %#v, want int64(0)", got.Headers["x-attempt"])
		}
	}
	if sp := g.ready("order-events")[0].Headers; sp["retry-count"] != int32(3) {
		t.Errorf("retry-count reset without --reset-retries: %#v", sp["retry-count"])
	}
}

// An envelope moves exactly as it came; --unwrap sends the event inside a
// Lambda on-failure record or an SNS notification (AWS Lambda Developer
// Guide's record; Amazon SNS Developer Guide's notification), and leaves a
// MassTransit envelope whole.
func TestEnvelopesMoveAsTheyCameUnlessUnwrapped(t *testing.T) {
	lambda := `{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z","requestContext":{"requestId":"e4b46cbf","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:my-function:$LATEST","condition":"RetriesExhausted","approximateInvokeCount":3},` +
		`"requestPayload":{"ORDER_IDS":["9e07af03"]},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"responsePayload":{"errorMessage":"Process exited before completing request"}}`
	sns := `{"Type":"Notification","MessageId":"22b80b92","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic","Message":"{\"orderId\":7}","Timestamp":"2012-05-02T00:54:06.655Z"}`
	mt := string(massTransitDead("mt").Body)
	for _, unwrap := range []bool{false, true} {
		f := newFake(t, broker.RabbitMQ)
		f.declare("env.dlq", broker.KindClassic)
		f.declare("out", broker.KindClassic)
		for id, body := range map[string]string{"lambda": lambda, "sns": sns, "mt": mt} {
			f.put("env.dlq", &broker.Message{Body: []byte(body), Properties: broker.Properties{MessageID: id}})
		}
		if _, err := Run(context.Background(), f, "env.dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "out"}, Unwrap: unwrap}); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, m := range f.ready("out") {
			got[m.ID] = string(m.Body)
		}
		want := map[string]string{"lambda": lambda, "sns": sns, "mt": mt}
		if unwrap {
			want["lambda"], want["sns"] = `{"ORDER_IDS":["9e07af03"]}`, `{"orderId":7}`
		}
		if d := testdiff.Diff(want, got); d != "" {
			t.Errorf("unwrap %v: bodies moved (-want +got):\n%s", unwrap, d)
		}
	}
}

// NServiceBus on SQS keeps every header inside the body. A redrive strips
// the failure headers there too (the consumer would otherwise see the old
// failure as its own), resets the retry counter on --reset-retries, and
// keeps every other byte of the envelope.
func TestNServiceBusOnSQSEnvelopeHeadersAreShaped(t *testing.T) {
	const payload = "eyJjYXJkIjoiNDI0MiJ9" // {"card":"4242"}
	body := `{"Headers":{"NServiceBus.MessageId":"m1","NServiceBus.EnclosedMessageTypes":"Billing.ChargeCard, Billing",` +
		`"NServiceBus.ExceptionInfo.ExceptionType":"System.TimeoutException","NServiceBus.ExceptionInfo.Message":"timed out <db> & gave up",` +
		`"NServiceBus.FailedQ":"billing@host","NServiceBus.TimeOfFailure":"2026-11-20 10:00:00:000000 Z","NServiceBus.Retries":"2",` +
		`"NServiceBus.ProcessingEndpoint":"billing"},"Body":"` + payload + `","S3BodyKey":null}`
	for _, tc := range []struct {
		name string
		opts Options
		want map[string]string
	}{
		{"default", Options{}, map[string]string{"NServiceBus.MessageId": "m1", "NServiceBus.EnclosedMessageTypes": "Billing.ChargeCard, Billing",
			"NServiceBus.Retries": "2", "NServiceBus.ProcessingEndpoint": "billing"}},
		{"reset-retries", Options{ResetRetries: true}, map[string]string{"NServiceBus.MessageId": "m1", "NServiceBus.EnclosedMessageTypes": "Billing.ChargeCard, Billing",
			"NServiceBus.Retries": "0", "NServiceBus.ProcessingEndpoint": "billing"}},
		{"keep-failure-headers", Options{KeepFailureHeaders: true}, map[string]string{"NServiceBus.MessageId": "m1", "NServiceBus.EnclosedMessageTypes": "Billing.ChargeCard, Billing",
			"NServiceBus.ExceptionInfo.ExceptionType": "System.TimeoutException", "NServiceBus.ExceptionInfo.Message": "timed out <db> & gave up",
			"NServiceBus.FailedQ": "billing@host", "NServiceBus.TimeOfFailure": "2026-11-20 10:00:00:000000 Z", "NServiceBus.Retries": "2",
			"NServiceBus.ProcessingEndpoint": "billing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, broker.RabbitMQ)
			f.declare("billing-errors", broker.KindClassic)
			f.declare("billing", broker.KindClassic)
			f.put("billing-errors", &broker.Message{ID: "nsb", Body: []byte(body)})
			s, err := Run(context.Background(), f, "billing-errors", f, tc.opts)
			if err != nil || s.Moved != 1 {
				t.Fatalf("moved %d, err %v; want 1 to billing (from NServiceBus.FailedQ in the body)", s.Moved, err)
			}
			got := f.ready("billing")[0].Body
			var env struct {
				Headers   map[string]string
				Body      string
				S3BodyKey *string
			}
			if err := json.Unmarshal(got, &env); err != nil {
				t.Fatalf("%v: %s", err, got)
			}
			if d := testdiff.Diff(tc.want, env.Headers); d != "" {
				t.Errorf("headers in the body (-want +got):\n%s", d)
			}
			if env.Body != payload || env.S3BodyKey != nil || !bytes.Contains(got, []byte(`"S3BodyKey":null`)) {
				t.Errorf("the envelope's other fields changed: %s", got)
			}
			if tc.name == "keep-failure-headers" && !bytes.Equal(got, []byte(body)) {
				t.Errorf("kept headers, but the body changed:\n%s\nwant\n%s", got, body)
			}
		})
	}
}
