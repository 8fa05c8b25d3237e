package inspect

import (
	"fmt"
	"slices"
	"time"
)

// PlanKind names a triage plan file.
const PlanKind = "dlq-triage-plan"

// TriagePlan is the plan `dlq triage` writes and `dlq triage apply` runs:
// per failure group, its evidence and the action to take.
type TriagePlan struct {
	Kind    string    `json:"kind" yaml:"kind"`
	Version int       `json:"version" yaml:"version"`
	Queue   string    `json:"queue" yaml:"queue"`
	Broker  string    `json:"broker,omitempty" yaml:"broker,omitempty"` // redacted
	Created time.Time `json:"created" yaml:"created"`
	// Quiet is how long a group had to be quiet to count as stopped.
	Quiet      string      `json:"quiet" yaml:"quiet"`
	Read       int64       `json:"read" yaml:"read"`
	Total      int64       `json:"total" yaml:"total"`
	OutOfReach int64       `json:"out_of_reach,omitempty" yaml:"out_of_reach,omitempty"`
	Groups     []PlanGroup `json:"groups" yaml:"groups"`
}

// PlanGroup is one failure group of a plan. Action, Transform and ParkTo
// are what a user edits; the rest is evidence.
type PlanGroup struct {
	ID       string  `json:"id" yaml:"id"`
	Template string  `json:"template" yaml:"template"`
	Count    int64   `json:"count" yaml:"count"`
	Share    float64 `json:"share" yaml:"share"`

	Action string `json:"action" yaml:"action"`
	// Transform is the jq --transform of a fix.
	Transform string `json:"transform,omitempty" yaml:"transform,omitempty"`
	// ParkTo is the queue a park moves the group to; empty: discard it,
	// archived first.
	ParkTo string `json:"park_to,omitempty" yaml:"park_to,omitempty"`

	Kind     string `json:"kind" yaml:"kind"`
	Rule     string `json:"rule" yaml:"rule"`
	Why      string `json:"why" yaml:"why"`
	Suggest  string `json:"suggested" yaml:"suggested"` // the rule's action, kept when the user edits Action
	Arriving bool   `json:"arriving" yaml:"arriving"`

	FirstSeen *time.Time `json:"first_seen,omitempty" yaml:"first_seen,omitempty"`
	LastSeen  *time.Time `json:"last_seen,omitempty" yaml:"last_seen,omitempty"`
	LastHour  int64      `json:"last_hour" yaml:"last_hour"`
	Trend     []int64    `json:"trend,omitempty" yaml:"trend,flow,omitempty"`

	Evidence TriageEvidence `json:"evidence" yaml:"evidence"`
}

// BuildPlan turns a triage's result into a plan, deciding each group by
// rules (the (other) group, beyond MaxGroups, is looked at).
func BuildPlan(res StatsResult, ev map[string]*TriageEvidence, rules []TriageRule, quiet time.Duration) TriagePlan {
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	p := TriagePlan{Kind: PlanKind, Version: 1, Queue: res.Queue, Created: res.Now, Quiet: quiet.String(),
		Read: res.Read, Total: res.Total, OutOfReach: res.OutOfReach, Groups: []PlanGroup{}}
	for _, g := range res.Groups {
		pg := PlanGroup{ID: g.ID, Template: g.Template, Count: g.Count, Share: g.Share,
			FirstSeen: g.Oldest, LastSeen: g.Newest, LastHour: g.LastHour, Trend: g.Trend}
		if e := ev[g.ID]; e != nil {
			pg.Evidence = *e
		}
		if g.ID == "" {
			pg.Template = OtherGroup
			pg.Kind, pg.Action, pg.Rule, pg.Why = "unknown", ActionLook, "none", "groups beyond the most counted cannot be selected by ID"
			pg.Suggest = pg.Action
			p.Groups = append(p.Groups, pg)
			continue
		}
		facts := TriageFacts{Template: g.Template, Example: pg.Evidence.Example, Newest: g.Newest, RedrivesMax: pg.Evidence.RedrivesMax}
		for _, v := range pg.Evidence.ExceptionTypes {
			facts.ExceptionTypes = append(facts.ExceptionTypes, v.Value)
		}
		for _, v := range pg.Evidence.Frameworks {
			facts.Frameworks = append(facts.Frameworks, v.Value)
		}
		d := Decide(facts, rules, quiet, res.Now)
		pg.Kind, pg.Action, pg.Rule, pg.Why, pg.Transform, pg.Arriving = d.Kind, d.Action, d.Rule, d.Why, d.Transform, d.Arriving
		pg.Suggest = d.Action
		p.Groups = append(p.Groups, pg)
	}
	return p
}

