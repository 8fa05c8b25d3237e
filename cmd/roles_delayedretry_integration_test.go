package cmd

// RabbitMQ 4.3's native delayed retry (x-delayed-retry-type on a quorum
// queue) keeps a failed message in its own queue for a while instead of
// sending it through a TTL retry ladder: the queue is still the work
// queue, and what its delivery limit dead-letters is a dead-letter queue
// whose messages go back to it.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// failUntilDeadLettered fails every delivery of q's messages, as a
// consumer that crashes does (a channel closed with unacknowledged
// deliveries: a failed delivery on 4.3, where a requeue no longer counts),
// until dlq holds n messages. A delayed retry makes each message wait
// before its next delivery, so this polls, with a deadline.
func failUntilDeadLettered(t *testing.T, r *riRabbit, q, dlq string, n int) (failed int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for r.depth(dlq) != n {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s to hold %d messages dead-lettered from %s by its delivery limit: it holds %d after %d failed deliveries",
				dlq, n, q, r.depth(dlq), failed)
		}
		ch, err := r.conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, ok, err := ch.Get(q, false)
			if err != nil {
				t.Fatalf("get from %s: %v", q, err)
			}
			if !ok {
				break
			}
			failed++
		}
		ch.Close()
		time.Sleep(5 * time.Millisecond)
	}
	return failed
}

func TestQueuesAndOriginIntegrationRabbitDelayedRetry(t *testing.T) {
	r := newRIRabbit(t)
	since := rabbitrules.DelayedRetrySince
	if v := brokertest.RabbitMQ(t).Version; !rabbitrules.ParseVersion(v).AtLeast(since.Major, since.Minor) {
		t.Skipf("RabbitMQ %s has no native delayed retry (%s and later): it accepts x-delayed-retry-type and ignores it", v, since)
	}
	// Names that follow no dead-letter or retry convention: the roles
	// must come from the topology.
	base := brokertest.Name(t, "dr")
	// As a topology spec's work queue declares it: the dead letters go
	// to a topic exchange bound to the dead-letter queue with "#".
	held := r.queue(base+".held", amqp.Table{"x-queue-type": "quorum"})
	dlx := base + ".dlx"
	if err := r.ch.ExchangeDeclare(dlx, "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := r.conn.Channel(); err == nil {
			ch.ExchangeDelete(dlx, false, false)
			ch.Close()
		}
	})
	r.bind(held, "#", dlx)
	orders := r.queue(base+".orders", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(1),
		"x-delayed-retry-type": "failed", "x-delayed-retry-min": int32(5), "x-delayed-retry-max": int32(20),
		"x-dead-letter-exchange": dlx})
	ex := r.exchange(base + ".x")
	r.bind(orders, "order.created", ex)
	var ps []amqp.Publishing
	for i := range 3 {
		ps = append(ps, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), DeliveryMode: amqp.Persistent})
	}
	r.publish(ex, "order.created", ps...)
	// Through the built binary, as a user runs it, with its own state and
	// config folders.
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	dlq := func(args ...string) (string, string, ExitCode) {
		stdout, stderr, code, _ := runBinary(t, env, append(slices.Clone(r.args), args...)...)
		return stdout, stderr, code
	}
	// The roles come from the topology, with or without dead letters.
	roles := func(when string) {
		t.Helper()
		stdout, stderr, code := dlq("queues", base, "-o", "json")
		if code != ExitOK {
			t.Fatalf("queues: exit %d: %s", code, stderr)
		}
		var qs []struct {
			Name       string `json:"name"`
			Role       string `json:"role"`
			RoleSource string `json:"role_source"`
		}
		if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
			t.Fatalf("queues -o json: %v: %s", err, stdout)
		}
		got := map[string]string{}
		for _, q := range qs {
			got[q.Name] = q.Role + " from " + q.RoleSource
		}
		want := map[string]string{orders: "work from topology", held: "dlq from topology"}
		if !maps.Equal(got, want) {
			t.Errorf("roles %s:\n%s", when, testdiff.Diff(want, got))
		}
	}
	roles("before any message died")
	failed := failUntilDeadLettered(t, r, orders, held, len(ps))
	t.Logf("%d failed deliveries dead-lettered %d messages", failed, len(ps))

	roles("with the dead letters")

	// The dead letters carry x-death from the delivery limit: their origin
	// is the queue with the delayed retry.
	stdout, stderr, code := dlq("peek", held, "-o", "json")
	if code != ExitOK {
		t.Fatalf("peek: exit %d: %s", code, stderr)
	}
	var peeked []struct {
		ID      string         `json:"id"`
		Headers map[string]any `json:"headers"`
	}
	if err := json.Unmarshal([]byte(stdout), &peeked); err != nil || len(peeked) != len(ps) {
		t.Fatalf("peek -o json: %d messages, want %d (%v): %s", len(peeked), len(ps), err, stdout)
	}
	for _, d := range peeked {
		deaths, _ := d.Headers["x-death"].([]any)
		if len(deaths) == 0 {
			t.Fatalf("%s has no x-death: %v", d.ID, d.Headers)
		}
		first, _ := deaths[len(deaths)-1].(map[string]any)
		if first["queue"] != orders || first["reason"] != "delivery_limit" {
			t.Errorf("%s: first death %v, want queue %s, reason delivery_limit", d.ID, first, orders)
		}
	}

	// To origin is the exchange and routing key of that death, which
	// route to the queue with the delayed retry.
	dest := map[string]int64{"exchange:" + ex + ":order.created": int64(len(ps))}
	rules := map[string]string{"exchange:" + ex + ":order.created": "x-death"}
	stdout, stderr, code = dlq("redrive", held, "--to", "origin", "--dry-run", "-o", "json")
	if code != ExitOK {
		t.Fatalf("redrive --dry-run: exit %d: %s %s", code, stdout, stderr)
	}
	if s := riSummary(t, stdout); !s.DryRun || s.Moved != 0 || !maps.Equal(s.Destinations, dest) || !maps.Equal(s.OriginRules, rules) {
		t.Errorf("dry run: dry_run %v, moved %d, would move %v by %v; want %v by %v: %s", s.DryRun, s.Moved, s.Destinations, s.OriginRules, dest, rules, stdout)
	}
	if n := r.depth(orders); n != 0 {
		t.Errorf("the dry run put %d messages into %s", n, orders)
	}
	if n := r.depth(held); n != len(ps) {
		t.Errorf("%s holds %d messages after the dry run, want %d", held, n, len(ps))
	}

	stdout, stderr, code = dlq("redrive", held, "--to", "origin", "--yes", "-o", "json")
	if code != ExitOK {
		t.Fatalf("redrive: exit %d: %s %s", code, stdout, stderr)
	}
	if s := riSummary(t, stdout); s.Moved != int64(len(ps)) || !maps.Equal(s.Destinations, dest) || !maps.Equal(s.OriginRules, rules) {
		t.Errorf("redrive moved %d to %v by %v; want %v by %v: %s", s.Moved, s.Destinations, s.OriginRules, dest, rules, stdout)
	}
	if n := r.depth(held); n != 0 {
		t.Errorf("%s still holds %d messages after the redrive", held, n)
	}
	r.waitDepth(orders, len(ps))
	var ids []string
	for _, d := range r.drain(orders) {
		ids = append(ids, d.MessageId)
	}
	if want := []string{"m-0", "m-1", "m-2"}; !slices.Equal(riSorted(ids), want) {
		t.Errorf("%s holds %v after the redrive, want %v", orders, ids, want)
	}
}
