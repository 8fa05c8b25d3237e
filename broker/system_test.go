package broker

import (
	"slices"
	"strings"
	"testing"
)

func TestMessageTraits(t *testing.T) {
	m := &Message{SystemAttributes: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:eu-west-1:1:orders"}}
	if got := RecordedSource(m); got != "arn:aws:sqs:eu-west-1:1:orders" {
		t.Errorf("RecordedSource = %q, want the ARN", got)
	}
	if got := RecordedSource(&Message{}); got != "" {
		t.Errorf("RecordedSource of a message without one = %q", got)
	}
	if got := SourceName("arn:aws:sqs:eu-west-1:1:orders"); got != "orders" {
		t.Errorf("SourceName(ARN) = %q, want orders", got)
	}
	if got := SourceName("orders"); got != "orders" {
		t.Errorf("SourceName(orders) = %q", got)
	}
	for k, want := range map[string]bool{"x-death": true, "x-first-death-queue": true, "x-rabbitmq-foo": true, "x-stream-offset": true, "x-delivery-count": true, "order-id": false, "x-dlq-redrive": false} {
		if got := BrokerHeader(k); got != want {
			t.Errorf("BrokerHeader(%q) = %v, want %v", k, got, want)
		}
	}
}

// A system that this package does not ship names itself in its own package
// and registers its messages' traits there: the libraries' questions then
// answer for its messages too, and nothing here names it.
func TestAnotherSystemRegistersMessageTraits(t *testing.T) {
	saved := messageTraits
	t.Cleanup(func() { messageTraits = saved })
	const other System = "other"
	if BrokerHeader("other-seq") || RecordedSource(&Message{SystemAttributes: map[string]string{"OtherSource": "other/orders"}}) != "" {
		t.Fatal("traits answered for a system before it registered")
	}
	RegisterMessageTraits(other, MessageTraits{
		SourceAttribute: "OtherSource",
		OwnHeader:       func(k string) bool { return k == "other-seq" },
		SourceName:      func(id string) string { return strings.TrimPrefix(id, "other/") },
	})
	RegisterMessageTraits(other, MessageTraits{OwnHeader: func(string) bool { return true }})
	m := &Message{System: other, SystemAttributes: map[string]string{"OtherSource": "other/orders"}}
	if got := RecordedSource(m); got != "other/orders" {
		t.Errorf("RecordedSource = %q, want other/orders", got)
	}
	if got := SourceName("other/orders"); got != "orders" {
		t.Errorf("SourceName = %q, want orders", got)
	}
	if !BrokerHeader("other-seq") {
		t.Error("BrokerHeader(other-seq) = false, want its own header")
	}
	if BrokerHeader("order-id") {
		t.Error("BrokerHeader(order-id) = true: a second registration replaced the first")
	}
	var got []System
	for _, r := range messageTraits {
		got = append(got, r.System)
	}
	if want := []System{RabbitMQ, SQS, other}; !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
}
