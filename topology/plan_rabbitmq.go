package topology

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

func urlVhost(v string) string {
	if v == "/" {
		return "%2F"
	}
	return v
}

// Arguments that a policy can set instead, keyed by argument name.
var policyKey = map[string]string{
	"x-dead-letter-exchange":    "dead-letter-exchange",
	"x-dead-letter-routing-key": "dead-letter-routing-key",
	"x-message-ttl":             "message-ttl",
	"x-delivery-limit":          "delivery-limit",
	"x-max-length":              "max-length",
	"x-max-length-bytes":        "max-length-bytes",
	"x-overflow":                "overflow",
	"x-expires":                 "expires",
	"x-queue-mode":              "queue-mode",
}

func planRabbit(p *Plan, m *RabbitModel, cur broker.RabbitTopology, opts PlanOptions) {
	exs := map[string]broker.Exchange{}
	for _, x := range cur.Exchanges {
		exs[x.Name] = x
	}
	qs := map[string]broker.QueueDecl{}
	for _, q := range cur.Queues {
		qs[q.Name] = q
	}
	pols := map[string]broker.Policy{}
	for _, pl := range cur.Policies {
		pols[pl.Name] = pl
	}
	binds := map[string]bool{}
	for _, b := range cur.Bindings {
		binds[bindingKey(b)] = true
	}
	var exChanges, polChanges, qChanges, bChanges []Change
	for _, x := range m.Exchanges {
		pos := x.Pos
		c := Change{System: broker.RabbitMQ, Kind: "exchange", Name: x.Name, Pos: &pos, From: x.From}
		old, ok := exs[x.Name]
		if !ok {
			c.Action = Create
			xx := x.Exchange
			c.do = &broker.RabbitChange{Action: broker.Declare, Exchange: &xx}
			c.Diffs = []Diff{{Field: "type", New: x.Type}, {Field: "durable", New: x.Durable}}
			c.Diffs = append(c.Diffs, argDiffs("arguments.", nil, x.Arguments)...)
			exChanges = append(exChanges, c)
			continue
		}
		var d []Diff
		if old.Type != x.Type {
			d = append(d, Diff{"type", old.Type, x.Type})
		}
		if old.Durable != x.Durable {
			d = append(d, Diff{"durable", old.Durable, x.Durable})
		}
		if old.AutoDelete != x.AutoDelete {
			d = append(d, Diff{"auto_delete", old.AutoDelete, x.AutoDelete})
		}
		if old.Internal != x.Internal {
			d = append(d, Diff{"internal", old.Internal, x.Internal})
		}
		d = append(d, argDiffs("arguments.", old.Arguments, x.Arguments)...)
		if len(d) == 0 {
			p.Unchanged++
			continue
		}
		c.Action, c.Diffs = Conflict, d
		c.Problem = fmt.Sprintf("exchange `%s` exists with different settings; RabbitMQ would refuse the declare with 406 PRECONDITION_FAILED", x.Name)
		c.Fix = fmt.Sprintf("exchanges cannot change in place: give the spec's exchange a new name, or write the exchange as it exists (`dlq topology export` shows it), or delete `%s` (its bindings go with it) and apply again", x.Name)
		exChanges = append(exChanges, c)
	}
	for _, pl := range m.Policies {
		pos := pl.Pos
		c := Change{System: broker.RabbitMQ, Kind: "policy", Name: pl.Name, Pos: &pos, From: pl.From}
		pp := pl.Policy
		c.do = &broker.RabbitChange{Action: broker.Declare, Policy: &pp}
		old, ok := pols[pl.Name]
		if !ok {
			c.Action = Create
			c.Diffs = []Diff{{Field: "pattern", New: pl.Pattern}, {Field: "apply_to", New: pl.ApplyTo}, {Field: "priority", New: pl.Priority}}
			c.Diffs = append(c.Diffs, argDiffs("definition.", nil, pl.Definition)...)
			polChanges = append(polChanges, c)
			continue
		}
		var d []Diff
		if old.Pattern != pl.Pattern {
			d = append(d, Diff{"pattern", old.Pattern, pl.Pattern})
		}
		if old.ApplyTo != pl.ApplyTo {
			d = append(d, Diff{"apply_to", old.ApplyTo, pl.ApplyTo})
		}
		if old.Priority != pl.Priority {
			d = append(d, Diff{"priority", old.Priority, pl.Priority})
		}
		d = append(d, argDiffs("definition.", old.Definition, pl.Definition)...)
		if len(d) == 0 {
			p.Unchanged++
			continue
		}
		c.Action, c.Diffs = Update, d
		polChanges = append(polChanges, c)
	}
	for _, q := range m.Queues {
		pos := q.Pos
		c := Change{System: broker.RabbitMQ, Kind: "queue", Name: q.Name, Pos: &pos, From: q.From}
		old, ok := qs[q.Name]
		if !ok {
			c.Action = Create
			qq := q.QueueDecl
			c.do = &broker.RabbitChange{Action: broker.Declare, Queue: &qq}
			c.Diffs = []Diff{{Field: "type", New: q.Kind}, {Field: "durable", New: q.Durable}}
			c.Diffs = append(c.Diffs, argDiffs("arguments.", nil, q.Arguments)...)
			qChanges = append(qChanges, c)
			continue
		}
		var d []Diff
		if old.Durable != q.Durable {
			d = append(d, Diff{"durable", old.Durable, q.Durable})
		}
		if old.AutoDelete != q.AutoDelete {
			d = append(d, Diff{"auto_delete", old.AutoDelete, q.AutoDelete})
		}
		if old.Exclusive {
			d = append(d, Diff{"exclusive", true, false})
		}
		ad := argDiffs("arguments.", rabbitrules.EquivalenceArgs(old.Arguments), rabbitrules.EquivalenceArgs(q.Arguments))
		d = append(d, ad...)
		if len(d) == 0 {
			p.Unchanged++
			continue
		}
		c.Action, c.Diffs = Conflict, d
		c.Problem = fmt.Sprintf("queue `%s` exists with different settings; RabbitMQ would refuse the declare with 406 PRECONDITION_FAILED", q.Name)
		c.Fix = queueFix(q.Name, old, ad, len(d) == len(ad))
		qChanges = append(qChanges, c)
	}
	for _, b := range m.Bindings {
		if binds[bindingKey(b.Binding)] {
			p.Unchanged++
			continue
		}
		pos := b.Pos
		bb := b.Binding
		bChanges = append(bChanges, Change{Action: Create, System: broker.RabbitMQ, Kind: "binding", Name: bindingName(b.Binding),
			Pos: &pos, From: b.From, do: &broker.RabbitChange{Action: broker.Declare, Binding: &bb}})
	}
	p.Changes = append(p.Changes, exChanges...)
	p.Changes = append(p.Changes, polChanges...)
	p.Changes = append(p.Changes, qChanges...)
	p.Changes = append(p.Changes, bChanges...)
	p.Warnings = append(p.Warnings, policyShadows(m, cur)...)
	if opts.Prune {
		p.Changes = append(p.Changes, pruneRabbit(m, cur, opts.PruneScope)...)
	}
}

