package topology

import (
	"context"
	"fmt"
	"sort"

	"github.com/dlq-tools/dlq/broker"
)

// Action is what a plan does to one object.
type Action string

const (
	Create   Action = "create"
	Update   Action = "update"   // in place: policies, SQS attributes
	Conflict Action = "conflict" // cannot be applied as it stands; see Fix
	Remove   Action = "delete"   // only with pruning
)

// Diff is one field that differs. Old is absent for a create, New for a
// delete.
type Diff struct {
	Field string `json:"field"`
	Old   any    `json:"old,omitempty"`
	New   any    `json:"new,omitempty"`
}

// Change is one step of a plan.
type Change struct {
	Action  Action        `json:"action"`
	System  broker.System `json:"system"`
	Kind    string        `json:"kind"` // exchange, queue, binding, policy, sqs-queue
	Name    string        `json:"name"`
	Diffs   []Diff        `json:"diffs,omitempty"`
	Problem string        `json:"problem,omitempty"` // conflicts: what is wrong
	Fix     string        `json:"fix,omitempty"`     // conflicts: how to resolve it
	Pos     *Pos          `json:"position,omitempty"`
	From    string        `json:"from,omitempty"`

	// do is what applying it declares or deletes, in its system's own
	// terms (RabbitMQ: a *broker.RabbitChange; SQS: the *SQSQueue to
	// declare, nil for a delete); nil for a conflict.
	do any
}

// Plan is the ordered list of changes that makes a broker match a spec.
// Changes are in apply order: RabbitMQ exchanges, policies, queues,
// bindings (policies before queues so that a queue is born with its
// dead-letter settings); SQS dead-letter targets before their sources;
// deletions last, in reverse dependency order.
type Plan struct {
	System    broker.System `json:"system"`
	Broker    string        `json:"broker"`
	Vhost     string        `json:"vhost,omitempty"`
	Changes   []Change      `json:"changes"`
	Unchanged int           `json:"unchanged"`
	Warnings  []string      `json:"warnings,omitempty"`
	// ServerVersion is the broker's version when it says ("4.0.5").
	ServerVersion string `json:"server_version,omitempty"`
	// Skipped names a section of the spec that this broker cannot hold.
	Skipped string `json:"skipped,omitempty"`
}

// Summary counts changes by action.
type Summary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Delete    int `json:"delete"`
	Conflict  int `json:"conflict"`
	Unchanged int `json:"unchanged"`
}

// Summary counts the plan's changes.
func (p *Plan) Summary() Summary {
	s := Summary{Unchanged: p.Unchanged}
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			s.Create++
		case Update:
			s.Update++
		case Remove:
			s.Delete++
		case Conflict:
			s.Conflict++
		}
	}
	return s
}

// HasChanges reports whether applying the plan would change anything (or
// is blocked by a conflict).
func (p *Plan) HasChanges() bool { return len(p.Changes) > 0 }

// Conflicts returns the changes that block the plan.
func (p *Plan) Conflicts() []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Action == Conflict {
			out = append(out, c)
		}
	}
	return out
}

// PlanOptions shape a plan.
type PlanOptions struct {
	// Prune adds deletions of objects that the broker has and the spec does
	// not, among those whose names start with PruneScope (which must not be
	// empty: pruning never considers a whole vhost or account).
	Prune      bool
	PruneScope string
}

// MakePlan reads what the broker has and diffs it with the model's part for
// that broker's system.
func MakePlan(ctx context.Context, b broker.Broker, m *Model, opts PlanOptions) (*Plan, error) {
	if opts.Prune && opts.PruneScope == "" {
		return nil, fmt.Errorf("pruning needs a scope: set `name_prefix` in the spec so that only objects whose names start with it are considered")
	}
	p := &Plan{System: b.System(), Broker: b.String()}
	t, ok := systemOf(b.System())
	if !ok {
		return nil, unsupported("plan", b)
	}
	p.Skipped = skipped(t.System, m)
	if err := t.Plan(ctx, b, m, p, opts); err != nil {
		return nil, err
	}
	return p, nil
}

// ---- RabbitMQ ----

func argDiffs(prefix string, old, new map[string]any) []Diff {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range new {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var d []Diff
	for _, k := range sorted {
		o, oo := old[k]
		n, nn := new[k]
		if oo && nn && equalValues(o, n) {
			continue
		}
		df := Diff{Field: prefix + k}
		if oo {
			df.Old = normalizeValue(o)
		}
		if nn {
			df.New = normalizeValue(n)
		}
		d = append(d, df)
	}
	return d
}

// ---- SQS ----
