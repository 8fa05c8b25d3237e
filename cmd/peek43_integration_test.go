package cmd

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// peekState is what a peek shows of each message that must not change.
type peekState struct {
	ID, Exchange, RoutingKey string
	DeliveryCount            float64
	Headers                  map[string]any
}

func peekStates(t *testing.T, args []string, q string) []peekState {
	t.Helper()
	stdout, stderr, code := runDLQ(t, append(args, "peek", q, "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("peek -o json: exit %d %s", code, stderr)
	}
	var docs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
		t.Fatalf("peek -o json: %v", err)
	}
	var out []peekState
	for _, d := range docs {
		s := peekState{ID: fmt.Sprint(d["id"]), Exchange: fmt.Sprint(d["exchange"]), RoutingKey: fmt.Sprint(d["routing_key"])}
		s.DeliveryCount, _ = d["delivery_count"].(float64)
		s.Headers, _ = d["headers"].(map[string]any)
		out = append(out, s)
	}
	return out
}

// On RabbitMQ 4.3 a requeue does not count towards a quorum queue's
// delivery limit, and dlq's default peek holds and nacks: 30 default peeks
// of a quorum queue with the default delivery limit (20) and no
// dead-letter exchange leave every message in its place, with its
// x-delivery-count, exchange and routing key. (On 3.x-4.2 each would have
// been rotated or counted; TestPeekQuorumNeverDeadLetters covers those.)
func TestPeekQuorum43ChangesNothing(t *testing.T) {
	r := newRIRabbit(t)
	if env := brokertest.RabbitMQ(t); !env.RequeueFree() {
		t.Skipf("RabbitMQ %s counts a requeue: the default peek of a quorum queue rotates there", env.Version)
	}
	name := brokertest.Name(t, "qq43")
	q := r.queue(name, amqp.Table{"x-queue-type": "quorum"})
	ex := r.exchange(name + ".x")
	r.bind(q, "orders.failed", ex)
	var ps []amqp.Publishing
	for i := range 5 {
		ps = append(ps, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			DeliveryMode: amqp.Persistent, Headers: amqp.Table{"tenant": "acme"}})
	}
	r.publish(ex, "orders.failed", ps...)
	before := peekStates(t, r.args, q)
	for i := range 30 {
		_, stderr, code := runDLQ(t, append(r.args, "peek", q)...)
		if code != ExitOK {
			t.Fatalf("peek %d: exit %d %s", i+1, code, stderr)
		}
		if i == 0 {
			t.Logf("peek 1 reports: %s", strings.TrimSpace(stderr))
			if strings.Contains(stderr, "rotated") || strings.Contains(stderr, "x-delivery-count +1") {
				t.Errorf("the default peek rotated or counted: %s", stderr)
			}
		}
	}
	after := peekStates(t, r.args, q)
	for i := range before {
		t.Logf("before: %s exchange=%q routing_key=%q delivery_count=%v headers=%v", before[i].ID, before[i].Exchange, before[i].RoutingKey, before[i].DeliveryCount, before[i].Headers)
	}
	for i := range after {
		t.Logf("after:  %s exchange=%q routing_key=%q delivery_count=%v headers=%v", after[i].ID, after[i].Exchange, after[i].RoutingKey, after[i].DeliveryCount, after[i].Headers)
	}
	ids := func(s []peekState) (out []string) {
		for _, m := range s {
			out = append(out, m.ID)
		}
		return out
	}
	if want := []string{"m-0", "m-1", "m-2", "m-3", "m-4"}; !slices.Equal(ids(before), want) || !slices.Equal(ids(after), want) {
		t.Fatalf("messages before %v, after %v; want %v in order", ids(before), ids(after), want)
	}
	for i := range after {
		b, a := before[i], after[i]
		if a.Exchange != ex || a.RoutingKey != "orders.failed" || a.Exchange != b.Exchange || a.RoutingKey != b.RoutingKey {
			t.Errorf("%s: exchange, routing key %q, %q after; %q, %q before; want %q, %q", a.ID, a.Exchange, a.RoutingKey, b.Exchange, b.RoutingKey, ex, "orders.failed")
		}
		if a.DeliveryCount != b.DeliveryCount || a.Headers["x-delivery-count"] != b.Headers["x-delivery-count"] {
			t.Errorf("%s: x-delivery-count %v (header %v) after 30 peeks, %v (header %v) before", a.ID, a.DeliveryCount, a.Headers["x-delivery-count"], b.DeliveryCount, b.Headers["x-delivery-count"])
		}
	}
	if n := r.depth(q); n != 5 {
		t.Errorf("queue holds %d messages after the peeks, want 5", n)
	}
}
