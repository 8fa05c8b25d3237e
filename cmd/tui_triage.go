package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/tui"
)

// tuiTriage plans the TUI's loaded messages as `dlq triage` plans a
// queue: the same groups, rules (the default rules file first) and
// evidence.
func tuiTriage(ctx context.Context, f *Factory, msgs []*broker.Message) (tui.Triage, error) {
	rules, err := loadTriageRules(f, "", false)
	if err != nil {
		return tui.Triage{}, err
	}
	tr := inspect.NewTriage("", inspect.TriageOptions{Now: f.Now()})
	for _, m := range msgs {
		if err := tr.Add(ctx, m); err != nil {
			return tui.Triage{}, err
		}
	}
	res, ev := tr.Result()
	plan := inspect.BuildPlan(res, ev, rules, inspect.DefaultQuiet)
	out := tui.Triage{}
	index := map[string]int{}
	for i, g := range plan.Groups {
		index[g.ID] = i
		e := g.Evidence
		lines := []string{
			fmt.Sprintf("kind %s, rule %s; %d messages (%.1f%%), %d in the last hour%s", g.Kind, g.Rule, g.Count, g.Share*100, g.LastHour, map[bool]string{true: ", still arriving"}[g.Arriving]),
			"exception types: " + hotList(e.ExceptionTypes) + "; frameworks: " + hotList(e.Frameworks),
			fmt.Sprintf("attempts: max %d, mean %.2f; redriven before: %d (at most %d times)", e.AttemptsMax, e.AttemptsMean, e.Redriven, e.RedrivesMax),
			"destination by origin: " + hotList(e.Destinations),
			"example: " + e.Example,
		}
		if g.FirstSeen != nil {
			lines = append(lines, fmt.Sprintf("first seen %s ago, last %s ago %s", humanAge(plan.Created.Sub(*g.FirstSeen)), humanAge(plan.Created.Sub(*g.LastSeen)), inspect.Sparkline(g.Trend)))
		}
		out.Groups = append(out.Groups, tui.TriageGroup{ID: g.ID, Template: g.Template, Count: int(g.Count), Action: g.Action, Rule: g.Rule,
			Kind: g.Kind, Why: g.Why, Transform: g.Transform, Evidence: lines})
	}
	out.Of = func(m *broker.Message) int {
		id, err := tr.GroupOf(context.Background(), m)
		if err != nil {
			return -1
		}
		if i, ok := index[id]; ok {
			return i
		}
		return -1
	}
	return out, nil
}

func hotList(v []inspect.HotValue) string {
	if len(v) == 0 {
		return "-"
	}
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf("%s ×%d", x.Value, x.Count))
	}
	return strings.Join(parts, ", ")
}
