package topology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
