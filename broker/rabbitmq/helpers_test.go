package rabbitmq

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// declareQueue declares a durable queue with args and deletes it at the end
// of the test.
func declareQueue(t testing.TB, b *Broker, name string, args amqp.Table) {
	t.Helper()
	ctx := context.Background()
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(name, true, false, false, false, args)
		return err
	})
	if err != nil {
		t.Fatalf("declare queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = b.withChannel(context.Background(), func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(name, false, false, false)
			return err
		})
	})
}

func declareExchange(t testing.TB, b *Broker, name, kind string) {
	t.Helper()
	err := b.withChannel(context.Background(), func(ch *amqp.Channel) error {
		return ch.ExchangeDeclare(name, kind, true, false, false, false, nil)
	})
	if err != nil {
		t.Fatalf("declare exchange %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = b.withChannel(context.Background(), func(ch *amqp.Channel) error {
			return ch.ExchangeDelete(name, false, false)
		})
	})
}

func bindQueue(t testing.TB, b *Broker, queue, key, exchange string) {
	t.Helper()
	err := b.withChannel(context.Background(), func(ch *amqp.Channel) error {
		return ch.QueueBind(queue, key, exchange, false, nil)
	})
	if err != nil {
		t.Fatalf("bind %s to %s with %q: %v", queue, exchange, key, err)
	}
}

// setPolicy applies a policy to exactly the named queue and removes it at
// the end of the test.
func setPolicy(t testing.TB, b *Broker, name, queue string, def map[string]any) {
	t.Helper()
	body := map[string]any{"pattern": "^" + regexp.QuoteMeta(queue) + "$", "definition": def, "apply-to": "queues", "priority": 10}
	path := "/policies/" + url.PathEscape(b.vhost) + "/" + url.PathEscape(name)
	if err := b.mgmtDo(context.Background(), "PUT", path, body, nil); err != nil {
		t.Fatalf("set policy %s: %v", name, err)
	}
	t.Cleanup(func() { _ = b.mgmtDo(context.Background(), "DELETE", path, nil, nil) })
}

// publishN publishes n persistent messages "prefix-i" (message-id and body)
// to queue through the default exchange, with confirms.
func publishN(t testing.TB, b *Broker, queue, prefix string, n int, headers amqp.Table) {
	t.Helper()
	err := b.withChannel(context.Background(), func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		var dcs []*amqp.DeferredConfirmation
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			dc, err := ch.PublishWithDeferredConfirm("", queue, true, false, amqp.Publishing{
				MessageId: id, Body: []byte(id), DeliveryMode: amqp.Persistent, Headers: headers, ContentType: "text/plain",
			})
			if err != nil {
				return err
			}
			dcs = append(dcs, dc)
		}
		for _, dc := range dcs {
			if !dc.Wait() {
				return fmt.Errorf("publish nacked")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("publish %d to %s: %v", n, queue, err)
	}
}

// depth is the exact number of ready messages (passive declare).
func depth(t testing.TB, b *Broker, queue string) int64 {
	t.Helper()
	n, _, err := b.inspect(context.Background(), queue)
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return n
}

// waitDepth polls until queue holds want ready messages.
func waitDepth(t testing.TB, b *Broker, queue string, want int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := depth(t, b, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d", queue, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drainIDs takes every message of queue (acking) and returns their
// message-ids in order.
func drainIDs(t testing.TB, b *Broker, queue string) []string {
	t.Helper()
	var ids []string
	err := b.withChannel(context.Background(), func(ch *amqp.Channel) error {
		for {
			d, ok, err := ch.Get(queue, true)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			ids = append(ids, d.MessageId)
		}
	})
	if err != nil {
		t.Fatalf("drain %s: %v", queue, err)
	}
	return ids
}

func seq(prefix string, from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("%s-%d", prefix, i))
	}
	return s
}
