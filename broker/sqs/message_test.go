package sqs

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

func TestFromSQS(t *testing.T) {
	m := types.Message{
		MessageId:     aws.String("6f1c-id"),
		ReceiptHandle: aws.String("handle"),
		Body:          aws.String(`{"order":42}`),
		Attributes: map[string]string{
			sysReceiveCount:    "4",
			sysSentTimestamp:   "1735732800123",
			sysFirstReceive:    "1735732801000",
			sysDLQSourceArn:    "arn:aws:sqs:eu-west-1:123456789012:orders.fifo",
			sysGroupID:         "customer-7",
			sysSequenceNumber:  "18888",
			sysDeduplicationID: "d-1",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
			"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{9, 8}},
			"n":      {DataType: aws.String("Number.int32"), StringValue: aws.String("3")},
		},
	}
	got := fromSQS(m, "orders-dlq.fifo")
	sent := time.UnixMilli(1735732800123).UTC()
	if got.ID != "6f1c-id" || broker.Fingerprint(got) != "6f1c-id" {
		t.Errorf("ID = %q, fingerprint %q, want the MessageId", got.ID, broker.Fingerprint(got))
	}
	if got.System != broker.SQS || got.Queue != "orders-dlq.fifo" {
		t.Errorf("system/queue = %s/%s", got.System, got.Queue)
	}
	if string(got.Body) != `{"order":42}` {
		t.Errorf("body = %q", got.Body)
	}
	if got.DeliveryCount != 3 || !got.Redelivered {
		t.Errorf("delivery count = %d redelivered %v, want 3 (receives before this one), true", got.DeliveryCount, got.Redelivered)
	}
	if !got.Timestamp.Equal(sent) || !got.Properties.Timestamp.Equal(sent) {
		t.Errorf("timestamp = %v, want %v", got.Timestamp, sent)
	}
	if got.Death == nil {
		t.Errorf("no death record")
	} else if got.Death.Queue != "orders.fifo" || got.Death.QueueARN != m.Attributes[sysDLQSourceArn] || got.Death.Reason != "max_receives" {
		t.Errorf("death queue %q, queue arn %q, reason %q; want orders.fifo, %s, max_receives", got.Death.Queue, got.Death.QueueARN, got.Death.Reason, m.Attributes[sysDLQSourceArn])
	}
	if got.Position != "18888" || got.SystemAttributes[sysGroupID] != "customer-7" || got.SystemAttributes[sysDeduplicationID] != "d-1" {
		t.Errorf("position %q, system attributes %v", got.Position, got.SystemAttributes)
	}
	if a := got.Attributes["blob"]; a.DataType != "Binary" || string(a.BinaryValue) != "\x09\x08" {
		t.Errorf("binary attribute: data type %q, value %q; want Binary, \"\\t\\b\"", a.DataType, a.BinaryValue)
	}
	if a := got.Attributes["n"]; a.DataType != "Number.int32" || a.StringValue != "3" {
		t.Errorf("number attribute: data type %q, value %q; want Number.int32, 3", a.DataType, a.StringValue)
	}
}

