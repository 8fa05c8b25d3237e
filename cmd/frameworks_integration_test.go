package cmd

// Dead letters as Spring, MassTransit and NServiceBus publish them (their
// exact wire format: header names and AMQP types, envelopes) go home in one
// redrive to origin, each by the record its framework left, and arrive
// without their failure headers.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// springRepublished is a message as Spring AMQP's RepublishMessageRecoverer
// republishes it to the DLQ: the original headers plus
// x-exception-stacktrace, x-exception-message, x-original-exchange and
// x-original-routingKey (LongString values), persistent, with the original
// properties.
func springRepublished(exchange, key string) amqp.Publishing {
	return amqp.Publishing{MessageId: "spring-1", ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Body: []byte(`{"sku":42}`),
		Headers: amqp.Table{
			"__TypeId__":             "com.example.Order",
			"x-exception-stacktrace": "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.example.Orders.handle(Order)' threw exception\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1705)\nCaused by: java.lang.IllegalStateException: price missing for sku 42\n\tat com.example.Orders.handle(Orders.java:17)\n",
			"x-exception-message":    "Listener method 'public void com.example.Orders.handle(Order)' threw exception",
			"x-original-exchange":    exchange,
			"x-original-routingKey":  key,
			"retry-count":            int32(3),
		}}
}

// massTransitFaulted is a message as MassTransit's RabbitMQ transport moves
// it to an _error queue: the JSON envelope as the body
// (application/vnd.masstransit+json) and the MT-Fault-* and MT-Host-*
// headers of MessageHeaders.
func massTransitFaulted(inputAddress string) amqp.Publishing {
	return amqp.Publishing{MessageId: "50460000-adda-54e1-1fa3-08dc67547d10", ContentType: "application/vnd.masstransit+json", DeliveryMode: amqp.Persistent,
		Body: []byte(`{"messageId":"50460000-adda-54e1-1fa3-08dc67547d10","conversationId":"50460000-adda-54e1-c760-08dc67547d15",` +
			`"sourceAddress":"rabbitmq://localhost/producer_bus?temporary=true","destinationAddress":"` + inputAddress + `",` +
			`"messageType":["urn:message:Shop.Contracts:SubmitOrder"],"message":{"orderId":"7569172a"},` +
			`"sentTime":"2024-04-28T07:26:15.2890275Z","headers":{},"host":{"machineName":"web-1","massTransitVersion":"8.2.1.0"}}`),
		Headers: amqp.Table{
			"MT-Reason":                  "fault",
			"MT-Fault-ExceptionType":     "System.ArgumentException",
			"MT-Fault-Message":           "Order 7569172a has no lines",
			"MT-Fault-StackTrace":        "   at Shop.SubmitOrderConsumer.Consume(ConsumeContext`1 context) in Consumer.cs:line 21",
			"MT-Fault-InputAddress":      inputAddress,
			"MT-Fault-ConsumerType":      "Shop.SubmitOrderConsumer",
			"MT-Fault-Timestamp":         "2024-04-28T07:26:16.1234567Z",
			"MT-Fault-RetryCount":        int32(3),
			"MT-Host-MachineName":        "web-1",
			"MT-Host-MassTransitVersion": "8.2.1.0",
		}}
}

// nserviceBusFailedHeaders are the headers of a message as NServiceBus's
// RabbitMQ transport moves it to the error queue: every header a string (NServiceBus headers are a
// string dictionary), with FaultsHeaderKeys.FailedQ and the
// NServiceBus.ExceptionInfo.* of ExceptionHeaderHelper.
func nserviceBusFailedHeaders(failedQ string) map[string]string {
	return map[string]string{
		"NServiceBus.MessageId":                        "nsb-1",
		"NServiceBus.EnclosedMessageTypes":             "Shop.Messages.SubmitOrder, Shop.Messages, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null",
		"NServiceBus.ProcessingEndpoint":               failedQ,
		"NServiceBus.ExceptionInfo.ExceptionType":      "System.InvalidOperationException",
		"NServiceBus.ExceptionInfo.InnerExceptionType": "System.TimeoutException",
		"NServiceBus.ExceptionInfo.Message":            "Could not handle SubmitOrder",
		"NServiceBus.ExceptionInfo.Source":             "Shop",
		"NServiceBus.ExceptionInfo.StackTrace":         "System.InvalidOperationException: Could not handle SubmitOrder\n ---> System.TimeoutException: The operation has timed out.\n   at Shop.Billing.Charge()\n   --- End of inner exception stack trace ---",
		"NServiceBus.FailedQ":                          failedQ + "@MACHINE01",
		"NServiceBus.TimeOfFailure":                    "2014-11-11 02:26:58:000462 Z",
	}
}

