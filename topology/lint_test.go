package topology

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func lintOf(t *testing.T, src string) []Finding {
	t.Helper()
	m, err := LoadBytes("l.yaml", []byte("version: 1\nlint: {ignore: [classic-queue]}\n"+src))
	if err != nil {
		t.Fatal(err)
	}
	return Lint(m)
}

func TestLintRules(t *testing.T) {
	for _, tc := range []struct {
		name, src, rule string
		sev             Severity
		line            int
	}{
		{"dlq into itself", `rabbitmq:
  defaults: {queue_type: classic}
  exchanges: [{name: dlx, type: fanout}]
  queues:
    - {name: q, dead_letter: {exchange: dlx}, bind: [{exchange: dlx}]}
`, "dlx-self", SevError, 7},
		{"cycle without ttl", `rabbitmq:
  defaults: {queue_type: classic}
  exchanges: [{name: x, type: direct}]
  queues:
    - {name: a, dead_letter: {exchange: x, routing_key: b}, bind: [{exchange: x, routing_key: a}]}
    - {name: b, dead_letter: {exchange: x, routing_key: a}, bind: [{exchange: x, routing_key: b}]}
`, "dlx-cycle", SevError, 7},
		{"dlx routes nowhere", `rabbitmq:
  defaults: {queue_type: classic}
  work_queues:
    - exchange: tasks.exchange
      queue: work.queue
      routing_keys: [task.create]
      dead_letter: {exchange: dlq.exchange, routing_key: dead.letter, queue: dlq.queue, binding_key: "other.#"}
`, "dlx-unroutable", SevError, 6},
		{"ladder ttl order", `rabbitmq:
  defaults: {queue_type: classic}
  retry_ladders:
    - name: o
      main: {routing_keys: [k]}
      tiers: [{delay: 1m}, {delay: 15s}]
`, "ladder-ttl-order", SevWarning, 8},
		{"quorum without limit", `rabbitmq:
  work_queues:
    - {exchange: x, queue: q, routing_keys: [k], queue_type: quorum, dead_letter: {exchange: d, queue: dq}}
`, "quorum-no-delivery-limit", SevWarning, 5},
		{"ttl without dlx", `rabbitmq:
  queues: [{name: q, type: quorum, delivery_limit: 3, message_ttl: 1m}]
`, "ttl-no-dlx", SevWarning, 4},
		{"limit without dlx", `rabbitmq:
  queues: [{name: q, type: quorum, delivery_limit: 5}]
`, "limit-no-dlx", SevWarning, 4},
		{"undeclared dlx", `rabbitmq:
  queues: [{name: q, type: quorum, delivery_limit: 3, dead_letter: {exchange: elsewhere}}]
`, "dlx-undeclared", SevWarning, 4},
		{"sqs retention", `sqs:
  pairs:
    - {name: a, source: {retention: 7d}, dead_letter_queue: {retention: 2d}}
`, "sqs-dlq-retention", SevError, 5},
		{"fifo with standard dlq", `sqs:
  queues:
    - {name: a.fifo, dead_letter: {queue: a-dlq, max_receive_count: 3}}
    - {name: a-dlq, retention: 14d}
`, "sqs-fifo-mismatch", SevError, 5},
		{"redrive not allowed", `sqs:
  queues:
    - {name: a, dead_letter: {queue: d, max_receive_count: 3}}
    - {name: d, retention: 14d, redrive_allow: {permission: byQueue, sources: [b]}}
`, "sqs-redrive-denied", SevError, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := lintOf(t, tc.src)
			for _, f := range fs {
				if f.Rule == tc.rule {
					if f.Severity != tc.sev || f.Pos.Line != tc.line || f.Pos.File != "l.yaml" {
						t.Errorf("finding %s: want %s at line %d", f, tc.sev, tc.line)
					}
					return
				}
			}
			t.Fatalf("no %s finding; got %v", tc.rule, fs)
		})
	}
}

func TestLintCleanLadderAndIgnore(t *testing.T) {
	fs := lintOf(t, `rabbitmq:
  defaults: {queue_type: classic}
  retry_ladders:
    - name: o
      main: {routing_keys: [o.created]}
      tiers: [{delay: 15s}, {delay: 1m}]
`)
	if len(fs) != 0 {
		t.Fatalf("a correct ladder has findings: %v", fs)
	}
}

