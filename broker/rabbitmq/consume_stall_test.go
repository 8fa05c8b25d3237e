package rabbitmq

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// A subscription that hears nothing for Idle while the queue still holds
// ready messages does not report the queue drained (a move would then end
// early and call itself done): here another consumer is the single active
// one, so nothing comes, and Next ends with an error naming the ready
// messages once the stall limit passes. Without such a consumer the same
// queue is drained to io.EOF.
func TestConsumeSilenceWithReadyMessagesIsNotDrained(t *testing.T) {
	b, env := openTest(t)
	q := brokertest.Name(t, "sac")
	declareQueue(t, b, q, amqp.Table{"x-single-active-consumer": true})
	publishN(t, b, q, "m", 5, nil)

	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatal("dial failed")
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	// The active consumer takes one message and sits on it.
	if _, err := ch.Consume(q, "other", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := b.Consume(ctx, q, broker.ConsumeOptions{Idle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sub.(*Subscription).stall = time.Second
	_, err = sub.Next(ctx)
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "ready messages") {
		t.Fatalf("Next = %v, want an error about ready messages, not io.EOF", err)
	}
	sub.Close()
	conn.Close() // the other consumer's message goes back

	sub, err = b.Consume(ctx, q, broker.ConsumeOptions{Idle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	n := 0
	for {
		d, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Ack(ctx, d.Receipt); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5 {
		t.Errorf("drained %d of 5", n)
	}
}