func queueFix(name string, old broker.QueueDecl, ad []Diff, argsOnly bool) string {
	onlyAdded, policyable := argsOnly, argsOnly
	for _, d := range ad {
		k := strings.TrimPrefix(d.Field, "arguments.")
		if d.Old != nil {
			onlyAdded = false
		}
		if _, ok := policyKey[k]; !ok {
			policyable = false
		}
	}
	migrate := fmt.Sprintf("or migrate: declare a new queue (for example `%s.v2`), move the messages over (a shovel, or `dlq redrive`), point publishers at it, then delete `%s`", name, name)
	if onlyAdded && policyable {
		return "set these with a policy instead of queue arguments (`dead_letter_via: policy`): a policy applies to the existing queue in place, " + migrate
	}
	return fmt.Sprintf("queue arguments and type cannot change in place: write the queue as it exists (`dlq topology export` shows it) and put new settings in a policy where the queue has no argument for them, %s", migrate)
}

func bindingName(b broker.Binding) string {
	dt := b.DestinationType
	if dt == "" {
		dt = "queue"
	}
	s := fmt.Sprintf("%s → %s", b.Source, b.Destination)
	if dt == "exchange" {
		s = fmt.Sprintf("%s → exchange %s", b.Source, b.Destination)
	}
	if b.Source == "" {
		s = "(default) → " + b.Destination
	}
	s += fmt.Sprintf(" [%s]", b.RoutingKey)
	if len(b.Arguments) > 0 {
		s += " " + canonical(b.Arguments)
	}
	return s
}