func TestLadderOnFailure(t *testing.T) {
	l := Ladder{MainQueue: "m", RetryExchange: "r", DeadExchange: "d", MaxAttempts: 4,
		Tiers: []LadderTier{{Queue: "t1", RoutingKey: "k1"}, {Queue: "t2", RoutingKey: "k2"}}}
	hist := func(t1, t2 int64) []broker.DeathEntry {
		var h []broker.DeathEntry
		if t2 > 0 {
			h = append(h, broker.DeathEntry{Queue: "t2", Reason: "expired", Count: t2})
		}
		if t1 > 0 {
			h = append(h, broker.DeathEntry{Queue: "t1", Reason: "expired", Count: t1}, broker.DeathEntry{Queue: "m", Reason: "rejected", Count: t1})
		}
		return h
	}
	attempts := func(n int32) map[string]any { return map[string]any{AttemptsHeader: n, "x-death": "dropped"} }
	for _, tc := range []struct {
		headers map[string]any
		h       []broker.DeathEntry
		want    Step
	}{
		{nil, nil, Step{Attempt: 1, Tier: 0, Reject: true, Exchange: "r", RoutingKey: "k1"}},
		{nil, hist(1, 0), Step{Attempt: 2, Tier: 1, Exchange: "r", RoutingKey: "k2"}},
		// A copy the consumer published to tier 2 after attempt 2: its death
		// history starts again at the tier (RabbitMQ 3.13 and later, and any
		// version once RetryHeaders dropped the old one).
		{attempts(2), hist(0, 1), Step{Attempt: 3, Tier: 1, Exchange: "r", RoutingKey: "k2"}},
		{attempts(3), hist(0, 1), Step{Attempt: 4, Dead: true, Exchange: "d"}},
		{map[string]any{AttemptsHeader: "3"}, hist(1, 0), Step{Attempt: 2, Tier: 1, Exchange: "r", RoutingKey: "k2"}},
		// Counts at the int64 limits, from a hostile or corrupt header,
		// neither wrap around nor pick a tier that does not exist.
		{nil, hist(math.MaxInt64, 0), Step{Attempt: math.MaxInt64, Dead: true, Exchange: "d"}},
		{attempts(math.MaxInt32), hist(0, math.MaxInt64), Step{Attempt: math.MaxInt64, Dead: true, Exchange: "d"}},
		{nil, []broker.DeathEntry{{Queue: "t1", Reason: "expired", Count: math.MinInt64}}, Step{Attempt: 1, Tier: 0, Reject: true, Exchange: "r", RoutingKey: "k1"}},
	} {
		if got := l.OnFailure(tc.headers, tc.h); got != tc.want {
			t.Errorf("OnFailure(%v, %v) (-want +got):\n%s", tc.headers, tc.h, testdiff.Diff(tc.want, got))
		}
	}
	got := RetryHeaders(map[string]any{"tenant": "acme", "x-death": []any{}, "x-first-death-queue": "m", "x-last-death-reason": "expired"}, Step{Attempt: 2})
	want := map[string]any{"tenant": "acme", AttemptsHeader: int64(2)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RetryHeaders = %v, want %v", got, want)
	}
}

// fakeVhost is a RabbitMQ vhost that only answers reads.
type fakeVhost struct{ top broker.RabbitTopology }

func (f *fakeVhost) System() broker.System { return broker.RabbitMQ }
func (f *fakeVhost) String() string        { return "amqp://fake/" }
func (f *fakeVhost) Close() error          { return nil }
func (f *fakeVhost) ReadRabbitTopology(context.Context) (broker.RabbitTopology, error) {
	return f.top, nil
}

