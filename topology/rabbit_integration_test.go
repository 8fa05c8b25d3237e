package topology_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/topology"
)

type rabbitEnv struct {
	b    *rabbitmq.Broker
	conn *amqp.Connection
}

func openRabbit(t *testing.T) rabbitEnv {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	ctx := context.Background()
	b, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL, Password: env.Password})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		b.Close()
	})
	return rabbitEnv{b: b, conn: conn}
}

// cleanupRabbit deletes, at the end of the test, every queue, exchange and
// policy whose name starts with prefix, messages and all.
func cleanupRabbit(t *testing.T, e rabbitEnv, prefix string) {
	t.Cleanup(func() {
		ctx := context.Background()
		top, err := e.b.ReadRabbitTopology(ctx)
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		ch, err := e.conn.Channel()
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		defer ch.Close()
		for _, q := range top.Queues {
			if strings.HasPrefix(q.Name, prefix) {
				if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
					t.Logf("cleanup queue %s: %v", q.Name, err)
				}
			}
		}
		for _, x := range top.Exchanges {
			if strings.HasPrefix(x.Name, prefix) {
				if err := ch.ExchangeDelete(x.Name, false, false); err != nil {
					t.Logf("cleanup exchange %s: %v", x.Name, err)
				}
			}
		}
		for _, p := range top.Policies {
			if strings.HasPrefix(p.Name, prefix) {
				pp := p
				if err := e.b.ApplyRabbitChange(ctx, broker.RabbitChange{Action: broker.Delete, Policy: &pp}); err != nil {
					t.Logf("cleanup policy %s: %v", p.Name, err)
				}
			}
		}
	})
}

func rabbitObjects(m *topology.Model) int {
	r := m.Rabbit
	return len(r.Exchanges) + len(r.Policies) + len(r.Queues) + len(r.Bindings)
}

func TestRabbitTopologyRoundTrip(t *testing.T) {
	for _, file := range []string{
		"retry-ladder.yaml",
		"retry-ladder-tiers.yaml",
		"work-queue-dlq.yaml",
		"quorum.yaml",
		"dlx-policy-vs-arguments.yaml",
	} {
		t.Run(file, func(t *testing.T) {
			e := openRabbit(t)
			prefix := brokertest.Name(t, "t") + "."
			cleanupRabbit(t, e, prefix)
			m := loadPrefixed(t, file, prefix)
			roundTrip(t, e.b, m, prefix, rabbitObjects(m))
		})
	}
}

// snapshot is the part of the vhost under prefix.
func snapshot(t *testing.T, b *rabbitmq.Broker, prefix string) broker.RabbitTopology {
	t.Helper()
	top, err := b.ReadRabbitTopology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s broker.RabbitTopology
	for _, x := range top.Exchanges {
		if strings.HasPrefix(x.Name, prefix) {
			s.Exchanges = append(s.Exchanges, x)
		}
	}
	for _, q := range top.Queues {
		if strings.HasPrefix(q.Name, prefix) {
			q.Messages = 0
			s.Queues = append(s.Queues, q)
		}
	}
	for _, b := range top.Bindings {
		if strings.HasPrefix(b.Source, prefix) || strings.HasPrefix(b.Destination, prefix) {
			s.Bindings = append(s.Bindings, b)
		}
	}
	for _, p := range top.Policies {
		if strings.HasPrefix(p.Name, prefix) {
			s.Policies = append(s.Policies, p)
		}
	}
	return s
}

func TestRabbitConflictRefusedBrokerUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    amqp.Table // the queue as it already exists
		via     string
		wantFix string
	}{
		{"existing-args-differ", amqp.Table{"x-max-length": int64(10)}, "policy", "migrate"},
		{"spec-adds-arguments", nil, "arguments", "policy instead of queue arguments"},
		{"type-differs", amqp.Table{"x-queue-type": "quorum"}, "policy", "cannot change in place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openRabbit(t)
			ctx := context.Background()
			prefix := brokertest.Name(t, "c") + "."
			cleanupRabbit(t, e, prefix)
			ch, err := e.conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ch.QueueDeclare(prefix+"work.queue", true, false, false, false, tc.args); err != nil {
				t.Fatal(err)
			}
			ch.Close()
			spec := fmt.Sprintf(`version: 1
name_prefix: %s
rabbitmq:
  defaults: {queue_type: classic, dead_letter_via: %s}
  work_queues:
    - exchange: tasks.exchange
      queue: work.queue
      routing_keys: [task.create]
      dead_letter: {exchange: dlq.exchange, routing_key: dead.letter, queue: dlq.queue}
`, prefix, tc.via)
			m, err := topology.LoadBytes("conflict.yaml", []byte(spec))
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, e.b, prefix)
			p := mustPlan(t, e.b, m, topology.PlanOptions{})
			cs := p.Conflicts()
			if len(cs) != 1 || cs[0].Kind != "queue" || cs[0].Name != prefix+"work.queue" {
				t.Fatalf("want one conflict on the work queue, got:\n%s", planText(p))
			}
			if !strings.Contains(cs[0].Problem, "406 PRECONDITION_FAILED") || !strings.Contains(cs[0].Fix, tc.wantFix) {
				t.Errorf("conflict explanation lacks %q:\n%s", tc.wantFix, planText(p))
			}
			res, err := topology.Apply(ctx, e.b, p, nil)
			var ce *topology.ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, broker.ErrConflict) || len(res.Applied) != 0 {
				t.Fatalf("apply: want a refusal with nothing applied, got %d applied, %v", len(res.Applied), err)
			}
			if after := snapshot(t, e.b, prefix); !reflect.DeepEqual(before, after) {
				t.Fatalf("the broker changed after a refused apply (-before +after):\n%s", testdiff.Diff(before, after))
			}
			// The connection is still good for the next command.
			if _, err := e.b.ReadRabbitTopology(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// deaths converts an x-death header.
func deaths(h amqp.Table) []broker.DeathEntry {
	var out []broker.DeathEntry
	list, _ := h["x-death"].([]any)
	for _, e := range list {
		tb, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		d := broker.DeathEntry{}
		d.Queue, _ = tb["queue"].(string)
		d.Reason, _ = tb["reason"].(string)
		d.Exchange, _ = tb["exchange"].(string)
		d.Count, _ = tb["count"].(int64)
		out = append(out, d)
	}
	return out
}

func deathCount(ds []broker.DeathEntry, queue, reason string) int64 {
	for _, d := range ds {
		if d.Queue == queue && d.Reason == reason {
			return d.Count
		}
	}
	return 0
}

// TestRetryLadderBehaviour publishes to the main exchange and fails every
// attempt: the message comes back from each tier with an x-death entry, and
// after max_attempts it lands in the dead queue.
func TestRetryLadderBehaviour(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tiers       string
		maxAttempts int
		wantTiers   []int // the tier each failed attempt goes to; -1 dead
	}{
		{"one-tier", "[{delay: 300ms}]", 3, []int{0, 0, -1}},
		{"two-tiers", "[{delay: 100ms}, {delay: 300ms}]", 4, []int{0, 1, 1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openRabbit(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prefix := brokertest.Name(t, "l") + "."
			cleanupRabbit(t, e, prefix)
			spec := fmt.Sprintf(`version: 1
name_prefix: %s
rabbitmq:
  defaults: {queue_type: classic}
  retry_ladders:
    - name: order
      main: {routing_keys: [order.created]}
      tiers: %s
      max_attempts: %d
`, prefix, tc.tiers, tc.maxAttempts)
			m, err := topology.LoadBytes("ladder.yaml", []byte(spec))
			if err != nil {
				t.Fatal(err)
			}
			if fs := topology.Lint(m); topology.CountSeverity(fs, topology.SevError) > 0 {
				t.Fatalf("lint: %v", fs)
			}
			if _, err := topology.Apply(ctx, e.b, mustPlan(t, e.b, m, topology.PlanOptions{}), nil); err != nil {
				t.Fatal(err)
			}
			l, ok := m.Ladder("order")
			if !ok {
				t.Fatal("no ladder")
			}
			ch, err := e.conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			if err := ch.Confirm(false); err != nil {
				t.Fatal(err)
			}
			publish := func(exchange, key string, msg amqp.Publishing) {
				t.Helper()
				dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, msg)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := dc.WaitContext(ctx); err != nil || !ok {
					t.Fatalf("publish to %s not confirmed: %v", exchange, err)
				}
			}
			publish(l.MainExchange, "order.created", amqp.Publishing{MessageId: "order-42", Body: []byte(`{"order":42}`), DeliveryMode: amqp.Persistent})
			deliveries, err := ch.Consume(l.MainQueue, "", false, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			for attempt, want := range tc.wantTiers {
				var d amqp.Delivery
				select {
				case d = <-deliveries:
				case <-ctx.Done():
					t.Fatalf("attempt %d never arrived in %s", attempt+1, l.MainQueue)
				}
				hist := deaths(d.Headers)
				if attempt == 0 && len(hist) != 0 {
					t.Fatalf("first delivery already has x-death %v", hist)
				}
				if attempt > 0 {
					var expired int64
					for _, tier := range l.Tiers {
						expired += deathCount(hist, tier.Queue, "expired")
					}
					if expired < 1 {
						t.Fatalf("attempt %d: x-death counts no expiry from the tiers:\n%s", attempt+1, testdiff.Render(hist))
					}
				}
				step := l.OnFailure(d.Headers, hist)
				if step.Attempt != int64(attempt+1) {
					t.Fatalf("OnFailure says attempt %d, want %d", step.Attempt, attempt+1)
				}
				switch {
				case want == -1:
					if !step.Dead {
						t.Fatalf("attempt %d: want dead, got tier %d", attempt+1, step.Tier)
					}
					publish(step.Exchange, d.RoutingKey, amqp.Publishing{MessageId: d.MessageId, Headers: d.Headers, Body: d.Body, DeliveryMode: amqp.Persistent})
					if err := d.Ack(false); err != nil {
						t.Fatal(err)
					}
				case step.Dead || step.Tier != want:
					t.Fatalf("attempt %d: want tier %d, got tier %d, dead %t", attempt+1, want, step.Tier, step.Dead)
				case step.Reject:
					if err := d.Nack(false, false); err != nil {
						t.Fatal(err)
					}
				default:
					publish(step.Exchange, step.RoutingKey, amqp.Publishing{MessageId: d.MessageId, Headers: amqp.Table(topology.RetryHeaders(d.Headers, step)), Body: d.Body, DeliveryMode: amqp.Persistent})
					if err := d.Ack(false); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The message is now parked in the dead queue, with its history.
			for {
				msg, ok, err := ch.Get(l.DeadQueue, true)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					if string(msg.Body) != `{"order":42}` || msg.MessageId != "order-42" {
						t.Fatalf("dead queue holds %q (%s)", msg.Body, msg.MessageId)
					}
					if len(deaths(msg.Headers)) == 0 {
						t.Fatal("the parked message lost its x-death history")
					}
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("nothing arrived in %s", l.DeadQueue)
				case <-time.After(20 * time.Millisecond):
				}
			}
			select {
			case d := <-deliveries:
				t.Fatalf("the main queue got the message again after it was parked; x-death:\n%s", testdiff.Render(deaths(d.Headers)))
			default:
			}
		})
	}
}