// policyShadows warns when a policy outside the spec outranks the spec's
// policy for a queue, so that the spec's dead-letter settings would not
// apply (only one policy applies to a queue).
func policyShadows(m *RabbitModel, cur broker.RabbitTopology) []string {
	inSpec := map[string]bool{}
	for _, p := range m.Policies {
		inSpec[p.Name] = true
	}
	var out []string
	for _, q := range m.Queues {
		mine := matchingPolicy(q.Name, specPolicies(m.Policies))
		if mine == nil {
			continue
		}
		for _, other := range cur.Policies {
			if inSpec[other.Name] || !policyMatches(other, q.Name) {
				continue
			}
			if other.Priority >= mine.Priority {
				out = append(out, fmt.Sprintf("policy `%s` (priority %d) on the broker also matches queue `%s` and outranks or ties `%s` (priority %d): only one policy applies to a queue; raise `priority` in the spec",
					other.Name, other.Priority, q.Name, mine.Name, mine.Priority))
			}
		}
	}
	return out
}

// silentDrops warns, on a version that gives quorum queues a default
// delivery limit (4.x), about the spec's quorum queues that will have
// neither a dead-letter exchange nor a delivery limit once the spec is
// applied (by argument, or by the policy that then applies: the spec's, or
// one on the broker that outranks it): the version's default limit applies
// and then RabbitMQ drops a message without a trace.
func silentDrops(m *RabbitModel, cur broker.RabbitTopology, version string) []string {
	ver := rabbitrules.ParseVersion(version)
	limit, ok := rabbitrules.DefaultLimit(ver)
	if !ok {
		return nil
	}
	policies := specPolicies(m.Policies)
	inSpec := map[string]bool{}
	for _, p := range m.Policies {
		inSpec[p.Name] = true
	}
	for _, p := range cur.Policies {
		if !inSpec[p.Name] {
			policies = append(policies, p)
		}
	}
	var out []string
	for _, q := range m.Queues {
		if q.Kind != "quorum" {
			continue
		}
		var policy map[string]any
		if p := matchingPolicy(q.Name, policies); p != nil {
			policy = p.Definition
		}
		s := rabbitrules.Effective(rabbitrules.Sources{Args: q.Arguments, Policy: policy, Quorum: true, Version: ver})
		if !s.DeadLetterSet && s.LimitDefault {
			out = append(out, fmt.Sprintf("quorum queue `%s` has no dead-letter exchange and no delivery limit: RabbitMQ %s gives it the default limit of %d and drops a message delivered %d times without a trace; give it a `dead_letter` exchange (or a policy with dead-letter-exchange), or set `x-delivery-limit: -1` in `arguments` to turn the limit off",
				q.Name, version, limit, limit))
		}
	}
	return out
}

// versionRules applies what the server's version refuses or ignores among
// the settings of the spec's queues (rabbitrules.CheckQueue, of a queue's
// arguments and the spec's policy that applies to it): a queue the plan
// would declare with a setting the server refuses, or accepts without
// doing what it is for (a delayed retry before 4.3), becomes a conflict;
// the rest gets a warning.
func versionRules(p *Plan, m *RabbitModel, version string) {
	ver := rabbitrules.ParseVersion(version)
	changes := map[string]*Change{}
	for i := range p.Changes {
		if c := &p.Changes[i]; c.System == broker.RabbitMQ && c.Kind == "queue" && (c.Action == Create || c.Action == Conflict) {
			changes[c.Name] = c
		}
	}
	policies := specPolicies(m.Policies)
	for _, q := range m.Queues {
		var def map[string]any
		if pl := matchingPolicy(q.Name, policies); pl != nil {
			def = pl.Definition
		}
		for _, f := range rabbitrules.CheckQueue(q.Arguments, def) {
			c := changes[q.Name]
			switch {
			case !f.On(ver):
			case (f.Refused || f.Missing) && c != nil:
				verb := "would refuse"
				if !f.Refused {
					verb = "would accept and ignore"
				}
				problem := fmt.Sprintf("RabbitMQ %s %s queue `%s`: %s", version, verb, q.Name, f.Why)
				if c.Action == Conflict {
					c.Problem += "; " + problem
					continue
				}
				c.Action, c.Problem, c.do = Conflict, problem, nil
				c.Fix = fmt.Sprintf("remove `%s` from queue `%s` (its arguments or its policy), then plan again", f.Arg, q.Name)
			default:
				p.Warnings = append(p.Warnings, fmt.Sprintf("queue `%s`: %s", q.Name, f.Why))
			}
		}
	}
}

func specPolicies(ps []Policy) []broker.Policy {
	out := make([]broker.Policy, len(ps))
	for i, p := range ps {
		out[i] = p.Policy
	}
	return out
}

func policyMatches(p broker.Policy, queue string) bool {
	if p.ApplyTo != "queues" && p.ApplyTo != "all" && p.ApplyTo != "" {
		return false
	}
	re, err := regexp.Compile(p.Pattern)
	return err == nil && re.MatchString(queue)
}