func TestPlanPolicyUpdateInPlaceAndShadowWarning(t *testing.T) {
	m := loadExample(t, "retry-ladder.yaml")
	top := broker.RabbitTopology{Vhost: "/"}
	for _, x := range m.Rabbit.Exchanges {
		top.Exchanges = append(top.Exchanges, x.Exchange)
	}
	for _, q := range m.Rabbit.Queues {
		top.Queues = append(top.Queues, q.QueueDecl)
	}
	for _, b := range m.Rabbit.Bindings {
		top.Bindings = append(top.Bindings, b.Binding)
	}
	for _, p := range m.Rabbit.Policies {
		pp := p.Policy
		pp.Definition = map[string]any{}
		for k, v := range p.Definition {
			pp.Definition[k] = v
		}
		if pp.Name == "order.retry.q.dlq-policy" {
			pp.Definition["message-ttl"] = float64(10000) // JSON numbers
		}
		top.Policies = append(top.Policies, pp)
	}
	top.Policies = append(top.Policies, broker.Policy{Name: "ops-ha", Pattern: ".*", ApplyTo: "all", Priority: 20, Definition: map[string]any{"ha-mode": "all"}})
	p, err := MakePlan(context.Background(), &fakeVhost{top}, m, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Action != Update || p.Changes[0].Kind != "policy" ||
		len(p.Changes[0].Diffs) != 1 || p.Changes[0].Diffs[0].Old != int64(10000) || p.Changes[0].Diffs[0].New != int64(15000) {
		t.Fatalf("want one in-place policy update 10000 → 15000, got:\n%s", testdiff.Render(p.Changes))
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "`ops-ha` (priority 20)") {
		t.Errorf("no warning about the outranking policy: %v", p.Warnings)
	}
	if p.Unchanged != 10 {
		t.Errorf("unchanged %d", p.Unchanged)
	}
}

// TestLintQuorumSilentDrop: a quorum queue with no dead-letter exchange
// and no delivery limit drops messages on RabbitMQ 4.x (default limit 20).
func TestLintQuorumSilentDrop(t *testing.T) {
	rules := func(src string) map[string]Finding {
		got := map[string]Finding{}
		for _, f := range lintOf(t, src) {
			if f.Object == "queue q" {
				got[f.Rule] = f
			}
		}
		return got
	}
	for _, tc := range []struct {
		name, src string
		drop      bool
	}{
		{"no dlx, no limit", "rabbitmq:\n  queues: [{name: q, type: quorum}]\n", true},
		{"a parking lot too", "rabbitmq:\n  exchanges: [{name: d, type: fanout}]\n  queues:\n    - {name: src, type: quorum, delivery_limit: 3, dead_letter: {exchange: d}}\n    - {name: q, type: quorum, bind: [{exchange: d}]}\n", true},
		{"dlx by argument", "rabbitmq:\n  exchanges: [{name: d, type: fanout}]\n  queues: [{name: q, type: quorum, dead_letter: {exchange: d}}, {name: dq, type: quorum, delivery_limit: 3, bind: [{exchange: d}]}]\n", false},
		{"dlx by a spec policy", "rabbitmq:\n  exchanges: [{name: d, type: fanout}]\n  queues: [{name: q, type: quorum}]\n  policies: [{name: p, pattern: '^q$', definition: {dead-letter-exchange: d}}]\n", false},
		{"explicit limit", "rabbitmq:\n  queues: [{name: q, type: quorum, delivery_limit: 5}]\n", false},
		{"limit turned off", "rabbitmq:\n  queues: [{name: q, type: quorum, arguments: {x-delivery-limit: -1}}]\n", false},
		{"classic", "rabbitmq:\n  queues: [{name: q, type: classic}]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rules(tc.src)
			f, drop := got["quorum-silent-drop"]
			if drop != tc.drop {
				t.Fatalf("quorum-silent-drop = %v, want %v (findings %v)", drop, tc.drop, got)
			}
			if !drop {
				return
			}
			if f.Severity != SevWarning || !strings.Contains(f.Message, "on RabbitMQ 4.x the default limit of 20") ||
				!strings.Contains(f.Message, "dropped without a trace") || !strings.Contains(f.Message, "`dead_letter`") {
				t.Errorf("finding: %s", f)
			}
			if _, both := got["quorum-no-delivery-limit"]; both {
				t.Errorf("quorum-no-delivery-limit as well: %v", got)
			}
		})
	}
	m, err := LoadBytes("l.yaml", []byte("version: 1\nlint: {ignore: [quorum-silent-drop]}\nrabbitmq:\n  queues: [{name: q, type: quorum}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Lint(m) {
		if f.Rule == "quorum-silent-drop" {
			t.Errorf("ignored rule reported: %s", f)
		}
	}
}
