package rabbitmq

import (
	"bytes"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// deadLettered is a delivery as RabbitMQ 3.10 hands out a message rejected
// once from a work queue: x-death with one entry and x-first-death-*.
func deadLettered(messageID string) *amqp.Delivery {
	at := time.Unix(1795000000, 0)
	return &amqp.Delivery{
		MessageId: messageID, DeliveryMode: amqp.Persistent, ContentType: "application/json",
		Body: bytes.Repeat([]byte("x"), 1024),
		Headers: amqp.Table{
			"x-death": []any{amqp.Table{
				"count": int64(1), "reason": "rejected", "queue": "orders.work", "time": at,
				"exchange": "", "routing-keys": []any{"orders.work"},
			}},
			"x-first-death-exchange": "", "x-first-death-queue": "orders.work", "x-first-death-reason": "rejected",
			"trace-id": "4bf92f3577b34da6a3ce929d0e0e4736",
		},
	}
}

// BenchmarkFromDelivery measures turning a delivery into a neutral message,
// which a redrive does for every message it moves.
func BenchmarkFromDelivery(b *testing.B) {
	for _, c := range []struct {
		name string
		d    *amqp.Delivery
	}{
		{"plain", &amqp.Delivery{MessageId: "m1", DeliveryMode: amqp.Persistent, Body: bytes.Repeat([]byte("x"), 1024)}},
		{"dead-lettered", deadLettered("m1")},
		{"dead-lettered-no-id", deadLettered("")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m := fromDelivery("orders.dlq", c.d); m.Death == nil && c.name != "plain" {
					b.Fatal("no death")
				}
			}
		})
	}
}