func TestFrameworkOriginIntegrationRabbit(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "fw")
	shop := r.exchange(base + ".shop")
	orders := r.queue(base+".orders", nil)
	r.bind(orders, "order.created", shop)
	submit := r.queue(base+".submit-order", nil)
	billing := r.queue(base+".billing", nil)
	dlq := r.queue(base+".dlq", nil)

	nsb := amqp.Table{}
	for k, v := range nserviceBusFailedHeaders(billing) {
		nsb[k] = v
	}
	r.publish("", dlq,
		springRepublished(shop, "order.created"),
		massTransitFaulted("rabbitmq://localhost/"+submit),
		amqp.Publishing{MessageId: "nsb-1", ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: []byte(`{"OrderId":7}`), Headers: nsb})
	r.waitDepth(dlq, 3)

	stdout, stderr, code := runDLQ(t, append(r.args, "stats", dlq, "--group-by", "framework,failure.type", "-o", "csv")...)
	for _, want := range []string{"spring,java.lang.IllegalStateException,1,", "masstransit,System.ArgumentException,1,", "nservicebus,System.TimeoutException,1,"} {
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("stats --group-by framework,failure.type lacks %q: exit %d\n%s%s", want, code, stdout, stderr)
		}
	}
	stdout, stderr, code = runDLQ(t, append(r.args, "redrive", dlq, "--dry-run")...)
	for _, want := range []string{
		"exchange:" + shop + ":order.created  (by x-original-exchange)",
		"queue:" + submit + "  (by MT-Fault-InputAddress)",
		"queue:" + billing + "  (by NServiceBus.FailedQ)",
	} {
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("redrive --dry-run lacks %q: exit %d\n%s%s", want, code, stdout, stderr)
		}
	}
	stdout, stderr, code = runDLQ(t, append(r.args, "redrive", dlq, "--yes", "--no-journal", "--reset-retries")...)
	if code != ExitOK {
		t.Fatalf("redrive: exit %d: %s %s", code, stdout, stderr)
	}
	r.waitDepth(dlq, 0)
	for q, failure := range map[string][]string{
		orders:  {"x-exception-message", "x-exception-stacktrace", "x-original-exchange", "x-original-routingKey"},
		submit:  {"MT-Reason", "MT-Fault-ExceptionType", "MT-Fault-InputAddress", "MT-Fault-RetryCount"},
		billing: {"NServiceBus.FailedQ", "NServiceBus.TimeOfFailure", "NServiceBus.ExceptionInfo.Message"},
	} {
		got := r.drain(q)
		if len(got) != 1 {
			t.Errorf("%s holds %d messages, want its one", q, len(got))
			continue
		}
		for _, k := range failure {
			if _, ok := got[0].Headers[k]; ok {
				t.Errorf("%s: failure header %s kept", q, k)
			}
		}
		switch q {
		case orders:
			if got[0].Headers["retry-count"] != int32(0) || got[0].Headers["__TypeId__"] != "com.example.Order" {
				t.Errorf("Spring message: retry-count %#v (want int32(0)), __TypeId__ %#v", got[0].Headers["retry-count"], got[0].Headers["__TypeId__"])
			}
		case submit:
			if string(got[0].Body) != string(massTransitFaulted("rabbitmq://localhost/"+submit).Body) {
				t.Errorf("MassTransit envelope changed: %s", got[0].Body)
			}
			if got[0].Headers["MT-Host-MachineName"] != "web-1" || got[0].ContentType != "application/vnd.masstransit+json" {
				t.Errorf("MassTransit message lost its host header or content type: %v %s", got[0].Headers, got[0].ContentType)
			}
		case billing:
			if got[0].Headers["NServiceBus.MessageId"] != "nsb-1" {
				t.Errorf("NServiceBus.MessageId lost: %v", got[0].Headers)
			}
		}
	}
}

