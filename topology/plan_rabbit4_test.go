package topology

import (
	"context"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// versionedVhost is a fakeVhost that says its server version.
type versionedVhost struct {
	fakeVhost
	version string
	asked   int
}

func (f *versionedVhost) ServerVersion(context.Context) (string, error) {
	f.asked++
	return f.version, nil
}

func TestPlanWarnsSilentDropOn4x(t *testing.T) {
	const spec = `version: 1
rabbitmq:
  exchanges: [{name: d, type: fanout}]
  queues:
    - {name: bare, type: quorum}
    - {name: limited, type: quorum, delivery_limit: 5}
    - {name: off, type: quorum, arguments: {x-delivery-limit: -1}}
    - {name: with-dlx, type: quorum, delivery_limit: 5, dead_letter: {exchange: d}}
    - {name: by-spec-policy, type: quorum}
    - {name: by-broker-policy, type: quorum}
    - {name: classic, type: classic}
  policies:
    - {name: spec-dlx, pattern: '^by-spec-policy$', definition: {dead-letter-exchange: d}}
`
	m, err := LoadBytes("s.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	brokerPolicy := broker.Policy{Name: "ops-dlx", Pattern: "^by-broker", ApplyTo: "queues", Priority: 5, Definition: map[string]any{"dead-letter-exchange": "d"}}
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{"4.0.5", []string{"bare"}},
		{"4.2.1", []string{"bare"}},
		{"3.10.8", nil},
		{"3.13.7", nil},
	} {
		b := &versionedVhost{fakeVhost: fakeVhost{broker.RabbitTopology{Vhost: "/", Policies: []broker.Policy{brokerPolicy}}}, version: tc.version}
		p, err := MakePlan(context.Background(), b, m, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range p.Warnings {
			if strings.Contains(w, "default limit of 20") {
				got = append(got, strings.Split(w, "`")[1])
				if !strings.Contains(w, "RabbitMQ "+tc.version) || !strings.Contains(w, "without a trace") || !strings.Contains(w, "dead-letter-exchange") {
					t.Errorf("%s: warning %q", tc.version, w)
				}
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: warned about %v, want %v (warnings %q)", tc.version, got, tc.want, p.Warnings)
		}
		if p.ServerVersion != tc.version || b.asked != 1 {
			t.Errorf("%s: plan version %q, asked %d times", tc.version, p.ServerVersion, b.asked)
		}
	}
	// A broker that does not say its version gets no such warning.
	p, err := MakePlan(context.Background(), &fakeVhost{broker.RabbitTopology{Vhost: "/"}}, m, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range p.Warnings {
		if strings.Contains(w, "default limit of 20") {
			t.Errorf("warning without a version: %s", w)
		}
	}
}

// TestPlanClassicTypeArgument: RabbitMQ 4.x records x-queue-type: classic
// on a classic queue declared without it; a spec without it (or with it)
// matches either way.
func TestPlanClassicTypeArgument(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte("version: 1\nrabbitmq:\n  queues:\n    - {name: plain, type: classic}\n    - {name: typed, type: classic, arguments: {x-queue-type: classic}}\n    - {name: other, type: classic, arguments: {x-max-length: 5}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	top := broker.RabbitTopology{Vhost: "/", Queues: []broker.QueueDecl{
		{Name: "plain", Durable: true, Type: "classic", Arguments: map[string]any{"x-queue-type": "classic"}},
		{Name: "typed", Durable: true, Type: "classic"},
		{Name: "other", Durable: true, Type: "classic", Arguments: map[string]any{"x-queue-type": "classic", "x-max-length": int64(6)}},
	}}
	p, err := MakePlan(context.Background(), &fakeVhost{top}, m, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Unchanged != 2 || len(p.Changes) != 1 || p.Changes[0].Name != "other" || len(p.Changes[0].Diffs) != 1 || p.Changes[0].Diffs[0].Field != "arguments.x-max-length" {
		t.Errorf("plan: unchanged %d, want 2 and one change of other's arguments.x-max-length; changes:\n%s", p.Unchanged, testdiff.Render(p.Changes))
	}
}
