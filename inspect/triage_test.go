package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// The rule table: each built-in rule with a reason it must place, and
// reasons no rule may place (never guessed into a destructive action).
func TestTriageRuleTable(t *testing.T) {
	rules := BuiltinRules()
	cases := []struct {
		reason, typ string
		rule, kind  string
		transform   string
	}{
		{reason: "missing field `customer_id` at line 1 column 40", rule: "missing-field", kind: KindFixable, transform: `.body.customer_id = "FILL-ME"`},
		{reason: "Missing required property 'customer.tier'", rule: "missing-field", kind: KindFixable, transform: `.body.customer.tier = "FILL-ME"`},
		{reason: "field 'amount' is required", rule: "field-required", kind: KindFixable, transform: `.body.amount = "FILL-ME"`},
		{reason: "createOrder.request.customerId: must not be null", rule: "bean-validation-null", kind: KindFixable, transform: `.body.customerId = "FILL-ME"`},
		{reason: "KeyError: 'sku'", rule: "key-error", kind: KindFixable, transform: `.body.sku = "FILL-ME"`},
		{reason: "json: cannot unmarshal string into Go struct field Order.amount of type int64", rule: "field-not-number", kind: KindFixable, transform: `.body.amount |= tonumber`},
		{reason: "field quantity must be an integer", rule: "field-not-number", kind: KindFixable, transform: `.body.quantity |= tonumber`},
		{reason: "json: cannot unmarshal number into Go struct field Order.sku of type string", rule: "field-not-string", kind: KindFixable, transform: `.body.sku |= tostring`},
		{reason: "Read timed out calling https://pricing.internal/v2/orders/17/quote after 5042ms", rule: "timeout", kind: KindTransient},
		{reason: "context deadline exceeded", rule: "timeout", kind: KindTransient},
		{reason: "boom", typ: "System.TimeoutException", rule: "timeout-type", kind: KindTransient},
		{reason: "dial tcp 10.0.0.7:5432: connect: connection refused", rule: "connection", kind: KindTransient},
		{reason: "Inventory down", typ: "com.shop.InventoryUnavailableException", rule: "connection-type", kind: KindTransient},
		{reason: "Inventory service returned 503 for SKU-17", rule: "server-error", kind: KindTransient},
		{reason: "upstream answered HTTP 502", rule: "server-error", kind: KindTransient},
		{reason: "Rate exceeded: ThrottlingException", rule: "throttling", kind: KindTransient},
		{reason: "quota", typ: "Amazon.DynamoDBv2.ThrottlingException", rule: "throttling-type", kind: KindTransient},
		{reason: "NOT_LEADER_OR_FOLLOWER: not the leader for partition 3", rule: "leader-election", kind: KindTransient},
		{reason: "Deadlock found when trying to get lock", rule: "db-retryable", kind: KindTransient},
		{reason: `ERROR: duplicate key value violates unique constraint "orders_pkey"`, rule: "constraint", kind: KindPermanent},
		{reason: `Cannot deserialize value of type java.time.LocalDate from String "31/13/2024": not a valid date`, rule: "deserialization", kind: KindPermanent},
		{reason: "Unexpected token < in JSON at position 0", rule: "deserialization", kind: KindPermanent},
		{reason: "order total is invalid", rule: "validation", kind: KindPermanent},
		{reason: "Unknown event type OrderArchived", rule: "unknown-type", kind: KindPermanent},
		{reason: "No handler registered for Shop.Events.Refunded", rule: "unknown-type", kind: KindPermanent},
		{reason: "oops", typ: "FluentValidation.ValidationException", rule: "permanent-type", kind: KindPermanent},
		{reason: "Customer cus_123 not found", rule: "none", kind: "unknown"},
		{reason: "rejected", rule: "none", kind: "unknown"},
		{reason: "expired", rule: "none", kind: "unknown"},
		{reason: "Handler alpha failed on step beta for order 12", rule: "none", kind: "unknown"},
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	used := map[string]bool{}
	for _, c := range cases {
		f := TriageFacts{Template: ShapeOf(c.reason), Example: c.reason, Newest: &old}
		if c.typ != "" {
			f.ExceptionTypes = []string{c.typ}
		}
		d := Decide(f, rules, 0, now)
		used[d.Rule] = true
		if d.Rule != c.rule || d.Kind != c.kind || d.Transform != c.transform {
			t.Errorf("%q (type %q): rule %s, kind %s, transform %q; want %s, %s, %q", c.reason, c.typ, d.Rule, d.Kind, d.Transform, c.rule, c.kind, c.transform)
		}
		if c.kind == "unknown" && d.Action != ActionLook {
			t.Errorf("%q: no rule places it, yet the action is %s; want look", c.reason, d.Action)
		}
	}
	for _, r := range rules {
		if !used[r.Name] {
			t.Errorf("rule %s has no case in this table", r.Name)
		}
	}
}

// The kind and the timeline choose the action.
func TestTriageDecideTimeline(t *testing.T) {
	rules := BuiltinRules()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	cases := []struct {
		name   string
		facts  TriageFacts
		action string
	}{
		{"transient, stopped", TriageFacts{Example: "Read timed out", Newest: at(time.Hour)}, ActionRedrive},
		{"transient, arriving", TriageFacts{Example: "Read timed out", Newest: at(time.Minute)}, ActionWait},
		{"transient, no time", TriageFacts{Example: "Read timed out"}, ActionWait},
		{"transient, redriven 3 times", TriageFacts{Example: "Read timed out", Newest: at(time.Hour), RedrivesMax: 3}, ActionLook},
		{"transient, redriven twice", TriageFacts{Example: "Read timed out", Newest: at(time.Hour), RedrivesMax: 2}, ActionRedrive},
		{"permanent, arriving", TriageFacts{Example: "duplicate key", Newest: at(time.Minute)}, ActionPark},
		{"fixable", TriageFacts{Example: "missing field `x`", Newest: at(time.Minute)}, ActionFix},
		{"unknown", TriageFacts{Example: "it broke", Newest: at(time.Hour)}, ActionLook},
	}
	for _, c := range cases {
		if d := Decide(c.facts, rules, 10*time.Minute, now); d.Action != c.action {
			t.Errorf("%s: action %s (%s); want %s", c.name, d.Action, d.Why, c.action)
		}
	}
}

func TestTriageRuleCompile(t *testing.T) {
	cases := []struct {
		rule TriageRule
		want string
	}{
		{TriageRule{Name: "a", Kind: "flaky", Reason: "x"}, `kind "flaky"`},
		{TriageRule{Name: "a", Kind: KindTransient}, "give a reason or a type pattern"},
		{TriageRule{Name: "a", Kind: KindPermanent, Reason: "x", Transform: ".a"}, "only a fixable rule"},
		{TriageRule{Name: "a", Kind: KindFixable, Reason: "x", Transform: ".body.{field} = 1"}, "(?P<field>"},
		{TriageRule{Name: "a", Kind: KindFixable, Reason: "(", Transform: ".a"}, "reason:"},
		{TriageRule{Name: "a", Kind: KindFixable, Reason: `f (?P<field>\w+)`, Transform: ".body.{field} = 1"}, ""},
	}
	for _, c := range cases {
		err := c.rule.Compile()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v; want one containing %q", c.rule, err, c.want)
		}
	}
	// A user rule placed first wins over the built-in table.
	user := TriageRule{Name: "pricing-down", Kind: KindPermanent, Reason: "pricing"}
	if err := user.Compile(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	d := Decide(TriageFacts{Example: "Read timed out calling pricing"}, append([]TriageRule{user}, BuiltinRules()...), 0, old.Add(2*time.Hour))
	if d.Rule != "pricing-down" || d.Action != ActionPark {
		t.Errorf("user rule first: rule %s, action %s; want pricing-down, park", d.Rule, d.Action)
	}
}

// Triage counts the groups stats counts, with the same IDs, and the
// evidence of each: types, frameworks, attempts, earlier redrives and
// destinations.
func TestTriageEvidence(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var msgs []*broker.Message
	for i := range 30 {
		m := &broker.Message{ID: fmt.Sprintf("m%d", i), Body: []byte(`{}`), Headers: map[string]any{}}
		switch {
		case i < 20:
			m.Headers["x-exception-message"] = fmt.Sprintf("Read timed out after %d ms", 5000+i)
			m.Death = &broker.Death{Reason: "rejected", Queue: "orders", Count: int64(1 + i%4), First: now.Add(-2 * time.Hour)}
			if i < 5 {
				m.Headers[RedriveHeader] = map[string]any{"count": int64(2)}
			}
		default:
			m.Headers["x-exception-message"] = fmt.Sprintf("Unknown event type Evt%d", i)
			m.Death = &broker.Death{Reason: "rejected", Queue: "billing", Count: 1, First: now.Add(-time.Minute)}
		}
		msgs = append(msgs, m)
	}
	tr := NewTriage("q", TriageOptions{Now: now})
	st := NewStats("q", StatsOptions{Now: now, NoDuplicates: true})
	for _, m := range msgs {
		if err := tr.Add(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := st.Add(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	res, ev := tr.Result()
	want := st.Result()
	if got, w := testdiff.Pick(res.Groups, func(g GroupStats) string { return fmt.Sprintf("%s %d", g.ID, g.Count) }),
		testdiff.Pick(want.Groups, func(g GroupStats) string { return fmt.Sprintf("%s %d", g.ID, g.Count) }); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("triage groups %v; stats groups %v", got, w)
	}
	timeout := ev[res.Groups[0].ID]
	if timeout == nil {
		t.Fatalf("no evidence for group %s", res.Groups[0].ID)
	}
	if timeout.AttemptsMax != 4 || timeout.Redriven != 5 || timeout.RedrivesMax != 2 || len(timeout.Destinations) != 1 || timeout.Destinations[0] != (HotValue{"orders", 20}) {
		t.Errorf("timeout group: attempts max %d, redriven %d (max %d), destinations %v; want 4, 5 (max 2), [orders 20]",
			timeout.AttemptsMax, timeout.Redriven, timeout.RedrivesMax, timeout.Destinations)
	}
	if !strings.HasPrefix(timeout.Example, "Read timed out after 50") {
		t.Errorf("example %q; want the first message's reason", timeout.Example)
	}
	plan := BuildPlan(res, ev, BuiltinRules(), 10*time.Minute)
	if got := testdiff.Pick(plan.Groups, func(g PlanGroup) string { return g.Action }); fmt.Sprint(got) != "[redrive park]" {
		t.Errorf("actions %v; want [redrive park]", got)
	}
	if err := plan.Validate(); err != nil {
		t.Errorf("plan built: %v", err)
	}
}

func TestComparePlan(t *testing.T) {
	plan := TriagePlan{Kind: PlanKind, Version: 1, Queue: "q", Groups: []PlanGroup{
		{ID: "a", Count: 10, Action: ActionRedrive},
		{ID: "b", Count: 5, Action: ActionWait},
		{ID: "c", Count: 3, Action: ActionPark},
	}}
	cases := []struct {
		name  string
		now   []PlanGroup
		stale bool
		diff  string
	}{
		{"same", []PlanGroup{{ID: "a", Count: 10}, {ID: "b", Count: 5}, {ID: "c", Count: 3}}, false, ""},
		{"acted group grew", []PlanGroup{{ID: "a", Count: 11}, {ID: "b", Count: 5}, {ID: "c", Count: 3}}, true, "a grew 10→11"},
		{"waited group grew", []PlanGroup{{ID: "a", Count: 10}, {ID: "b", Count: 9}, {ID: "c", Count: 3}}, false, "b grew 5→9"},
		{"acted group vanished", []PlanGroup{{ID: "a", Count: 10}, {ID: "b", Count: 5}}, true, "c vanished 3→0"},
		{"shrank, new", []PlanGroup{{ID: "a", Count: 4}, {ID: "b", Count: 5}, {ID: "c", Count: 3}, {ID: "d", Count: 1}}, false, "a shrank 10→4; d new 0→1"},
	}
	for _, c := range cases {
		changes, stale := ComparePlan(plan, TriagePlan{Groups: c.now})
		var parts []string
		for _, ch := range changes {
			parts = append(parts, fmt.Sprintf("%s %s %d→%d", ch.ID, ch.Change, ch.Was, ch.Now))
		}
		if diff := strings.Join(parts, "; "); diff != c.diff || stale != c.stale {
			t.Errorf("%s: changes %q, stale %t; want %q, %t", c.name, diff, stale, c.diff, c.stale)
		}
	}
	ref := Refresh(plan, TriagePlan{Groups: []PlanGroup{{ID: "a", Count: 11, Action: ActionWait}, {ID: "d", Count: 1, Action: ActionLook}}})
	if got := testdiff.Pick(ref.Groups, func(g PlanGroup) string { return g.ID + ":" + g.Action }); fmt.Sprint(got) != "[a:redrive d:look]" {
		t.Errorf("refreshed %v; want [a:redrive d:look] (the plan's choice kept, the new group's suggestion)", got)
	}
}

func TestPlanValidate(t *testing.T) {
	base := func() TriagePlan {
		return TriagePlan{Kind: PlanKind, Version: 1, Queue: "q", Groups: []PlanGroup{{ID: "a", Action: ActionRedrive}}}
	}
	cases := []struct {
		edit func(p *TriagePlan)
		want string
	}{
		{func(p *TriagePlan) {}, ""},
		{func(p *TriagePlan) { p.Kind = "x" }, "not a triage plan"},
		{func(p *TriagePlan) { p.Groups[0].Action = "nuke" }, `action "nuke"`},
		{func(p *TriagePlan) { p.Groups[0].Action, p.Groups[0].Transform = ActionFix, `.body.a = "FILL-ME"` }, "still holds FILL-ME"},
		{func(p *TriagePlan) { p.Groups[0].Action, p.Groups[0].Transform = ActionFix, `.body.a = 1` }, ""},
		{func(p *TriagePlan) { p.Groups[0].ParkTo = "parked" }, "park_to is for the park action"},
		{func(p *TriagePlan) { p.Groups = append(p.Groups, PlanGroup{ID: "", Action: ActionPark}) }, "(other) group cannot be park"},
		{func(p *TriagePlan) { p.Groups = append(p.Groups, PlanGroup{ID: "a", Action: ActionLook}) }, "appears twice"},
	}
	for i, c := range cases {
		p := base()
		c.edit(&p)
		err := p.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("case %d: error %v; want one containing %q", i, err, c.want)
		}
	}
}
