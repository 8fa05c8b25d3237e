package inspect

import (
	"context"
	"encoding/base64"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// springTrace is a trace as Spring AMQP's RepublishMessageRecoverer writes
// it into x-exception-stacktrace: the listener's wrapper first, the cause
// last (spring-amqp RepublishMessageRecovererIntegrationTests).
const springTrace = "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.example.Orders.handle(Order)' threw exception\n" +
	"\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1705)\n" +
	"Caused by: org.springframework.messaging.MessageHandlingException: error occurred in message handler\n" +
	"\tat org.springframework.messaging.handler.invocation.InvocableHandlerMethod.invoke(InvocableHandlerMethod.java:131)\n" +
	"Caused by: java.lang.IllegalStateException: price missing for sku 42\n" +
	"\tat com.example.Orders.handle(Orders.java:17)\n" +
	"\t... 12 more\n"

// dotnetTrace is Exception.ToString() of an exception with an inner one, as
// NServiceBus stores it in NServiceBus.ExceptionInfo.StackTrace
// (NServiceBus ExceptionHeaderHelper: StackTrace = exception.ToString()).
const dotnetTrace = "System.InvalidOperationException: Could not handle SubmitOrder\n" +
	" ---> System.TimeoutException: The operation has timed out.\n" +
	"   at Shop.Billing.Charge() in Billing.cs:line 12\n" +
	"   --- End of inner exception stack trace ---\n" +
	"   at Shop.SubmitOrderHandler.Handle(SubmitOrder message) in Handler.cs:line 30"

func str(s string) broker.Attribute { return broker.Attribute{DataType: "String", StringValue: s} }

func TestFailureOf(t *testing.T) {
	nsbHeaders := map[string]any{
		// ServiceControl's acceptance tests (When_a_message_has_failed...)
		// and NServiceBus's ExceptionHeaderHelperTests.
		"NServiceBus.ExceptionInfo.ExceptionType":      "System.InvalidOperationException",
		"NServiceBus.ExceptionInfo.InnerExceptionType": "System.TimeoutException",
		"NServiceBus.ExceptionInfo.Message":            "Could not handle SubmitOrder",
		"NServiceBus.ExceptionInfo.Source":             "Shop",
		"NServiceBus.ExceptionInfo.StackTrace":         dotnetTrace,
		"NServiceBus.FailedQ":                          "Shop.Billing@MACHINE01",
		"NServiceBus.TimeOfFailure":                    "2014-11-11 02:26:58:000462 Z",
		"NServiceBus.ProcessingEndpoint":               "Shop.Billing",
		"NServiceBus.EnclosedMessageTypes":             "Shop.Messages.SubmitOrder, Shop.Messages, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null",
		"NServiceBus.Retries":                          "2",
	}
	nsbWant := &Failure{Framework: "nservicebus", ExceptionType: "System.TimeoutException", Message: "The operation has timed out.",
		Stack: dotnetTrace, Origin: &FailureOrigin{Queue: "Shop.Billing", From: "NServiceBus.FailedQ"}, Attempts: 2,
		FailedAt: time.Date(2014, 11, 11, 2, 26, 58, 462000, time.UTC), Consumer: "Shop.Billing", MessageType: "Shop.Messages.SubmitOrder"}
	nsbSQSWant := *nsbWant
	nsbSQSWant.Envelope = "nservicebus"

	// NServiceBus.AmazonSQS's TransportMessage: {Headers, Body, S3BodyKey}.
	nsbSQSBody := `{"Headers":{` +
		`"NServiceBus.ExceptionInfo.ExceptionType":"System.InvalidOperationException",` +
		`"NServiceBus.ExceptionInfo.InnerExceptionType":"System.TimeoutException",` +
		`"NServiceBus.ExceptionInfo.Message":"Could not handle SubmitOrder",` +
		`"NServiceBus.ExceptionInfo.StackTrace":"System.InvalidOperationException: Could not handle SubmitOrder\n ---> System.TimeoutException: The operation has timed out.\n   at Shop.Billing.Charge() in Billing.cs:line 12\n   --- End of inner exception stack trace ---\n   at Shop.SubmitOrderHandler.Handle(SubmitOrder message) in Handler.cs:line 30",` +
		`"NServiceBus.FailedQ":"Shop.Billing@MACHINE01","NServiceBus.TimeOfFailure":"2014-11-11 02:26:58:000462 Z",` +
		`"NServiceBus.ProcessingEndpoint":"Shop.Billing","NServiceBus.Retries":"2",` +
		`"NServiceBus.EnclosedMessageTypes":"Shop.Messages.SubmitOrder, Shop.Messages, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null"},` +
		`"Body":"` + base64.StdEncoding.EncodeToString([]byte(`{"OrderId":7}`)) + `","S3BodyKey":null}`

	// MassTransit's envelope (application/vnd.masstransit+json) as its
	// documentation shows it, in an _error queue with the fault headers of
	// MassTransit's MessageHeaders.
	mtBody := `{"messageId":"50460000-adda-54e1-1fa3-08dc67547d10","conversationId":"50460000-adda-54e1-c760-08dc67547d15",` +
		`"sourceAddress":"rabbitmq://localhost/producer_bus?temporary=true","destinationAddress":"rabbitmq://localhost/submit-order",` +
		`"messageType":["urn:message:Shop.Contracts:SubmitOrder"],"message":{"orderId":"7569172a"},` +
		`"sentTime":"2024-04-28T07:26:15.2890275Z","headers":{},"host":{"machineName":"web-1","processName":"Shop","massTransitVersion":"8.2.1.0"}}`
	mtHeaders := map[string]any{
		"MT-Reason":                "fault",
		"MT-Fault-ExceptionType":   "System.ArgumentException",
		"MT-Fault-Message":         "Order 7569172a has no lines",
		"MT-Fault-StackTrace":      "   at Shop.SubmitOrderConsumer.Consume(ConsumeContext`1 context) in Consumer.cs:line 21",
		"MT-Fault-InputAddress":    "rabbitmq://localhost/shop/submit-order",
		"MT-Fault-ConsumerType":    "Shop.SubmitOrderConsumer",
		"MT-Fault-Timestamp":       "2024-04-28T07:26:16.1234567Z",
		"MT-Fault-RetryCount":      int32(3),
		"MT-Fault-RedeliveryCount": int32(1),
		"MT-Host-MachineName":      "web-1",
	}
	mtWant := &Failure{Framework: "masstransit", ExceptionType: "System.ArgumentException", Message: "Order 7569172a has no lines",
		Stack:  "   at Shop.SubmitOrderConsumer.Consume(ConsumeContext`1 context) in Consumer.cs:line 21",
		Origin: &FailureOrigin{Queue: "submit-order", From: "MT-Fault-InputAddress"}, Attempts: 4,
		FailedAt: time.Date(2024, 4, 28, 7, 26, 16, 123456700, time.UTC), Consumer: "Shop.SubmitOrderConsumer",
		MessageType: "Shop.Contracts:SubmitOrder", Envelope: "masstransit"}
	// On SQS, MassTransit keeps some headers in the envelope.
	mtSQSBody := `{"messageId":"1","messageType":["urn:message:Shop.Contracts:SubmitOrder"],"message":{"orderId":"7569172a"},` +
		`"headers":{"MT-Fault-ExceptionType":"System.ArgumentException","MT-Fault-Message":"Order 7569172a has no lines",` +
		`"MT-Fault-InputAddress":"amazonsqs://us-east-1/shop/submit-order","MT-Fault-RetryCount":3}}`

	// AWS Lambda Developer Guide, "Capturing records of Lambda asynchronous
	// invocations": an on-failure destination's record.
	lambdaRecord := `{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z",` +
		`"requestContext":{"requestId":"e4b46cbf-b738-xmpl-8880-a18cdf61200e","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:my-function:$LATEST","condition":"RetriesExhausted","approximateInvokeCount":3},` +
		`"requestPayload":{"ORDER_IDS":["9e07af03-ce31-4ff3-xmpl-36dce652cb4f"]},` +
		`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},` +
		`"responsePayload":{"errorMessage":"RequestId: e4b46cbf-b738-xmpl-8880-a18cdf61200e Process exited before completing request","errorType":"Runtime.ExitError","stackTrace":["at a (index.js:1)","at b (index.js:2)"]}}`

	// Amazon SNS Developer Guide, "Amazon SNS message and JSON formats".
	snsBody := `{"Type":"Notification","MessageId":"22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic",` +
		`"Subject":"My First Message","Message":"{\"orderId\":7}","Timestamp":"2012-05-02T00:54:06.655Z","SignatureVersion":"1",` +
		`"MessageAttributes":{"tenant":{"Type":"String","Value":"acme"}}}`

	cases := []struct {
		name string
		m    broker.Message
		want *Failure
	}{
		{"spring amqp republish", broker.Message{Headers: map[string]any{
			"x-exception-stacktrace": springTrace,
			"x-exception-message":    "Listener method 'public void com.example.Orders.handle(Order)' threw exception",
			"x-original-exchange":    "shop",
			"x-original-routingKey":  "order.created",
			"retry-count":            int32(3),
			"__TypeId__":             "com.example.Order",
		}}, &Failure{Framework: "spring", ExceptionType: "java.lang.IllegalStateException", Message: "price missing for sku 42",
			Stack: springTrace, Origin: &FailureOrigin{Exchange: "shop", RoutingKey: "order.created", From: "x-original-exchange"},
			Attempts: 3, MessageType: "com.example.Order"}},
		{"spring default exchange is the queue", broker.Message{Headers: map[string]any{
			"x-exception-message": "boom", "x-original-exchange": "", "x-original-routingKey": "orders",
		}}, &Failure{Framework: "spring", Message: "boom", Origin: &FailureOrigin{RoutingKey: "orders", Queue: "orders", From: "x-original-routingKey"}}},
		{"spring headers as sqs attributes", broker.Message{Attributes: map[string]broker.Attribute{
			"x-exception-message": str("card declined"), "x-exception-stacktrace": str("com.shop.PaymentException: card declined\n\tat com.shop.Pay.run(Pay.java:9)"),
		}}, &Failure{Framework: "spring", ExceptionType: "com.shop.PaymentException", Message: "card declined",
			Stack: "com.shop.PaymentException: card declined\n\tat com.shop.Pay.run(Pay.java:9)"}},
		{"masstransit error queue", broker.Message{Headers: mtHeaders, Body: []byte(mtBody)}, mtWant},
		{"masstransit on sqs: headers in the envelope", broker.Message{Body: []byte(mtSQSBody)}, &Failure{Framework: "masstransit",
			ExceptionType: "System.ArgumentException", Message: "Order 7569172a has no lines",
			Origin: &FailureOrigin{Queue: "submit-order", From: "MT-Fault-InputAddress"}, Attempts: 3,
			MessageType: "Shop.Contracts:SubmitOrder", Envelope: "masstransit"}},
		{"masstransit skipped", broker.Message{Headers: map[string]any{"MT-Reason": "skip"}, Body: []byte(mtBody)},
			&Failure{Framework: "masstransit", Message: "skip", MessageType: "Shop.Contracts:SubmitOrder", Envelope: "masstransit"}},
		{"nservicebus on rabbitmq", broker.Message{Headers: nsbHeaders, Body: []byte(`{"OrderId":7}`)}, nsbWant},
		{"nservicebus on sqs: headers in the body", broker.Message{Body: []byte(nsbSQSBody)}, &nsbSQSWant},
		{"spring cloud aws", broker.Message{Attributes: map[string]broker.Attribute{"JavaType": str("com.shop.OrderPlaced")}},
			&Failure{Framework: "spring-cloud-aws", MessageType: "com.shop.OrderPlaced"}},
		{"lambda async dlq", broker.Message{Attributes: map[string]broker.Attribute{
			"RequestID": str("e4b46cbf"), "ErrorCode": {DataType: "Number", StringValue: "200"}, "ErrorMessage": str("Task timed out after 3.00 seconds"),
		}}, &Failure{Framework: "lambda", Message: "Task timed out after 3.00 seconds"}},
		{"lambda on-failure record", broker.Message{Body: []byte(lambdaRecord)}, &Failure{Framework: "lambda",
			ExceptionType: "Runtime.ExitError", Message: "RequestId: e4b46cbf-b738-xmpl-8880-a18cdf61200e Process exited before completing request",
			Stack: "at a (index.js:1)\nat b (index.js:2)", Attempts: 3, FailedAt: time.Date(2019, 11, 14, 18, 16, 5, 568000000, time.UTC),
			Consumer: "arn:aws:lambda:us-east-2:123456789012:function:my-function:$LATEST", Envelope: "lambda"}},
		{"eventbridge target dlq", broker.Message{Attributes: map[string]broker.Attribute{
			"RULE_ARN": str("arn:aws:events:us-east-1:123456789012:rule/orders"), "TARGET_ARN": str("arn:aws:lambda:us-east-1:123456789012:function:ship"),
			"ERROR_CODE": str("SDK_CLIENT_ERROR"), "ERROR_MESSAGE": str("Unable to invoke Lambda function"),
			"EXHAUSTED_RETRY_CONDITION": str("MaximumRetryAttempts"), "RETRY_ATTEMPTS": {DataType: "Number", StringValue: "185"},
		}}, &Failure{Framework: "eventbridge", ExceptionType: "SDK_CLIENT_ERROR", Message: "Unable to invoke Lambda function", Attempts: 185,
			Consumer: "arn:aws:lambda:us-east-1:123456789012:function:ship"}},
		{"sns envelope", broker.Message{Body: []byte(snsBody)}, &Failure{Framework: "sns", Consumer: "arn:aws:sns:us-west-2:123456789012:MyTopic", Envelope: "sns"}},
		{"plain message", broker.Message{Headers: map[string]any{"x-death": []any{}, "tenant": "t"}, Body: []byte(`{"error":"e","message":"m"}`)}, nil},
		{"raw sns delivery is no envelope", broker.Message{Body: []byte(`{"orderId":7}`)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := testdiff.Diff(c.want, FailureOf(&c.m)); d != "" {
				t.Errorf("FailureOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestReasonFromFailure(t *testing.T) {
	cases := []struct {
		name string
		m    broker.Message
		want string
	}{
		{"java root cause", broker.Message{Headers: map[string]any{"x-exception-stacktrace": springTrace, "x-exception-message": "Listener method threw exception"}},
			"java.lang.IllegalStateException: price missing for sku 42"},
		{".NET inner exception", broker.Message{Headers: map[string]any{"NServiceBus.ExceptionInfo.ExceptionType": "System.InvalidOperationException",
			"NServiceBus.ExceptionInfo.Message": "Could not handle", "NServiceBus.ExceptionInfo.StackTrace": dotnetTrace}},
			"System.TimeoutException: The operation has timed out."},
		{"ERROR_MESSAGE beats ERROR_CODE", broker.Message{Attributes: map[string]broker.Attribute{"ERROR_CODE": str("SDK_CLIENT_ERROR"), "ERROR_MESSAGE": str("Unable to invoke")}},
			"SDK_CLIENT_ERROR: Unable to invoke"},
		{"ErrorMessage beats ErrorCode", broker.Message{Attributes: map[string]broker.Attribute{"ErrorCode": str("200"), "ErrorMessage": str("Task timed out")}},
			"Task timed out"},
		{"error attributes of no known service: message first", broker.Message{Attributes: map[string]broker.Attribute{"app_error_code": str("E42"), "app_error_message": str("quota")}},
			"quota"},
		{"x-exception-message as an sqs attribute", broker.Message{Attributes: map[string]broker.Attribute{"x-exception-message": str("card declined")}},
			"card declined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reason(&c.m); got != c.want {
				t.Errorf("Reason = %q, want %q", got, c.want)
			}
		})
	}
}

// mixedDeadLetters is one dead letter of each framework and service, as
// TestFailureOf decodes them.
func mixedDeadLetters() []*broker.Message {
	return []*broker.Message{
		{ID: "spring", Headers: map[string]any{"x-exception-stacktrace": springTrace, "x-exception-message": "Listener method threw exception",
			"x-original-exchange": "shop", "x-original-routingKey": "order.created"}, Body: []byte(`{"sku":42}`)},
		{ID: "mt", Headers: map[string]any{"MT-Fault-ExceptionType": "System.ArgumentException", "MT-Fault-Message": "no lines",
			"MT-Fault-InputAddress": "rabbitmq://localhost/submit-order", "MT-Fault-ConsumerType": "Shop.SubmitOrderConsumer"},
			Body: []byte(`{"messageId":"1","messageType":["urn:message:Shop:SubmitOrder"],"message":{"orderId":"o-1","tenant":"acme"},"headers":{}}`)},
		{ID: "nsb", Headers: map[string]any{"NServiceBus.ExceptionInfo.ExceptionType": "System.TimeoutException", "NServiceBus.ExceptionInfo.Message": "timed out",
			"NServiceBus.FailedQ": "billing@m1", "NServiceBus.ProcessingEndpoint": "billing"}, Body: []byte(`{"tenant":"acme"}`)},
		{ID: "sns", Body: []byte(`{"Type":"Notification","MessageId":"m","TopicArn":"arn:aws:sns:us-east-1:1:orders","Message":"{\"tenant\":\"globex\"}","Timestamp":"2012-05-02T00:54:06.655Z"}`)},
		{ID: "plain", Body: []byte(`{"error":"bad","tenant":"acme"}`)},
	}
}

func TestStatsGroupByFailure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct{ spec, want string }{
		{"framework", "(none)=1 masstransit=1 nservicebus=1 sns=1 spring=1"},
		{"failure.type", "(none)=2 System.ArgumentException=1 System.TimeoutException=1 java.lang.IllegalStateException=1"},
		{"failure.consumer", "(none)=2 Shop.SubmitOrderConsumer=1 arn:aws:sns:us-east-1:1:orders=1 billing=1"},
		{"exchange,routing-key", "(none)/(none)=4 shop/order.created=1"},
		{"source", "(unknown)=2 billing=1 exchange:shop:order.created=1 submit-order=1"},
		{"body:.tenant", "(none)=1 acme=3 globex=1"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			res, _, err := GroupMessages(context.Background(), c.spec, mixedDeadLetters(), now)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range res.Groups {
				got = append(got, strings.Join(g.Values, "/")+"="+strconv.FormatInt(g.Count, 10))
			}
			sort.Strings(got)
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("groups by %s:\n got %s\nwant %s", c.spec, s, c.want)
			}
		})
	}
}

func TestDocumentFailureAndEnvelope(t *testing.T) {
	ms := mixedDeadLetters()
	q, err := Compile(`[.failure.exception_type, .failure.origin.queue, .body.orderId, .envelope.messageId]`)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := q.First(context.Background(), Document(ms[1]))
	if err != nil {
		t.Fatal(err)
	}
	if got := ValueText(v); got != `["System.ArgumentException","submit-order","o-1","1"]` {
		t.Errorf("MassTransit document = %s", got)
	}
	v, _, _ = q.First(context.Background(), Document(ms[4]))
	if got := ValueText(v); got != `[null,null,null,null]` {
		t.Errorf("plain document = %s", got)
	}
	sns := Document(ms[3])
	if b, _ := sns["body"].(map[string]any); b["tenant"] != "globex" {
		t.Errorf("SNS body = %v, want the message inside the envelope", sns["body"])
	}
	// A changed payload cannot be put back into its envelope: refused, not
	// sent without the envelope.
	before := Canonical(Document(ms[1]))
	after := Document(ms[1])
	after["body"] = map[string]any{"orderId": "o-2"}
	if _, err := FromDocument(ms[1], before, after); err == nil || !strings.Contains(err.Error(), "masstransit envelope") {
		t.Errorf("FromDocument with a changed enveloped body: err = %v, want a refusal naming the envelope", err)
	}
	after = Document(ms[1])
	after["headers"] = map[string]any{"x": "y"}
	nm, err := FromDocument(ms[1], before, after)
	if err != nil || string(nm.Body) != string(ms[1].Body) {
		t.Errorf("FromDocument with changed headers: err %v, body %s, want the envelope as it was", err, nm.Body)
	}
}

func TestFoldStack(t *testing.T) {
	got := strings.Join(FoldStack(strings.Split(strings.TrimRight(springTrace, "\n"), "\n"), 1), "\n")
	want := "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.example.Orders.handle(Order)' threw exception\n" +
		"\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1705)\n" +
		"Caused by: org.springframework.messaging.MessageHandlingException: error occurred in message handler\n" +
		"\tat org.springframework.messaging.handler.invocation.InvocableHandlerMethod.invoke(InvocableHandlerMethod.java:131)\n" +
		"Caused by: java.lang.IllegalStateException: price missing for sku 42\n" +
		"\tat com.example.Orders.handle(Orders.java:17)\n" +
		"… 1 lines"
	if d := testdiff.Text(want, got); d != "" {
		t.Errorf("FoldStack:\n%s", d)
	}
}

// Reading the reason runs on every message of a stats run over millions:
// the decoders allocate only the values they return, never for the
// headers and body fields they merely look at.
func TestReasonAllocations(t *testing.T) {
	want := map[string]float64{
		"spring": 2, // the reason "Type: message", the origin
		"mt":     3, // the reason, the origin, the message type from the envelope
		"nsb":    2, // the reason, the origin
		"sns":    1, // the topic
		"plain":  1, // the reason from the body
	}
	for _, m := range mixedDeadLetters() {
		if n := testing.AllocsPerRun(100, func() { Reason(m) }); n != want[m.ID] {
			t.Errorf("%s: Reason allocates %v times, want %v", m.ID, n, want[m.ID])
		}
	}
}

// BenchmarkReasonFrameworks reads the reason of one dead letter of each
// framework in turn.
func BenchmarkReasonFrameworks(b *testing.B) {
	ms := mixedDeadLetters()
	i := 0
	for b.Loop() {
		_ = Reason(ms[i%len(ms)])
		i++
	}
}
