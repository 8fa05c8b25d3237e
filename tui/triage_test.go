package tui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// fakeTriage plans with inspect, as the cmd layer does, at the tests' clock.
func fakeTriage(ctx context.Context, msgs []*broker.Message) (Triage, error) {
	tr := inspect.NewTriage("", inspect.TriageOptions{Now: testNow})
	for _, m := range msgs {
		if err := tr.Add(ctx, m); err != nil {
			return Triage{}, err
		}
	}
	res, ev := tr.Result()
	plan := inspect.BuildPlan(res, ev, inspect.BuiltinRules(), 0)
	var out Triage
	index := map[string]int{}
	for i, g := range plan.Groups {
		index[g.ID] = i
		out.Groups = append(out.Groups, TriageGroup{ID: g.ID, Template: g.Template, Count: int(g.Count), Action: g.Action, Rule: g.Rule,
			Kind: g.Kind, Why: g.Why, Transform: g.Transform, Evidence: []string{"example: " + g.Evidence.Example}})
	}
	out.Of = func(m *broker.Message) int {
		id, _ := tr.GroupOf(context.Background(), m)
		if i, ok := index[id]; ok {
			return i
		}
		return -1
	}
	return out, nil
}

// The triage screen lists the groups with their suggested actions; a fix
// cannot be applied from here until its action is changed; the plan is
// reviewed, then applied group by group: a canary redrive, an archive-first
// discard.
func TestTriageScreenApply(t *testing.T) {
	f := newFake()
	f.expectCall("redrive")
	f.expectCall("discard")
	b := f.backend(false)
	b.Triage = fakeTriage
	h := start(t, b, Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("t")
	h.waitFor("triage", "3 groups", "look", "fix", "redrive", "missing-field", "timeout")
	h.key("A")
	h.waitFor("its transform (.body.amount = \"FILL-ME\") must be completed")
	h.key("esc")
	h.key("down", "enter")
	h.waitFor("example: schema mismatch: missing field amount")
	h.key("a", "a", "a") // fix → redrive → wait → park
	h.waitFor("park*")
	h.key("A")
	h.waitFor("apply the triage plan to orders.dlq (2 groups)?", "~ redrive", "- park")
	h.key("y")
	h.waitFor("triage plan applied")
	h.final()
	f.verify(t)
	if len(f.redrives) != 1 || len(f.discards) != 1 {
		t.Fatalf("%d redrives, %d discards; want 1 and 1", len(f.redrives), len(f.discards))
	}
	r, d := f.redrives[0], f.discards[0]
	if !r.Canary || r.Dest.Kind != broker.ToOrigin || len(r.Groups) != 1 || !slices.Equal(r.IDs, []string{"msg-00002", "msg-00005"}) {
		t.Errorf("redrive: canary %t, dest %v, groups %v, ids %v; want a canary to origin of the timeout group's 2 messages", r.Canary, r.Dest, r.Groups, r.IDs)
	}
	if !strings.Contains(d.Archive, "parked-") || !slices.Equal(d.IDs, []string{"msg-00001", "msg-00004"}) {
		t.Errorf("discard: archive %q, ids %v; want the schema group's 2 messages archived first", d.Archive, d.IDs)
	}
}

// Read-only: the triage screen has no apply key.
func TestTriageReadOnly(t *testing.T) {
	f := newFake()
	b := f.backend(true)
	b.Triage = fakeTriage
	h := start(t, b, Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("t")
	h.waitFor("3 groups")
	h.key("A")
	h.key("?")
	h.waitFor("keys: triage", "change action")
	if frame := *h.frame.Load(); strings.Contains(frame, "apply plan") {
		t.Errorf("read-only help offers to apply the plan:\n%s", frame)
	}
	h.final()
}
