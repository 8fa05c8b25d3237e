package broker

import "testing"

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