// Validate checks a plan read from a file: its kind, and each group's
// action and what the action needs.
func (p *TriagePlan) Validate() error {
	if p.Kind != PlanKind {
		return fmt.Errorf("not a triage plan (kind %q, want %q)", p.Kind, PlanKind)
	}
	if p.Version != 1 {
		return fmt.Errorf("plan version %d: this dlq reads version 1", p.Version)
	}
	if p.Queue == "" {
		return fmt.Errorf("the plan names no queue")
	}
	seen := map[string]bool{}
	for _, g := range p.Groups {
		if !slices.Contains(TriageActions, g.Action) {
			return fmt.Errorf("group %s: action %q: use one of %v", g.ID, g.Action, TriageActions)
		}
		if g.ID == "" && g.Action != ActionLook && g.Action != ActionSkip && g.Action != ActionWait {
			return fmt.Errorf("the %s group cannot be %s: it has no ID to select it by", OtherGroup, g.Action)
		}
		if seen[g.ID] {
			return fmt.Errorf("group %s appears twice", g.ID)
		}
		seen[g.ID] = true
		if g.Action == ActionFix && (g.Transform == "" || containsTodo(g.Transform)) {
			return PlanTodoError{Group: g.ID}
		}
		if g.ParkTo != "" && g.Action != ActionPark {
			return fmt.Errorf("group %s: park_to is for the park action, not %s", g.ID, g.Action)
		}
	}
	return nil
}

// PlanTodoError is a fix whose transform is still a skeleton.
type PlanTodoError struct{ Group string }

func (e PlanTodoError) Error() string {
	return fmt.Sprintf("group %s: its transform still holds %s: complete it, or change the action", e.Group, TransformTodo)
}

func containsTodo(s string) bool {
	for i := 0; i+len(TransformTodo) <= len(s); i++ {
		if s[i:i+len(TransformTodo)] == TransformTodo {
			return true
		}
	}
	return false
}

// Acts reports whether a group's action changes the queue.
func (g PlanGroup) Acts() bool {
	switch g.Action {
	case ActionRedrive, ActionFix, ActionPark:
		return true
	}
	return false
}

// PlanChange is how a group of a plan differs in the queue now.
type PlanChange struct {
	ID       string `json:"id"`
	Template string `json:"template"`
	// Change is grew, shrank, vanished or new.
	Change string `json:"change"`
	Was    int64  `json:"was"`
	Now    int64  `json:"now"`
}

// ComparePlan lists how the queue's groups now (cur) differ from plan's.
// Stale reports whether a difference touches a group the plan acts on (it
// grew or vanished): such a plan is not applied as it is.
func ComparePlan(plan, cur TriagePlan) (changes []PlanChange, stale bool) {
	now := map[string]PlanGroup{}
	for _, g := range cur.Groups {
		now[g.ID] = g
	}
	inPlan := map[string]bool{}
	for _, g := range plan.Groups {
		inPlan[g.ID] = true
		c, ok := now[g.ID]
		switch {
		case !ok:
			changes = append(changes, PlanChange{ID: g.ID, Template: g.Template, Change: "vanished", Was: g.Count})
			stale = stale || g.Acts()
		case c.Count > g.Count:
			changes = append(changes, PlanChange{ID: g.ID, Template: g.Template, Change: "grew", Was: g.Count, Now: c.Count})
			stale = stale || g.Acts()
		case c.Count < g.Count:
			changes = append(changes, PlanChange{ID: g.ID, Template: g.Template, Change: "shrank", Was: g.Count, Now: c.Count})
		}
	}
	for _, g := range cur.Groups {
		if !inPlan[g.ID] {
			changes = append(changes, PlanChange{ID: g.ID, Template: g.Template, Change: "new", Now: g.Count})
		}
	}
	return changes, stale
}

// Refresh is cur with plan's choices (action, transform, park queue) kept
// for the groups both have; new groups keep their suggested action.
func Refresh(plan, cur TriagePlan) TriagePlan {
	old := map[string]PlanGroup{}
	for _, g := range plan.Groups {
		old[g.ID] = g
	}
	out := cur
	out.Groups = append([]PlanGroup(nil), cur.Groups...)
	for i, g := range out.Groups {
		if o, ok := old[g.ID]; ok {
			out.Groups[i].Action, out.Groups[i].Transform, out.Groups[i].ParkTo = o.Action, o.Transform, o.ParkTo
		}
	}
	return out
}
