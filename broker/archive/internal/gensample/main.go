// Command gensample writes the sample archive that `dlq --broker demo:`
// reads: realistic dead letters from RabbitMQ and SQS. Its output depends
// only on the fixed seed and archive.SampleBase, so running it again gives
// the same bytes.
//
//	go run ./internal/gensample -o sample/demo.jsonl.gz
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

func main() {
	out := flag.String("o", "sample/demo.jsonl.gz", "output file (replaced)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gensample:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		return err
	}
	base := archive.SampleBase
	g := &gen{r: rand.New(rand.NewPCG(20250314, 42)), base: base}
	// Two writers, one after the other, as two `dlq export` runs appending to
	// the same file would: the second adds a gzip member.
	parts := []struct {
		broker string
		msgs   []*broker.Message
	}{
		{"amqp://rabbit.prod.internal:5672/shop", append(g.orders(), g.payments()...)},
		{"sqs://us-east-1", append(g.billing(), g.events()...)},
	}
	for _, p := range parts {
		w, err := archive.NewWriter(out, archive.WriterOptions{
			Source:    archive.Source{Broker: p.broker},
			Generator: "dlq gensample",
			Now:       func() time.Time { return base },
		})
		if err != nil {
			return err
		}
		for _, m := range p.msgs {
			if m.ID == "" {
				m.ID = broker.Fingerprint(m)
			}
			if err := w.Write(m); err != nil {
				w.Close()
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}

type gen struct {
	r    *rand.Rand
	base time.Time
	seq  int
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (g *gen) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return fmt.Sprintf("%x", b)
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// ago returns a time before base: mostly within the last hours (an incident
// in progress), with a tail over the past week.
func (g *gen) ago() time.Time {
	var d time.Duration
	switch x := g.r.Float64(); {
	case x < 0.55:
		d = time.Duration(g.r.Int64N(int64(90 * time.Minute)))
	case x < 0.85:
		d = time.Duration(g.r.Int64N(int64(30 * time.Hour)))
	default:
		d = time.Duration(g.r.Int64N(int64(7 * 24 * time.Hour)))
	}
	return g.base.Add(-d - 3*time.Minute).Truncate(time.Second)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gen) money() string {
	return strconv.FormatFloat(float64(g.r.IntN(90000)+500)/100, 'f', 2, 64)
}

// xDeath builds the RabbitMQ x-death header and the normalised death record
// from entries given newest first.
func xDeath(entries []broker.DeathEntry) (map[string]any, *broker.Death) {
	arr := make([]any, len(entries))
	var total int64
	first, last := entries[0].Time, entries[0].Time
	for i, e := range entries {
		keys := make([]any, len(e.RoutingKeys))
		for j, k := range e.RoutingKeys {
			keys[j] = k
		}
		arr[i] = map[string]any{
			"count": e.Count, "reason": e.Reason, "queue": e.Queue, "exchange": e.Exchange,
			"routing-keys": keys, "time": e.Time,
		}
		total += e.Count
		if e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	oldest := entries[len(entries)-1]
	h := map[string]any{
		"x-death":                arr,
		"x-first-death-exchange": oldest.Exchange,
		"x-first-death-queue":    oldest.Queue,
		"x-first-death-reason":   oldest.Reason,
		"x-last-death-exchange":  entries[0].Exchange,
		"x-last-death-queue":     entries[0].Queue,
		"x-last-death-reason":    entries[0].Reason,
	}
	d := &broker.Death{
		Reason: entries[0].Reason, Queue: entries[0].Queue, Exchange: entries[0].Exchange,
		RoutingKeys: entries[0].RoutingKeys, Count: total, First: first, Last: last,
		FirstReason: oldest.Reason, FirstQueue: oldest.Queue, History: entries,
	}
	return h, d
}

var springErrors = []struct{ fqcn, msg string }{
	{"org.springframework.amqp.support.converter.MessageConversionException", "Failed to convert Message content: Cannot deserialize value of type `java.time.Instant` from String \"2025-03-13 25:10\""},
	{"jakarta.validation.ConstraintViolationException", "createOrder.request.customerId: must not be null"},
	{"com.shop.orders.InventoryUnavailableException", "Inventory service unavailable: GET http://inventory.internal/v1/reserve returned 503"},
	{"org.springframework.dao.DuplicateKeyException", "duplicate key value violates unique constraint \"orders_pkey\""},
	{"java.net.SocketTimeoutException", "Read timed out after 5000 ms calling http://pricing.internal/v2/quote"},
}

func (g *gen) orders() []*broker.Message {
	var out []*broker.Message
	keys := []string{"order.created", "order.created", "order.created", "order.updated", "order.cancelled"}
	for i := range 150 {
		died := g.ago()
		rk := keys[g.r.IntN(len(keys))]
		orderID := 100000 + g.r.IntN(900000)
		body := mustJSON(map[string]any{
			"order_id":    "ord_" + strconv.Itoa(orderID),
			"customer_id": "cus_" + strconv.Itoa(1000+g.r.IntN(9000)),
			"currency":    g.pick("EUR", "USD", "GBP"),
			"total":       g.money(),
			"items": []map[string]any{
				{"sku": "SKU-" + strconv.Itoa(g.r.IntN(5000)), "qty": 1 + g.r.IntN(4)},
			},
			"created_at": died.Add(-time.Duration(g.r.IntN(600)) * time.Second).Format(time.RFC3339),
		})
		published := died.Add(-time.Duration(200+g.r.IntN(4000)) * time.Millisecond).Truncate(time.Second)
		reason, queue := "rejected", "orders.q"
		if i%17 == 5 {
			reason = "expired"
		}
		entries := []broker.DeathEntry{{Reason: reason, Queue: queue, Exchange: "orders.x", RoutingKeys: []string{rk}, Count: 1, Time: died}}
		ladder := i%31 == 7
		if ladder {
			// A retry ladder: three 30-second waits in orders.retry, each
			// expiring back to orders.q, then the final rejection.
			entries = []broker.DeathEntry{
				{Reason: "rejected", Queue: "orders.q", Exchange: "orders.x", RoutingKeys: []string{rk}, Count: 4, Time: died.Add(-95 * time.Second)},
				{Reason: "expired", Queue: "orders.retry.30s", Exchange: "orders.retry.x", RoutingKeys: []string{rk}, Count: 3, Time: died.Add(-60 * time.Second)},
			}
			published = died.Add(-100 * time.Second)
		}
		h, d := xDeath(entries)
		m := &broker.Message{
			System:   broker.RabbitMQ,
			Queue:    "orders.dlq",
			Body:     body,
			Headers:  h,
			Exchange: "orders.dlx", RoutingKey: rk,
			Death:         d,
			DeliveryCount: 0,
			Timestamp:     published,
			Properties: broker.Properties{
				ContentType: "application/json", DeliveryMode: 2,
				MessageID: g.uuid(), CorrelationID: g.uuid(), Timestamp: published,
				Type: "com.shop.orders.OrderEvent", AppID: "order-service",
			},
		}
		if reason == "rejected" {
			e := springErrors[g.r.IntN(len(springErrors))]
			msg := e.msg
			if bytes.Contains([]byte(msg), []byte("%d")) {
				msg = fmt.Sprintf(msg, g.r.IntN(5000))
			}
			h["x-exception-message"] = msg
			h["x-exception-fqcn"] = e.fqcn
			h["x-exception-stacktrace"] = e.fqcn + ": " + msg + "\n\tat com.shop.orders.OrderListener.onOrder(OrderListener.java:" + strconv.Itoa(40+g.r.IntN(80)) + ")\n\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler(MessagingMessageListenerAdapter.java:259)\n"
			h["x-original-exchange"] = "orders.x"
			h["x-original-routingKey"] = rk
		}
		h["traceparent"] = "00-" + g.hex(16) + "-" + g.hex(8) + "-01"
		if i%40 == 13 {
			// Sent without a message-id: its ID is a fingerprint.
			m.Properties.MessageID = ""
		}
		switch i {
		case 21:
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			zw.Write(body)
			zw.Close()
			m.Body = zb.Bytes()
			m.Properties.ContentEncoding = "gzip"
		case 88:
			// A protobuf payload (OrderCreated{id, amount_cents}).
			m.Body = []byte{0x0a, 0x0a, 'o', 'r', 'd', '_', '4', '1', '9', '9', '0', '7', 0x10, 0xb4, 0x9c, 0x01, 0x1a, 0x03, 'E', 'U', 'R'}
			m.Properties.ContentType = "application/x-protobuf"
			h["proto-schema"] = "shop.orders.v1.OrderCreated"
		}
		out = append(out, m)
	}
	return out
}

var mtFaults = []struct{ typ, msg string }{
	{"Payments.Gateway.CardDeclinedException", "Card declined by issuer (code 05: do not honor)"},
	{"System.TimeoutException", "The operation has timed out waiting for PSP response after 00:00:30"},
	{"Npgsql.PostgresException", "40001: could not serialize access due to concurrent update"},
	{"Payments.IdempotencyConflictException", "Payment was already captured with a different amount"},
}

func (g *gen) payments() []*broker.Message {
	var out []*broker.Message
	for range 80 {
		died := g.ago()
		f := mtFaults[g.r.IntN(len(mtFaults))]
		msg := f.msg
		if bytes.Contains([]byte(msg), []byte("%d")) {
			msg = fmt.Sprintf(msg, 500000+g.r.IntN(400000))
		}
		msgID := g.uuid()
		sent := died.Add(-time.Duration(2+g.r.IntN(120)) * time.Second)
		body := mustJSON(map[string]any{
			"messageId":          msgID,
			"conversationId":     g.uuid(),
			"sourceAddress":      "rabbitmq://rabbit.prod.internal/shop/checkout-api",
			"destinationAddress": "rabbitmq://rabbit.prod.internal/shop/payments.q",
			"messageType":        []string{"urn:message:Payments.Contracts:CapturePayment"},
			"message": map[string]any{
				"paymentId": "pay_" + strconv.Itoa(500000+g.r.IntN(400000)),
				"orderId":   "ord_" + strconv.Itoa(100000+g.r.IntN(900000)),
				"amount":    g.money(),
				"currency":  g.pick("EUR", "USD"),
			},
			"sentTime": sent.Format(time.RFC3339Nano),
		})
		limit := int64(5)
		entries := []broker.DeathEntry{{Reason: "delivery_limit", Queue: "payments.q", Exchange: "payments.x", RoutingKeys: []string{"payment.capture"}, Count: 1, Time: died}}
		h, d := xDeath(entries)
		h["MT-Fault-ExceptionType"] = f.typ
		h["MT-Fault-Message"] = msg
		h["MT-Fault-StackTrace"] = "   at Payments.Consumers.CapturePaymentConsumer.Consume(ConsumeContext`1 context) in /src/Payments/Consumers/CapturePaymentConsumer.cs:line " + strconv.Itoa(30+g.r.IntN(90))
		h["MT-Fault-Timestamp"] = died.Format(time.RFC3339Nano)
		h["MT-Fault-ConsumerType"] = "Payments.Consumers.CapturePaymentConsumer"
		h["MT-Host-MachineName"] = "payments-worker-" + strconv.Itoa(g.r.IntN(6))
		h["MT-Reason"] = "fault"
		h["x-delivery-count"] = limit + 1
		out = append(out, &broker.Message{
			System: broker.RabbitMQ, Queue: "payments.dlq", Body: body, Headers: h,
			Exchange: "payments.dlx", RoutingKey: "payment.capture",
			Death: d, DeliveryCount: 0, Timestamp: sent.Truncate(time.Second),
			Properties: broker.Properties{
				ContentType: "application/vnd.masstransit+json", DeliveryMode: 2,
				MessageID: msgID, Timestamp: sent.Truncate(time.Second), AppID: "checkout-api",
			},
		})
	}
	return out
}

func (g *gen) billing() []*broker.Message {
	var out []*broker.Message
	const arn = "arn:aws:sqs:us-east-1:123456789012:billing"
	errs := []struct{ code, msg string }{
		{"InvoiceRenderFailed", "template invoice_v7.html: undefined variable vat_number"},
		{"StripeRateLimited", "429 Too Many Requests from api.stripe.com (retry after 2s)"},
		{"CustomerNotFound", "customer not found in billing DB"},
		{"SchemaValidation", "field amount: expected number, got string"},
	}
	for range 75 {
		died := g.ago()
		sent := died.Add(-time.Duration(60+g.r.IntN(3600)) * time.Second)
		e := errs[g.r.IntN(len(errs))]
		msg := e.msg
		if bytes.Contains([]byte(msg), []byte("%d")) {
			msg = fmt.Sprintf(msg, 1000+g.r.IntN(9000))
		}
		id := g.uuid()
		receives := int64(4 + g.r.IntN(2))
		ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
		out = append(out, &broker.Message{
			ID: id, System: broker.SQS, Queue: "billing-dlq",
			Body: mustJSON(map[string]any{
				"invoice_id": "inv_" + strconv.Itoa(g.r.IntN(1000000)),
				"account_id": "acct_" + strconv.Itoa(g.r.IntN(50000)),
				"amount":     g.money(),
				"period":     "2025-02",
			}),
			Attributes: map[string]broker.Attribute{
				"ErrorCode":    {DataType: "String", StringValue: e.code},
				"ErrorMessage": {DataType: "String", StringValue: msg},
				"RetryCount":   {DataType: "Number", StringValue: strconv.FormatInt(receives-1, 10)},
				"TraceId":      {DataType: "String", StringValue: "1-" + strconv.FormatInt(sent.Unix(), 16) + "-" + g.uuid()[:24]},
				"Checksum":     {DataType: "Binary", BinaryValue: []byte{byte(g.r.UintN(256)), byte(g.r.UintN(256)), byte(g.r.UintN(256)), byte(g.r.UintN(256))}},
			},
			SystemAttributes: map[string]string{
				"ApproximateReceiveCount":          strconv.FormatInt(receives, 10),
				"ApproximateFirstReceiveTimestamp": ms(sent.Add(2 * time.Second)),
				"SentTimestamp":                    ms(sent),
				"SenderId":                         "AROAEXAMPLEID:billing-producer",
				"DeadLetterQueueSourceArn":         arn,
			},
			Death: &broker.Death{
				Reason: "max_receives", Queue: "billing", QueueARN: arn, Count: 1,
				First: died, Last: died, FirstReason: "max_receives", FirstQueue: "billing",
			},
			DeliveryCount: receives,
			Timestamp:     sent,
			Properties:    broker.Properties{MessageID: id, Timestamp: sent},
		})
	}
	return out
}

func (g *gen) events() []*broker.Message {
	var out []*broker.Message
	const arn = "arn:aws:sqs:us-east-1:123456789012:events.fifo"
	seq := uint64(496460467696128)
	for i := range 45 {
		died := g.ago()
		sent := died.Add(-time.Duration(30+g.r.IntN(900)) * time.Second)
		group := "tenant-" + strconv.Itoa(1+g.r.IntN(6))
		id := g.uuid()
		seq += uint64(1 + g.r.IntN(1000))
		ev := g.pick("user.signed_up", "user.email_changed", "subscription.renewed", "subscription.cancelled")
		body := mustJSON(map[string]any{"type": ev, "tenant": group, "event_id": "evt_" + strconv.Itoa(i+1), "occurred_at": sent.Format(time.RFC3339)})
		receives := int64(3)
		ms := strconv.FormatInt(sent.UnixMilli(), 10)
		attrs := map[string]broker.Attribute{
			"event-type": {DataType: "String", StringValue: ev},
			"version":    {DataType: "Number.int", StringValue: "3"},
		}
		if i%3 == 0 {
			attrs["error"] = broker.Attribute{DataType: "String", StringValue: g.pick("webhook https://hooks.example.com/t returned 410 Gone", "out-of-order event: previous sequence missing")}
		}
		out = append(out, &broker.Message{
			ID: id, System: broker.SQS, Queue: "events-dlq.fifo", Body: body,
			Attributes: attrs,
			SystemAttributes: map[string]string{
				"ApproximateReceiveCount":          strconv.FormatInt(receives, 10),
				"ApproximateFirstReceiveTimestamp": ms,
				"SentTimestamp":                    ms,
				"SenderId":                         "AIDAEXAMPLE:events-publisher",
				"MessageGroupId":                   group,
				"MessageDeduplicationId":           "evt_" + strconv.Itoa(i+1),
				"SequenceNumber":                   fmt.Sprintf("18849%015d", seq),
				"DeadLetterQueueSourceArn":         arn,
			},
			Death: &broker.Death{
				Reason: "max_receives", Queue: "events.fifo", QueueARN: arn, Count: 1,
				First: died, Last: died, FirstReason: "max_receives", FirstQueue: "events.fifo",
			},
			DeliveryCount: receives,
			Timestamp:     sent,
			Properties:    broker.Properties{MessageID: id, Timestamp: sent},
		})
	}
	return out
}
