package topology

import (
	"context"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// TestLintSettingsAsRabbitMQ: lint reads a queue's TTL and delivery limit
// as RabbitMQ applies them, the lower of argument and policy (lint used to
// let the argument win).
func TestLintSettingsAsRabbitMQ(t *testing.T) {
	fs := lintOf(t, `rabbitmq:
  queues:
    - {name: q, type: quorum, arguments: {x-message-ttl: 60000, x-delivery-limit: 10}}
  policies:
    - {name: p, pattern: '^q$', definition: {message-ttl: 1000, delivery-limit: 5}}
`)
	var got []string
	for _, f := range fs {
		if f.Rule == "ttl-no-dlx" || f.Rule == "limit-no-dlx" {
			got = append(got, f.Message)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0]+got[1], "delivery limit of 5 ") || !strings.Contains(got[0]+got[1], "after 1000ms") {
		t.Errorf("findings %q, want a delivery limit of 5 and a TTL of 1000ms", got)
	}
}

// TestLintVersionArguments: lint says that RabbitMQ 4.3 refuses
// x-queue-version 1 and that x-queue-mode does nothing.
func TestLintVersionArguments(t *testing.T) {
	fs := lintOf(t, `rabbitmq:
  queues:
    - {name: v1, type: classic, arguments: {x-queue-version: 1}}
    - {name: v2, type: classic, arguments: {x-queue-version: 2}}
    - {name: lazy, type: classic, arguments: {x-queue-mode: lazy}}
`)
	got := map[string]string{}
	for _, f := range fs {
		if f.Rule == "queue-version-refused" || f.Rule == "queue-mode-ignored" {
			got[f.Object] = string(f.Severity) + " " + f.Rule
			if !strings.Contains(f.Message, "4.3") {
				t.Errorf("%s does not name RabbitMQ 4.3", f)
			}
		}
	}
	want := map[string]string{"queue v1": "warning queue-version-refused", "queue lazy": "info queue-mode-ignored"}
	if len(got) != len(want) || got["queue v1"] != want["queue v1"] || got["queue lazy"] != want["queue lazy"] {
		t.Errorf("findings %v, want %v", got, want)
	}
}

// TestPlanRefusesQueueVersion1On43: on 4.3 a queue declared with
// x-queue-version 1 is a conflict (RabbitMQ refuses it: "unsupported queue
// version '1'"), and x-queue-mode gets a warning; before 4.3 it is created.
func TestPlanRefusesQueueVersion1On43(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte(`version: 1
rabbitmq:
  queues:
    - {name: v1, type: classic, arguments: {x-queue-version: 1}}
    - {name: lazy, type: classic, arguments: {x-queue-mode: lazy}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		action  Action
		warned  bool
	}{{"4.3.6", Conflict, true}, {"4.0.5", Create, true}, {"3.10.8", Create, false}} {
		b := &versionedVhost{fakeVhost: fakeVhost{broker.RabbitTopology{Vhost: "/"}}, version: tc.version}
		p, err := MakePlan(context.Background(), b, m, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Changes {
			switch c.Name {
			case "v1":
				if c.Action != tc.action {
					t.Errorf("%s: queue v1 %s, want %s", tc.version, c.Action, tc.action)
				}
				if c.Action == Conflict && (!strings.Contains(c.Problem, "unsupported queue version") || c.Fix == "" || c.rabbit != nil) {
					t.Errorf("%s: problem %q, fix %q", tc.version, c.Problem, c.Fix)
				}
			case "lazy":
				if c.Action != Create {
					t.Errorf("%s: queue lazy %s, want create", tc.version, c.Action)
				}
			}
		}
		warned := strings.Contains(strings.Join(p.Warnings, "\n"), "`x-queue-mode: lazy` does nothing")
		if warned != tc.warned {
			t.Errorf("%s: x-queue-mode warning %v, want %v (warnings %q)", tc.version, warned, tc.warned, p.Warnings)
		}
	}
}
