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
