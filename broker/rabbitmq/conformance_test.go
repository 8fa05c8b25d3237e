package rabbitmq

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestConformance runs the shared adapter suite against the server of this
// pass (RabbitMQ 3.10, 4.0 or 4.3) on classic, quorum and stream queues.
// The harness fills and reads the queues over a connection of its own and
// the management API, never through the adapter.
func TestConformance(t *testing.T) {
	b, env := openTest(t)
	h := &rabbitHarness{env: env, streams: map[string]bool{}}
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatalf("dial %s: %v", b, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h.conn = conn
	t.Logf("RabbitMQ %s", env.Version)
	brokertest.Conformance(t, brokertest.Harness{
		Broker: b,
		Secret: env.Password,
		Kinds: []brokertest.Kind{
			{Name: "classic", Kind: broker.KindClassic, Make: h.maker("classic")},
			{Name: "quorum", Kind: broker.KindQuorum, Make: h.maker("quorum")},
			{Name: "stream", Kind: broker.KindStream, Make: h.maker("stream"), Unsupported: map[string]string{
				"consume": "an ack does not remove a message from a stream",
				"purge":   "a stream is truncated by its retention, never purged",
			}},
		},
		Count:       h.count,
		Contents:    h.contents,
		DeadLetters: h.deadLetters,
		Unroutable: func(t brokertest.TB) broker.Destination {
			x := brokertest.NameTB(t, "x")
			h.do(t, func(ch *amqp.Channel) error { return ch.ExchangeDeclare(x, "direct", false, true, false, false, nil) })
			return broker.Destination{Kind: broker.ToExchange, Exchange: x, RoutingKeys: []string{"nowhere"}}
		},
		Refusing: func(t brokertest.TB) broker.Destination {
			q := h.declare(t, "full", amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"})
			return broker.Destination{Kind: broker.ToQueue, Queue: q}
		},
	})
}

type rabbitHarness struct {
	env     brokertest.RabbitEnv
	conn    *amqp.Connection
	streams map[string]bool
}

// do runs f on a channel of the harness's own connection.
func (h *rabbitHarness) do(t brokertest.TB, f func(ch *amqp.Channel) error) {
	t.Helper()
	ch, err := h.conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	defer ch.Close()
	if err := f(ch); err != nil {
		t.Fatalf("%v", err)
	}
}

func (h *rabbitHarness) declare(t brokertest.TB, prefix string, args amqp.Table) string {
	t.Helper()
	q := brokertest.NameTB(t, prefix)
	h.do(t, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(q, true, false, false, false, args)
		return err
	})
	t.Cleanup(func() {
		if ch, err := h.conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(q, false, false, false)
			ch.Close()
		}
	})
	return q
}

func (h *rabbitHarness) publish(t brokertest.TB, q string, bodies []string) {
	t.Helper()
	h.do(t, func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		for _, b := range bodies {
			dc, err := ch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{
				MessageId: b, Body: []byte(b), DeliveryMode: amqp.Persistent, ContentType: "text/plain"})
			if err != nil {
				return err
			}
			if !dc.Wait() {
				return fmt.Errorf("publish to %s nacked", q)
			}
		}
		return nil
	})
}

func (h *rabbitHarness) maker(kind string) func(brokertest.TB, []brokertest.Fill) string {
	return func(t brokertest.TB, msgs []brokertest.Fill) string {
		t.Helper()
		q := h.declare(t, kind, amqp.Table{"x-queue-type": kind})
		if kind == "stream" {
			h.streams[q] = true
		}
		var bodies []string
		for _, m := range msgs {
			bodies = append(bodies, m.Body)
		}
		h.publish(t, q, bodies)
		return q
	}
}

// count is a classic or quorum queue's exact ready count (a passive
// declare), or the number of messages a read of a stream finds (the
// management API's count of a stream lags by seconds).
func (h *rabbitHarness) count(t brokertest.TB, q string) int64 {
	t.Helper()
	if h.streams[q] {
		return int64(len(h.contents(t, q)))
	}
	var n int64
	h.do(t, func(ch *amqp.Channel) error {
		qs, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		n = int64(qs.Messages)
		return err
	})
	return n
}

// contents takes every message of a classic or quorum queue, or reads a
// stream from its first offset, and returns the bodies in order.
func (h *rabbitHarness) contents(t brokertest.TB, q string) []string {
	t.Helper()
	var bodies []string
	h.do(t, func(ch *amqp.Channel) error {
		if !h.streams[q] {
			for {
				d, ok, err := ch.Get(q, true)
				if err != nil || !ok {
					return err
				}
				bodies = append(bodies, string(d.Body))
			}
		}
		if err := ch.Qos(100, 0, false); err != nil {
			return err
		}
		ds, err := ch.Consume(q, "", false, false, false, false, amqp.Table{"x-stream-offset": "first"})
		if err != nil {
			return err
		}
		// A stream ends nowhere: it is read until it is quiet, longer
		// before the first message.
		wait := 2 * time.Second
		for {
			select {
			case d := <-ds:
				wait = time.Second
				bodies = append(bodies, string(d.Body))
				_ = d.Ack(false)
			case <-time.After(wait):
				return nil
			}
		}
	})
	return bodies
}

// deadLetters rejects n messages of a work queue into its dead-letter
// queue; the default exchange routed them, so their origin is the queue.
func (h *rabbitHarness) deadLetters(t brokertest.TB, n int) (string, broker.Destination) {
	t.Helper()
	dlq := h.declare(t, "dlq", nil)
	src := h.declare(t, "src", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	var bodies []string
	for i := range n {
		bodies = append(bodies, fmt.Sprintf("dead-%d", i))
	}
	h.publish(t, src, bodies)
	h.do(t, func(ch *amqp.Channel) error {
		for range n {
			d, ok, err := ch.Get(src, false)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s is empty", src)
			}
			if err := d.Reject(false); err != nil {
				return err
			}
		}
		return nil
	})
	return dlq, broker.Destination{Kind: broker.ToQueue, Queue: src}
}
