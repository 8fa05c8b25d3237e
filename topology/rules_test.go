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
				if c.Action == Conflict && (!strings.Contains(c.Problem, "unsupported queue version") || c.Fix == "" || c.do != nil) {
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

const delayedRetrySpec = `version: 1
rabbitmq:
  exchanges: [{name: d, type: fanout}]
  queues:
    - {name: work, type: quorum, delivery_limit: 5, dead_letter: {exchange: d}, dead_letter_via: arguments,
       delayed_retry: {type: failed, min: 1s, max: 30s}}
    - {name: by-policy, type: quorum, dead_letter: {exchange: d}, dead_letter_via: policy, delayed_retry: {type: all, min: 500ms}}
    - {name: parked, type: quorum, bind: [{exchange: d}]}
`

// TestDelayedRetrySpec: a native delayed retry expands to the queue's
// x-delayed-retry-* arguments, or to its policy's delayed-retry-* keys, in
// milliseconds; bad ones are refused with what to write.
func TestDelayedRetrySpec(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte(delayedRetrySpec))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]map[string]any{}
	for _, q := range m.Rabbit.Queues {
		args[q.Name] = q.Arguments
	}
	w := args["work"]
	if w["x-delayed-retry-type"] != "failed" || w["x-delayed-retry-min"] != int64(1000) || w["x-delayed-retry-max"] != int64(30000) {
		t.Errorf("work arguments %v", w)
	}
	var def map[string]any
	for _, p := range m.Rabbit.Policies {
		if p.Name == "by-policy.dlq-policy" {
			def = p.Definition
		}
	}
	if def["delayed-retry-type"] != "all" || def["delayed-retry-min"] != int64(500) || def["delayed-retry-max"] != nil {
		t.Errorf("by-policy policy %v", def)
	}
	for _, tc := range []struct{ q, want string }{
		{"{name: c, type: classic, delayed_retry: {type: all, min: 1s}}", "needs a quorum queue"},
		{"{name: c, type: quorum, delayed_retry: {type: sometimes, min: 1s}}", "use one of disabled, all, failed, returned"},
		{"{name: c, type: quorum, delayed_retry: {type: all}}", "`delayed_retry.min` must be whole milliseconds, more than 0"},
		{"{name: c, type: quorum, delayed_retry: {type: all, min: 10s, max: 1s}}", "`delayed_retry.max` (1s) is shorter than `min` (10s)"},
	} {
		_, err := LoadBytes("s.yaml", []byte("version: 1\nrabbitmq:\n  queues:\n    - "+tc.q+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.q, err, tc.want)
		}
	}
}

// TestDelayedRetryLintPlanGraph: lint warns that a delayed retry needs
// RabbitMQ 4.3, and refuses it for an earlier version; plan makes it a
// conflict on a server before 4.3 and declares it on 4.3; the graph shows it.
func TestDelayedRetryLintPlanGraph(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte(delayedRetrySpec))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		want    map[string]Severity
	}{
		{"", map[string]Severity{"queue work": SevWarning, "queue by-policy": SevWarning}},
		{"4.0", map[string]Severity{"queue work": SevError, "queue by-policy": SevError}},
		{"4.3", map[string]Severity{}},
	} {
		got := map[string]Severity{}
		for _, f := range LintWith(m, LintOptions{RabbitMQVersion: tc.version}) {
			if f.Rule == "delayed-retry-version" {
				got[f.Object] = f.Severity
			}
		}
		if len(got) != len(tc.want) || got["queue work"] != tc.want["queue work"] || got["queue by-policy"] != tc.want["queue by-policy"] {
			t.Errorf("lint for %q: %v, want %v", tc.version, got, tc.want)
		}
	}
	for _, tc := range []struct {
		version string
		want    Action
	}{{"4.0.5", Conflict}, {"4.3.6", Create}} {
		b := &versionedVhost{fakeVhost: fakeVhost{broker.RabbitTopology{Vhost: "/"}}, version: tc.version}
		p, err := MakePlan(context.Background(), b, m, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Changes {
			if c.Kind == "queue" && (c.Name == "work" || c.Name == "by-policy") && c.Action != tc.want {
				t.Errorf("%s: queue %s %s (%s), want %s", tc.version, c.Name, c.Action, c.Problem, tc.want)
			}
		}
	}
	var sb strings.Builder
	if err := WriteGraph(&sb, m, GraphMermaid); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "delayed retry failed 1s–30s") || !strings.Contains(sb.String(), "delayed retry all 500ms") {
		t.Errorf("graph without the delayed retries:\n%s", sb.String())
	}
}

// TestLintWithVersion: with a version, what it refuses is an error and
// what only other versions do is left out.
func TestLintWithVersion(t *testing.T) {
	m, err := LoadBytes("s.yaml", []byte("version: 1\nrabbitmq:\n  queues:\n    - {name: v1, type: classic, arguments: {x-queue-version: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{"": "warning", "4.3": "error", "4.0": ""} {
		got := ""
		for _, f := range LintWith(m, LintOptions{RabbitMQVersion: v}) {
			if f.Rule == "queue-version-refused" {
				got = string(f.Severity)
			}
		}
		if got != want {
			t.Errorf("version %q: %q, want %q", v, got, want)
		}
	}
}