// On SQS, MassTransit's fault headers are message attributes and
// NServiceBus's headers sit inside the body ({Headers, Body, S3BodyKey});
// an SNS envelope goes home (the DLQ's only source) exactly as it came.
func TestFrameworkOriginIntegrationSQS(t *testing.T) {
	env := brokertest.SQS(t)
	for name, endpoint := range map[string]string{"fauxqs": env.Endpoint, "local-aws-sqs": env.MoveEndpoint} {
		t.Run(name, func(t *testing.T) {
			s := newRISQS(t, endpoint)
			base := brokertest.Name(t, "fw")
			submitName, billingName := base+"-submit-order", base+"-billing"
			submit, billing := s.queue(submitName, nil), s.queue(billingName, nil)
			errQ := s.queue(base+"-error", nil)

			mt := massTransitFaulted("amazonsqs://us-east-1/shop/" + submitName)
			attrs := map[string]sqstypes.MessageAttributeValue{}
			for _, k := range []string{"MT-Reason", "MT-Fault-ExceptionType", "MT-Fault-Message", "MT-Fault-InputAddress", "MT-Fault-ConsumerType", "MT-Fault-Timestamp"} {
				attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint(mt.Headers[k]))}
			}
			attrs["MT-Fault-RetryCount"] = sqstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("3")}
			headers, _ := json.Marshal(nserviceBusFailedHeaders(billingName))
			nsbBody := `{"Headers":` + string(headers) + `,"Body":"` + base64.StdEncoding.EncodeToString([]byte(`{"OrderId":7}`)) + `","S3BodyKey":null}`
			s.send(errQ,
				sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(string(mt.Body)), MessageAttributes: attrs},
				sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(nsbBody)})

			stdout, stderr, code := runDLQ(t, append(s.args, "redrive", errQ, "--dry-run")...)
			for _, want := range []string{"queue:" + submitName + "  (by MT-Fault-InputAddress)", "queue:" + billingName + "  (by NServiceBus.FailedQ)"} {
				if code != ExitOK || !strings.Contains(stdout, want) {
					t.Errorf("redrive --dry-run lacks %q: exit %d\n%s%s", want, code, stdout, stderr)
				}
			}
			stdout, stderr, code = runDLQ(t, append(s.args, "redrive", errQ, "--yes", "--no-journal")...)
			if code != ExitOK {
				t.Fatalf("redrive: exit %d: %s %s", code, stdout, stderr)
			}
			if got := s.drain(submit); len(got) != 1 || aws.ToString(got[0].Body) != string(mt.Body) {
				t.Errorf("%s: %d messages, want the MassTransit envelope as it came", submitName, len(got))
			} else {
				for k := range got[0].MessageAttributes {
					if strings.HasPrefix(k, "MT-Fault-") || k == "MT-Reason" {
						t.Errorf("MassTransit attribute %s kept", k)
					}
				}
			}
			// NServiceBus on SQS keeps its headers in the body: the failure
			// headers there go, the rest of the envelope stays.
			if got := s.drain(billing); len(got) != 1 {
				t.Errorf("%s: %d messages, want the NServiceBus message", billingName, len(got))
			} else {
				var env struct {
					Headers   map[string]string
					Body      string
					S3BodyKey *string
				}
				if err := json.Unmarshal([]byte(aws.ToString(got[0].Body)), &env); err != nil {
					t.Fatalf("%v: %s", err, aws.ToString(got[0].Body))
				}
				want := map[string]string{}
				for k, v := range nserviceBusFailedHeaders(billingName) {
					if !broker.IsFailureHeader(k) {
						want[k] = fmt.Sprint(v)
					}
				}
				if d := testdiff.Diff(want, env.Headers); d != "" {
					t.Errorf("%s: the envelope's headers (-want +got):\n%s", billingName, d)
				}
				if env.Body != base64.StdEncoding.EncodeToString([]byte(`{"OrderId":7}`)) || env.S3BodyKey != nil {
					t.Errorf("%s: the envelope's body changed: %s", billingName, aws.ToString(got[0].Body))
				}
			}

			// SNS → SQS: the envelope goes home with the message.
			dlq := s.queue(base+"-sns-dlq", nil)
			src := s.queue(base+"-sns-src", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))})
			sns := `{"Type":"Notification","MessageId":"22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324","TopicArn":"arn:aws:sns:us-east-1:123456789012:orders",` +
				`"Message":"{\"orderId\":7}","Timestamp":"2012-05-02T00:54:06.655Z","SignatureVersion":"1","Signature":"EXAMPLE","SigningCertURL":"https://sns.us-east-1.amazonaws.com/x.pem","UnsubscribeURL":"https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe"}`
			s.send(dlq, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(sns)})
			stdout, stderr, code = runDLQ(t, append(s.args, "peek", dlq, "-o", "json")...)
			if code != ExitOK || !strings.Contains(stdout, `"orderId": 7`) || !strings.Contains(stdout, `"envelope": {`) {
				t.Errorf("peek of an SNS envelope, want its message as the body: exit %d\n%s%s", code, stdout, stderr)
			}
			stdout, stderr, code = runDLQ(t, append(s.args, "redrive", dlq, "--yes", "--no-journal")...)
			if code != ExitOK {
				t.Fatalf("redrive: exit %d: %s %s", code, stdout, stderr)
			}
			if got := s.drain(src); len(got) != 1 || aws.ToString(got[0].Body) != sns {
				t.Errorf("the SNS envelope did not go home as it came: %d messages", len(got))
			}
		})
	}
}
