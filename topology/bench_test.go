package topology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/topology"
)

// spec50 declares 25 quorum work queues, each with its DLQ (50 queues), on
// one exchange and one dead-letter exchange, dead-lettering by policy:
// 2 exchanges, 25 policies, 50 queues, 50 bindings.
func spec50(prefix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname_prefix: %s\nrabbitmq:\n  defaults: {queue_type: quorum}\n  work_queues:\n", prefix)
	for i := range 25 {
		fmt.Fprintf(&b, "    - {exchange: jobs.x, queue: job%02d.q, routing_keys: [job%02d.*], delivery_limit: 5,\n", i, i)
		fmt.Fprintf(&b, "       dead_letter: {exchange: jobs.dlx, routing_key: job%02d, queue: job%02d.dlq, binding_key: job%02d}}\n", i, i, i)
	}
	return b.String()
}

// BenchmarkTopology50Queues measures plan on an empty vhost, apply, and the
// no-change plan after it, for a 50-queue spec against the test RabbitMQ.
func BenchmarkTopology50Queues(b *testing.B) {
	env := brokertest.RabbitMQ(b)
	ctx := context.Background()
	rb, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL, Password: env.Password})
	if err != nil {
		b.Fatal(err)
	}
	defer rb.Close()
	var planEmpty, apply, planAgain time.Duration
	for i := 0; i < b.N; i++ {
		prefix := brokertest.Name(b, fmt.Sprint(i)) + "."
		m, err := topology.LoadBytes("bench.yaml", []byte(spec50(prefix)))
		if err != nil {
			b.Fatal(err)
		}
		if n := len(m.Rabbit.Queues); n != 50 {
			b.Fatalf("%d queues", n)
		}
		t0 := time.Now()
		p, err := topology.MakePlan(ctx, rb, m, topology.PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := topology.Apply(ctx, rb, p, nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		p2, err := topology.MakePlan(ctx, rb, m, topology.PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if p2.HasChanges() || p.Summary().Create != 127 {
			b.Fatalf("plan created %d, want 127; second plan %s, want no changes", p.Summary().Create, testdiff.Render(p2.Summary()))
		}
		planEmpty += t1.Sub(t0)
		apply += t2.Sub(t1)
		planAgain += t3.Sub(t2)
		// Clean up with a pruning apply of an empty spec under the prefix.
		em, _ := topology.LoadBytes("empty.yaml", []byte("version: 1\nname_prefix: "+prefix+"\nrabbitmq: {}\n"))
		pp, err := topology.MakePlan(ctx, rb, em, topology.PlanOptions{Prune: true, PruneScope: prefix})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := topology.Apply(ctx, rb, pp, nil); err != nil {
			b.Fatal(err)
		}
		if top, _ := rb.ReadRabbitTopology(ctx); leftover(top, prefix) > 0 {
			b.Fatalf("%d objects left after pruning", leftover(top, prefix))
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(planEmpty.Milliseconds())/n, "plan-empty-ms")
	b.ReportMetric(float64(apply.Milliseconds())/n, "apply-ms")
	b.ReportMetric(float64(planAgain.Milliseconds())/n, "plan-nochange-ms")
}

func leftover(t broker.RabbitTopology, prefix string) int {
	n := 0
	for _, x := range t.Exchanges {
		if strings.HasPrefix(x.Name, prefix) {
			n++
		}
	}
	for _, q := range t.Queues {
		if strings.HasPrefix(q.Name, prefix) {
			n++
		}
	}
	for _, p := range t.Policies {
		if strings.HasPrefix(p.Name, prefix) {
			n++
		}
	}
	return n
}
