package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

// mixedFrameworks writes n dead letters as each framework and AWS service
// leaves them, in turn at random: Spring AMQP (x-exception-* with a Java
// trace whose root cause is the reason, x-original-*), MassTransit (MT-Fault-*
// headers and the JSON envelope), NServiceBus (NServiceBus.ExceptionInfo.*
// with a .NET inner exception), an SNS envelope, a Lambda on-failure
// record, EventBridge target DLQ attributes, a Celery task that RabbitMQ
// dead-lettered (task protocol 2 headers, no failure text: the reason is
// x-death's), and a plain body with an error field. Reasons carry variable
// parts (ids, numbers).
func mixedFrameworks(n int, path string, size int) error {
	os.Remove(path)
	w, err := archive.NewWriter(path, archive.WriterOptions{Generator: "inspectgen", Source: archive.Source{System: broker.RabbitMQ, Queue: "bench.dlq"}})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Now().UTC()
	pad := strings.Repeat("x", size)
	payload := func(i int) string {
		head := fmt.Sprintf(`{"order_id":"ord-%d","amount":%d,`, i, rng.IntN(1000))
		return head + `"note":"` + pad[:max(size-len(head)-10, 0)] + `"}`
	}
	str := func(s string) broker.Attribute { return broker.Attribute{DataType: "String", StringValue: s} }
	for i := range n {
		ts := now.Add(-time.Duration(rng.Int64N(int64(7 * 24 * time.Hour)))).Truncate(time.Second)
		m := &broker.Message{
			ID: fmt.Sprintf("msg-%08d", i), System: broker.RabbitMQ, Queue: "bench.dlq",
			Properties: broker.Properties{ContentType: "application/json", DeliveryMode: 2, MessageID: fmt.Sprintf("msg-%08d", i), Timestamp: ts},
			Timestamp:  ts,
		}
		sku := rng.IntN(10000)
		switch rng.IntN(8) {
		case 0:
			m.Headers = map[string]any{
				"x-exception-message":    "Listener method 'public void com.shop.Orders.handle(Order)' threw exception",
				"x-exception-stacktrace": fmt.Sprintf("org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method 'public void com.shop.Orders.handle(Order)' threw exception\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.wrapToListenerExecutionFailedExceptionIfNeeded(AbstractMessageListenerContainer.java:1705)\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.doInvokeListener(AbstractMessageListenerContainer.java:1595)\nCaused by: java.lang.IllegalStateException: price missing for sku %d\n\tat com.shop.Orders.handle(Orders.java:17)\n\t... 12 more\n", sku),
				"x-original-exchange":    "shop",
				"x-original-routingKey":  "order.created",
			}
			m.Body = []byte(payload(i))
		case 1:
			m.Headers = map[string]any{
				"MT-Reason": "fault", "MT-Fault-ExceptionType": "System.ArgumentException",
				"MT-Fault-Message":      fmt.Sprintf("Order ord-%d has no lines", i),
				"MT-Fault-InputAddress": "rabbitmq://localhost/submit-order", "MT-Fault-ConsumerType": "Shop.SubmitOrderConsumer",
				"MT-Fault-Timestamp": ts.Format(time.RFC3339Nano), "MT-Fault-RetryCount": int32(3),
			}
			m.Body = []byte(fmt.Sprintf(`{"messageId":"msg-%08d","messageType":["urn:message:Shop.Contracts:SubmitOrder"],"message":%s,"headers":{},"host":{"machineName":"web-1"}}`, i, payload(i)))
		case 2:
			m.Headers = map[string]any{
				"NServiceBus.ExceptionInfo.ExceptionType": "System.InvalidOperationException",
				"NServiceBus.ExceptionInfo.Message":       "Could not handle SubmitOrder",
				"NServiceBus.ExceptionInfo.StackTrace":    fmt.Sprintf("System.InvalidOperationException: Could not handle SubmitOrder\n ---> System.TimeoutException: Billing timed out after %dms\n   at Shop.Billing.Charge()\n   --- End of inner exception stack trace ---", 5000+rng.IntN(100)),
				"NServiceBus.FailedQ":                     "billing@MACHINE01",
				"NServiceBus.TimeOfFailure":               ts.Format("2006-01-02 15:04:05") + ":000000 Z",
			}
			m.Body = []byte(payload(i))
		case 3:
			inner := strings.ReplaceAll(strings.ReplaceAll(payload(i), `\`, `\\`), `"`, `\"`)
			m.Body = []byte(fmt.Sprintf(`{"Type":"Notification","MessageId":"m-%d","TopicArn":"arn:aws:sns:us-east-1:123456789012:orders","Message":"%s","Timestamp":"%s"}`, i, inner, ts.Format(time.RFC3339)))
		case 4:
			m.Body = []byte(fmt.Sprintf(`{"version":"1.0","timestamp":"%s","requestContext":{"requestId":"r-%d","functionArn":"arn:aws:lambda:us-east-1:123456789012:function:ship","condition":"RetriesExhausted","approximateInvokeCount":3},"requestPayload":%s,"responseContext":{"statusCode":200,"functionError":"Unhandled"},"responsePayload":{"errorMessage":"carrier API returned %d","errorType":"CarrierError"}}`, ts.Format(time.RFC3339), i, payload(i), 500+rng.IntN(4)))
		case 5:
			m.Attributes = map[string]broker.Attribute{
				"RULE_ARN": str("arn:aws:events:us-east-1:123456789012:rule/orders"), "TARGET_ARN": str("arn:aws:lambda:us-east-1:123456789012:function:ship"),
				"ERROR_CODE": str("SDK_CLIENT_ERROR"), "ERROR_MESSAGE": str(fmt.Sprintf("Unable to invoke Lambda function after %d attempts", 180+rng.IntN(10))),
			}
			m.Body = []byte(payload(i))
		case 6:
			// As Celery 5.2 publishes a task (celery/app/amqp.py as_task_v2).
			id := fmt.Sprintf("%08x-1a09-42a7-8d1b-%012x", i, rng.Int64N(1<<48))
			m.Headers = map[string]any{
				"lang": "py", "task": "shop.charge_card", "id": id, "root_id": id, "parent_id": nil, "group": nil,
				"retries": int64(rng.IntN(4)), "argsrepr": fmt.Sprintf("(%d, '19.99')", i), "kwargsrepr": "{'currency': 'EUR'}",
				"origin": "gen1@web-1", "eta": nil, "expires": nil,
			}
			m.Properties.CorrelationID, m.Properties.ContentEncoding = id, "utf-8"
			m.Death = &broker.Death{Reason: "rejected", Queue: "shop.work", Count: 1, First: ts, Last: ts}
			m.Body = []byte(fmt.Sprintf(`[[%d, "19.99"], {"currency": "EUR", "note": "%s"}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]`, i, pad[:max(size-130, 0)]))
		default:
			p := payload(i)
			m.Body = []byte(p[:len(p)-1] + fmt.Sprintf(`,"error":"customer cus_%d not found"}`, rng.IntN(100000)))
		}
		if err := w.Write(m); err != nil {
			return err
		}
	}
	return w.Close()
}
