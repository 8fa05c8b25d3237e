package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

func problems(t *testing.T, src string) []Problem {
	t.Helper()
	_, err := LoadBytes("spec.yaml", []byte(src))
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SpecError, got %v", err)
	}
	return se.Problems
}

func TestSpecErrorsHaveLineAndColumn(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // "line:col: substring"
	}{
		{"empty", "", "1:1: spec is empty"},
		{"not a mapping", "- a\n- b\n", "1:1: spec must be a mapping"},
		{"no version", "rabbitmq: {defaults: {queue_type: classic}}\n", "1:1: spec needs `version`"},
		{"future version", "version: 2\n", "1:10: spec version 2 is not supported"},
		{"unknown field", "version: 1\nrabbitmq:\n  queus: []\n", "3:3: unknown field `queus` in rabbitmq: did you mean `queues`?"},
		{"bad enum", "version: 1\nrabbitmq:\n  queues:\n    - name: a\n      type: lazy\n", "5:13: `type` is \"lazy\": use one of classic, quorum, stream"},
		{"bad duration", "version: 1\nrabbitmq:\n  queues:\n    - {name: a, type: classic, message_ttl: 15}\n", "4:45: `message_ttl` must be a duration with a unit"},
		{"missing required", "version: 1\nrabbitmq:\n  retry_ladders:\n    - name: x\n      tiers: [{delay: 1s}]\n", "4:7: retry ladder needs `main`"},
		{"duplicate key", "version: 1\nversion: 1\n", "2:1: `version` appears twice"},
		{"yaml syntax", "version: 1\nrabbitmq:\n  queues: [\n", "invalid YAML"},
		{"tab indentation", "version: 1\nrabbitmq:\n\tqueues: []\n", "spec.yaml:3:2: invalid YAML"},
		{"no type", "version: 1\nrabbitmq:\n  queues:\n    - name: a\n", "4:7: queue `a` has no queue type"},
		{"delivery limit on classic", "version: 1\nrabbitmq:\n  queues:\n    - {name: a, type: classic, delivery_limit: 3}\n", "4:7: queue `a`: `delivery_limit` needs a quorum queue"},
		{"duplicate different queue", "version: 1\nrabbitmq:\n  defaults: {queue_type: classic}\n  queues:\n    - {name: a}\n    - {name: a, durable: false}\n", "6:7: queue `a` is declared twice with different settings (first at spec.yaml:5:7)"},
		{"sqs content dedup on standard", "version: 1\nsqs:\n  queues:\n    - {name: a, content_based_deduplication: true}\n", "4:7: sqs queue `a`: `content_based_deduplication` is for FIFO queues"},
		{"sqs bad range", "version: 1\nsqs:\n  queues:\n    - {name: a, receive_wait: 30s}\n", "`receive_wait` must be whole seconds from 0s to 20s"},
		{"sqs bad name", "version: 1\nsqs:\n  queues:\n    - {name: a.b}\n", "SQS names are 1 to 80"},
		{"amq reserved", "version: 1\nrabbitmq:\n  exchanges:\n    - {name: amq.mine, type: topic}\n", "reserved by RabbitMQ"},
		{"two documents", "version: 1\n---\nversion: 1\n", "more than one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, tc.src)
			var all []string
			for _, p := range ps {
				all = append(all, p.String())
				if strings.Contains(p.String(), tc.want) {
					if !strings.HasPrefix(p.String(), "spec.yaml:") {
						t.Errorf("problem without file name: %s", p)
					}
					return
				}
			}
			t.Fatalf("want a problem containing %q, got:\n%s", tc.want, strings.Join(all, "\n"))
		})
	}
}

func TestSpecReportsEveryProblemAtOnce(t *testing.T) {
	ps := problems(t, "version: 1\nrabbitmq:\n  queus: []\n  exchanges:\n    - {name: a, type: topic, durable: yes please}\n")
	if len(ps) != 2 {
		t.Fatalf("want 2 problems, got %v", ps)
	}
}

func TestDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{"300ms": 300 * time.Millisecond, "15s": 15 * time.Second, "1m": time.Minute, "4d": 96 * time.Hour, "1.5d": 36 * time.Hour} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := ParseDuration(FormatDuration(got)); back != got {
			t.Errorf("FormatDuration(%v) = %q does not read back", got, FormatDuration(got))
		}
	}
	for _, bad := range []string{"", "15", "-1s", "xd", "1y"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestClassicLadderExpandsToTheDocumentedNames(t *testing.T) {
	m := loadExample(t, "retry-ladder.yaml")
	r := m.Rabbit
	want := map[string]string{"order.main.x": "topic", "order.retry.x": "direct", "order.dead.x": "fanout"}
	if len(r.Exchanges) != 3 {
		t.Fatalf("exchanges %q, want 3", testdiff.Pick(r.Exchanges, func(x Exchange) string { return x.Name }))
	}
	for _, x := range r.Exchanges {
		if want[x.Name] != x.Type || !x.Durable {
			t.Errorf("exchange %s %s durable=%v", x.Name, x.Type, x.Durable)
		}
	}
	var names []string
	for _, q := range r.Queues {
		names = append(names, q.Name)
		if !q.Durable || len(q.Arguments) != 0 {
			t.Errorf("queue %s: durable=%v args=%v (policy mode keeps queues bare)", q.Name, q.Durable, q.Arguments)
		}
	}
	if strings.Join(names, ",") != "order.main.q,order.retry.q,order.dead.q" {
		t.Errorf("queues %v", names)
	}
	pol := map[string]map[string]any{}
	for _, p := range r.Policies {
		pol[p.Name] = p.Definition
	}
	if d := pol["order.main.q.dlq-policy"]; d["dead-letter-exchange"] != "order.retry.x" || d["dead-letter-routing-key"] != "order.retry" {
		t.Errorf("main policy %v", d)
	}
	if d := pol["order.retry.q.dlq-policy"]; d["dead-letter-exchange"] != "order.main.x" || d["dead-letter-routing-key"] != "order.created" || d["message-ttl"] != int64(15000) {
		t.Errorf("retry policy %v", d)
	}
	l, _ := m.Ladder("order")
	if l.MaxAttempts != 3 || len(l.Tiers) != 1 || l.Tiers[0].RoutingKey != "order.retry" {
		t.Errorf("ladder: max attempts %d, tier routing keys %q; want 3, [order.retry]", l.MaxAttempts, testdiff.Pick(l.Tiers, func(t LadderTier) string { return t.RoutingKey }))
	}
}

func TestArgumentsModeAndPrefix(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte(`version: 1
name_prefix: stg-
rabbitmq:
  defaults: {queue_type: quorum, dead_letter_via: arguments}
  work_queues:
    - exchange: tasks.exchange
      queue: work.queue
      routing_keys: [task.create]
      delivery_limit: 5
      dead_letter: {exchange: dlq.exchange, routing_key: dead.letter, queue: dlq.queue}
`))
	if err != nil {
		t.Fatal(err)
	}
	q := m.Rabbit.Queues[0]
	if q.Name != "stg-work.queue" || q.Arguments["x-dead-letter-exchange"] != "stg-dlq.exchange" ||
		q.Arguments["x-dead-letter-routing-key"] != "dead.letter" || q.Arguments["x-delivery-limit"] != int64(5) ||
		q.Arguments["x-queue-type"] != "quorum" {
		t.Fatalf("queue (-want +got):\n%s", testdiff.Diff(
			[]any{"stg-work.queue", "stg-dlq.exchange", "dead.letter", int64(5), "quorum"},
			[]any{q.Name, q.Arguments["x-dead-letter-exchange"], q.Arguments["x-dead-letter-routing-key"], q.Arguments["x-delivery-limit"], q.Arguments["x-queue-type"]}))
	}
	if len(m.Rabbit.Policies) != 0 {
		t.Errorf("arguments mode generated policies %q", testdiff.Pick(m.Rabbit.Policies, func(p Policy) string { return p.Name }))
	}
	b := m.Rabbit.Bindings[1]
	if b.Source != "stg-dlq.exchange" || b.Destination != "stg-dlq.queue" || b.RoutingKey != "#" {
		t.Errorf("dlq binding %s → %s with %q; want stg-dlq.exchange → stg-dlq.queue with #", b.Source, b.Destination, b.RoutingKey)
	}
}

func TestSchemaReferenceCoversEveryTopLevelSection(t *testing.T) {
	ref := SchemaReference()
	for _, s := range []string{"retry_ladders", "work_queues", "dead_letter_via", "redrive_allow", "max_receive_count", "name_prefix"} {
		if !strings.Contains(ref, s) {
			t.Errorf("reference lacks %s", s)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the spec parser: it must never panic,
// and every problem it reports must carry a line.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/examples/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\nrabbitmq: &a\n  queues: *a\n"))
	f.Add([]byte("version: 1\nsqs: {queues: [{name: x, dead_letter: {queue: x, max_receive_count: 0}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("non-spec error %T: %v", err, err)
			}
			for _, p := range se.Problems {
				if p.Pos.Line < 1 || p.Pos.Col < 1 {
					t.Fatalf("problem without a position: %s", p)
				}
			}
			return
		}
		_ = Lint(m)
		var sb strings.Builder
		if err := WriteGraph(&sb, m, GraphMermaid); err != nil {
			t.Fatal(err)
		}
	})
}
