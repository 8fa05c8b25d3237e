package topology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/topology"
)

// TestPlanSilentDropWarningRabbit: against the real broker, plan warns
// about a quorum queue without dead-letter exchange or delivery limit on
// RabbitMQ 4.x only.
func TestPlanSilentDropWarningRabbit(t *testing.T) {
	e := openRabbit(t)
	ctx := context.Background()
	ver, err := e.b.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bare := brokertest.Name(t, "bare")
	guarded := brokertest.Name(t, "guarded")
	spec := fmt.Sprintf("version: 1\nrabbitmq:\n  queues:\n    - {name: %s, type: quorum}\n    - {name: %s, type: quorum, delivery_limit: 5}\n", bare, guarded)
	m, err := topology.LoadBytes("s.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := topology.MakePlan(ctx, e.b, m, topology.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range p.Warnings {
		if strings.Contains(w, "default limit of 20") {
			warned = append(warned, w)
		}
	}
	v4 := strings.HasPrefix(ver, "4.")
	if p.ServerVersion != ver || (v4 && (len(warned) != 1 || !strings.Contains(warned[0], "`"+bare+"`"))) || (!v4 && len(warned) != 0) {
		t.Errorf("RabbitMQ %s (plan says %q): warnings %q", ver, p.ServerVersion, warned)
	}
}

// TestPlanQueueVersion1Rabbit: plan's prediction for a classic queue
// declared with x-queue-version 1 is what the server does: on RabbitMQ 4.3
// a conflict, and the declare is indeed refused; before, a queue that is
// created.
func TestPlanQueueVersion1Rabbit(t *testing.T) {
	e := openRabbit(t)
	ctx := context.Background()
	ver, err := e.b.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := brokertest.Name(t, "v1")
	cleanupRabbit(t, e, prefix)
	m, err := topology.LoadBytes("s.yaml", []byte(fmt.Sprintf("version: 1\nrabbitmq:\n  queues:\n    - {name: %s, type: classic, arguments: {x-queue-version: 1}}\n", prefix)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := topology.MakePlan(ctx, e.b, m, topology.PlanOptions{})
	if err != nil || len(p.Changes) != 1 {
		t.Fatalf("plan: %v, %d changes", err, len(p.Changes))
	}
	predicted := p.Changes[0].Action == topology.Conflict
	q := m.Rabbit.Queues[0].QueueDecl
	declareErr := e.b.ApplyRabbitChange(ctx, broker.RabbitChange{Action: broker.Declare, Queue: &q})
	if predicted != (declareErr != nil) || predicted != strings.HasPrefix(ver, "4.3") {
		t.Errorf("RabbitMQ %s: plan says %s (%s), the declare returned %v", ver, p.Changes[0].Action, p.Changes[0].Problem, declareErr)
	}
	t.Logf("RabbitMQ %s: plan %s; declare: %v", ver, p.Changes[0].Action, declareErr)
}

// TestDelayedRetryRabbit: a spec with a native delayed retry (arguments on
// one queue, a policy on another) plans, applies, exports and plans again
// with no change on RabbitMQ 4.3; on an earlier server, which would accept
// the settings and ignore them, its queues are conflicts.
func TestDelayedRetryRabbit(t *testing.T) {
	e := openRabbit(t)
	ctx := context.Background()
	ver, err := e.b.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := brokertest.Name(t, "dr")
	cleanupRabbit(t, e, prefix)
	spec := fmt.Sprintf(`version: 1
rabbitmq:
  exchanges: [{name: %[1]s.d, type: fanout}]
  queues:
    - {name: %[1]s.work, type: quorum, delivery_limit: 5, dead_letter: {exchange: %[1]s.d}, dead_letter_via: arguments,
       delayed_retry: {type: failed, min: 1s, max: 30s}}
    - {name: %[1]s.by-policy, type: quorum, dead_letter: {exchange: %[1]s.d}, dead_letter_via: policy, delayed_retry: {type: all, min: 500ms}}
    - {name: %[1]s.parked, type: quorum, delivery_limit: 5, bind: [{exchange: %[1]s.d}]}
`, prefix)
	m, err := topology.LoadBytes("s.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ver, "4.3") {
		p := mustPlan(t, e.b, m, topology.PlanOptions{})
		var conflicts []string
		for _, c := range p.Conflicts() {
			conflicts = append(conflicts, c.Name)
		}
		if len(conflicts) != 2 {
			t.Errorf("RabbitMQ %s: conflicts %q, want the two queues with a delayed retry", ver, conflicts)
		}
		return
	}
	roundTrip(t, e.b, m, prefix, rabbitObjects(m))
	top, err := e.b.ReadRabbitTopology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range top.Queues {
		if q.Name == prefix+".work" && (q.Arguments["x-delayed-retry-type"] != "failed" || fmt.Sprint(q.Arguments["x-delayed-retry-min"]) != "1000") {
			t.Errorf("queue %s on the broker: arguments %v", q.Name, q.Arguments)
		}
	}
}