// matchingPolicy is the policy RabbitMQ would apply to a queue: the
// matching one with the highest priority.
func matchingPolicy(queue string, ps []broker.Policy) *broker.Policy {
	var best *broker.Policy
	for i := range ps {
		if policyMatches(ps[i], queue) && (best == nil || ps[i].Priority > best.Priority) {
			best = &ps[i]
		}
	}
	return best
}

func pruneRabbit(m *RabbitModel, cur broker.RabbitTopology, scope string) []Change {
	inX, inQ, inP, inB := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, x := range m.Exchanges {
		inX[x.Name] = true
	}
	for _, q := range m.Queues {
		inQ[q.Name] = true
	}
	for _, p := range m.Policies {
		inP[p.Name] = true
	}
	for _, b := range m.Bindings {
		inB[bindingKey(b.Binding)] = true
	}
	var out []Change
	for _, b := range cur.Bindings {
		if !strings.HasPrefix(b.Source, scope) || !strings.HasPrefix(b.Destination, scope) || inB[bindingKey(b)] {
			continue
		}
		bb := b
		out = append(out, Change{Action: Remove, System: broker.RabbitMQ, Kind: "binding", Name: bindingName(b),
			do: &broker.RabbitChange{Action: broker.Delete, Binding: &bb}})
	}
	for _, q := range cur.Queues {
		if !strings.HasPrefix(q.Name, scope) || inQ[q.Name] {
			continue
		}
		qq := q
		c := Change{Action: Remove, System: broker.RabbitMQ, Kind: "queue", Name: q.Name,
			do: &broker.RabbitChange{Action: broker.Delete, Queue: &qq}}
		if q.Messages > 0 {
			c.Action = Conflict
			c.Problem = fmt.Sprintf("queue `%s` is not in the spec but holds %d messages; pruning never deletes messages", q.Name, q.Messages)
			c.Fix = "move or drain the messages first (`dlq redrive`, `dlq purge`), or add the queue to the spec"
			c.do = nil
		}
		out = append(out, c)
	}
	for _, p := range cur.Policies {
		if !strings.HasPrefix(p.Name, scope) || inP[p.Name] {
			continue
		}
		pp := p
		out = append(out, Change{Action: Remove, System: broker.RabbitMQ, Kind: "policy", Name: p.Name,
			do: &broker.RabbitChange{Action: broker.Delete, Policy: &pp}})
	}
	for _, x := range cur.Exchanges {
		if !strings.HasPrefix(x.Name, scope) || inX[x.Name] {
			continue
		}
		xx := x
		out = append(out, Change{Action: Remove, System: broker.RabbitMQ, Kind: "exchange", Name: x.Name,
			do: &broker.RabbitChange{Action: broker.Delete, Exchange: &xx}})
	}
	return out
}

// planRabbitMQ plans the model's RabbitMQ section against b's topology.
func planRabbitMQ(ctx context.Context, b broker.Broker, m *Model, p *Plan, opts PlanOptions) error {
	if m.Rabbit == nil {
		return broker.Hintf("the spec has no `rabbitmq:` section but %s is a RabbitMQ broker: point %s at SQS (sqs://REGION)", broker.OptBroker, broker.OptBroker)
	}
	r, ok := b.(broker.RabbitTopologyReader)
	if !ok {
		return broker.Errorf(broker.ErrUnsupported, "plan", "this RabbitMQ connection cannot read topology: it needs the management API (%s)", broker.OptManagementURL)
	}
	cur, err := r.ReadRabbitTopology(ctx)
	if err != nil {
		return fmt.Errorf("read topology: %w", err)
	}
	if m.Rabbit.Vhost != "" && cur.Vhost != "" && m.Rabbit.Vhost != cur.Vhost {
		return broker.Hintf("the spec is for vhost `%s` but %s connects to vhost `%s`: add the vhost to the broker URL (amqp://host/%s)",
			m.Rabbit.Vhost, broker.OptBroker, cur.Vhost, urlVhost(m.Rabbit.Vhost))
	}
	p.Vhost = cur.Vhost
	planRabbit(p, m.Rabbit, cur, opts)
	if v, ok := b.(broker.ServerVersioner); ok {
		if ver, err := v.ServerVersion(ctx); err == nil {
			p.ServerVersion = ver
			p.Warnings = append(p.Warnings, silentDrops(m.Rabbit, cur, ver)...)
			versionRules(p, m.Rabbit, ver)
		}
	}
	return nil
}