func TestToEntry(t *testing.T) {
	std := queueInfo{url: "u", name: "orders"}
	fifo := queueInfo{url: "u", name: "orders.fifo", fifo: true}
	cbd := queueInfo{url: "u", name: "orders.fifo", fifo: true, contentDedup: true}
	sqsMsg := &broker.Message{System: broker.SQS, Body: []byte("b"),
		Attributes:       map[string]broker.Attribute{"tenant": {DataType: "String", StringValue: "acme"}},
		SystemAttributes: map[string]string{sysGroupID: "g-1", sysDeduplicationID: "old", "DelaySeconds": "30"}}
	amqpMsg := &broker.Message{System: broker.RabbitMQ, Body: []byte{0xff, 0x00, 0x10},
		Headers:    map[string]any{"retries": int32(2)},
		Properties: broker.Properties{ContentType: "application/octet-stream", MessageID: "m-1"}}

	t.Run("standard drops group, dedup and delay", func(t *testing.T) {
		o, err := toEntry("0", broker.Outgoing{Message: sqsMsg, GroupID: "x", DeduplicationID: "y"}, std)
		if err != nil {
			t.Fatal(err)
		}
		e := o.entry
		if e.MessageGroupId != nil || e.MessageDeduplicationId != nil || e.DelaySeconds != 0 {
			t.Errorf("standard entry carries fifo fields or delay: group %q, dedup %q, delay %d", aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId), e.DelaySeconds)
		}
		if aws.ToString(e.MessageAttributes["tenant"].StringValue) != "acme" {
			t.Errorf("attribute tenant %q, want acme", aws.ToString(e.MessageAttributes["tenant"].StringValue))
		}
	})
	t.Run("fifo keeps the message's group and takes the new dedup id", func(t *testing.T) {
		o, err := toEntry("0", broker.Outgoing{Message: sqsMsg, DeduplicationID: "new-1"}, fifo)
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(o.entry.MessageGroupId) != "g-1" || aws.ToString(o.entry.MessageDeduplicationId) != "new-1" {
			t.Errorf("group %q dedup %q", aws.ToString(o.entry.MessageGroupId), aws.ToString(o.entry.MessageDeduplicationId))
		}
	})
	t.Run("fifo group from outgoing wins, dedup generated", func(t *testing.T) {
		a, err := toEntry("0", broker.Outgoing{Message: sqsMsg, GroupID: "g-2"}, fifo)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := toEntry("1", broker.Outgoing{Message: sqsMsg, GroupID: "g-2"}, fifo)
		if aws.ToString(a.entry.MessageGroupId) != "g-2" {
			t.Errorf("group = %q", aws.ToString(a.entry.MessageGroupId))
		}
		da, db := aws.ToString(a.entry.MessageDeduplicationId), aws.ToString(b.entry.MessageDeduplicationId)
		if da == "" || da == "old" || da == db {
			t.Errorf("generated dedup ids %q, %q: want fresh and distinct", da, db)
		}
	})
	t.Run("fifo with content-based dedup leaves it to SQS", func(t *testing.T) {
		o, err := toEntry("0", broker.Outgoing{Message: sqsMsg}, cbd)
		if err != nil {
			t.Fatal(err)
		}
		if o.entry.MessageDeduplicationId != nil {
			t.Errorf("dedup id set: %q", aws.ToString(o.entry.MessageDeduplicationId))
		}
	})
	t.Run("fifo without any group is refused", func(t *testing.T) {
		_, err := toEntry("0", broker.Outgoing{Message: amqpMsg}, fifo)
		if err == nil || !strings.Contains(err.Error(), "group id") {
			t.Errorf("err = %v, want a group id error", err)
		}
	})
	t.Run("amqp message: binary body and mapped headers round trip", func(t *testing.T) {
		o, err := toEntry("0", broker.Outgoing{Message: amqpMsg}, std)
		if err != nil {
			t.Fatal(err)
		}
		got := fromSQS(received(o.entry), "q")
		if string(got.Body) != string(amqpMsg.Body) {
			t.Errorf("body = %x, want %x", got.Body, amqpMsg.Body)
		}
		h, p, err := HeadersFromAttributes(got.Attributes)
		if err != nil {
			t.Fatal(err)
		}
		if h["retries"] != int32(2) || p.ContentType != "application/octet-stream" || p.MessageID != "m-1" {
			t.Errorf("header retries %#v, content type %q, message id %q; want int32(2), application/octet-stream, m-1", h["retries"], p.ContentType, p.MessageID)
		}
	})
	t.Run("empty body round trips", func(t *testing.T) {
		o, err := toEntry("0", broker.Outgoing{Message: &broker.Message{System: broker.RabbitMQ}}, std)
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(o.entry.MessageBody) == "" {
			t.Fatal("empty body sent")
		}
		if got := fromSQS(received(o.entry), "q"); len(got.Body) != 0 {
			t.Errorf("body = %q, want empty", got.Body)
		}
	})
	t.Run("too big", func(t *testing.T) {
		big := &broker.Message{System: broker.SQS, Body: []byte(strings.Repeat("x", maxMessageBytes+1))}
		if _, err := toEntry("0", broker.Outgoing{Message: big}, std); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("err = %v, want a size error", err)
		}
	})
	t.Run("eleven attributes", func(t *testing.T) {
		m := &broker.Message{System: broker.SQS, Body: []byte("b"), Attributes: map[string]broker.Attribute{}}
		for _, k := range strings.Split("a b c d e f g h i j k", " ") {
			m.Attributes[k] = broker.Attribute{DataType: "String", StringValue: "v"}
		}
		if _, err := toEntry("0", broker.Outgoing{Message: m}, std); err == nil {
			t.Error("11 attributes accepted")
		}
	})
}

// received turns a send entry into the message SQS would deliver.
func received(e types.SendMessageBatchRequestEntry) types.Message {
	return types.Message{MessageId: aws.String("id"), Body: e.MessageBody, MessageAttributes: e.MessageAttributes,
		Attributes: map[string]string{sysReceiveCount: "1"}}
}
