package topology

import (
	"slices"
	"strings"

	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// effective is what applies to a queue from its arguments and the spec's
// policies, by RabbitMQ's rules (rabbitrules.Effective: the argument wins
// for the dead-letter exchange and key, the lower of argument and policy
// for the TTL and the delivery limit).
type effective struct {
	dlx, dlrk     *string
	ttl, limit    *int64
	retry         string // delayed retry: "failed 1s–30s"
	policy        string
	hasMaxPrio    bool
	incomingKeys  []string
	incomingFound bool
}

func effectiveOf(q Queue, m *RabbitModel) effective {
	var e effective
	var policy map[string]any
	if p := matchingPolicy(q.Name, specPolicies(m.Policies)); p != nil {
		e.policy, policy = p.Name, p.Definition
	}
	// Lint knows no server version: the rules of an unknown one (3.x's).
	s := rabbitrules.Effective(rabbitrules.Sources{Args: q.Arguments, Policy: policy, Quorum: q.Kind == "quorum"})
	if s.DeadLetterSet {
		x := s.DeadLetterExchange
		e.dlx = &x
	}
	if s.HasRoutingKey {
		k := s.DeadLetterRoutingKey
		e.dlrk = &k
	}
	e.ttl = s.MessageTTL
	if s.DeliveryLimitSet {
		n := s.DeliveryLimit
		e.limit = &n
	}
	if t := s.DelayedRetryType; t != "" && t != "disabled" {
		e.retry = t
		if s.DelayedRetryMin != nil {
			e.retry += " " + FormatDuration(msDuration(*s.DelayedRetryMin))
			if s.DelayedRetryMax != nil {
				e.retry += "–" + FormatDuration(msDuration(*s.DelayedRetryMax))
			}
		}
	}
	_, e.hasMaxPrio = q.Arguments["x-max-priority"]
	for _, b := range m.Bindings {
		if b.DestinationType == "queue" && b.Destination == q.Name {
			e.incomingKeys = append(e.incomingKeys, b.RoutingKey)
			e.incomingFound = true
		}
	}
	return e
}

// routes returns the queues a message with key reaches from exchange x,
// following exchange-to-exchange bindings. known is false when the
// exchange is not in the model (or is a type whose routing cannot be
// judged offline).
func routes(m *RabbitModel, x, key string, seen map[string]bool) (queues []string, known bool) {
	if x == "" { // the default exchange routes by queue name
		for _, q := range m.Queues {
			if q.Name == key {
				return []string{q.Name}, true
			}
		}
		return nil, true
	}
	var typ string
	for _, e := range m.Exchanges {
		if e.Name == x {
			typ = e.Type
		}
	}
	if typ == "" || seen[x] {
		return nil, typ != ""
	}
	seen[x] = true
	known = true
	for _, b := range m.Bindings {
		if b.Source != x {
			continue
		}
		// Headers and plugin types: taken to match.
		if !rabbitrules.Routes(typ, b.RoutingKey, key) {
			continue
		}
		if b.DestinationType == "exchange" {
			q, k := routes(m, b.Destination, key, seen)
			queues = append(queues, q...)
			known = known && k
		} else {
			queues = append(queues, b.Destination)
		}
	}
	return queues, known
}

func lintRabbit(m *RabbitModel, opts LintOptions, add addFunc) {
	exists := map[string]bool{"": true}
	for _, x := range m.Exchanges {
		exists[x.Name] = true
	}
	qexists := map[string]bool{}
	for _, q := range m.Queues {
		qexists[q.Name] = true
	}
	for _, b := range m.Bindings {
		if !exists[b.Source] && !strings.HasPrefix(b.Source, "amq.") {
			add(SevWarning, "binding-undeclared", b.Pos, b.Source, "binding from exchange `%s`, which this spec does not declare: it must already exist", b.Source)
		}
		if b.DestinationType == "exchange" && !exists[b.Destination] && !strings.HasPrefix(b.Destination, "amq.") {
			add(SevWarning, "binding-undeclared", b.Pos, b.Destination, "binding to exchange `%s`, which this spec does not declare", b.Destination)
		}
		if b.DestinationType != "exchange" && !qexists[b.Destination] {
			add(SevWarning, "binding-undeclared", b.Pos, b.Destination, "binding to queue `%s`, which this spec does not declare", b.Destination)
		}
	}
	// Dead-letter graph: queue → queues its dead letters reach.
	edges := map[string][]string{}
	effs := map[string]effective{}
	for _, q := range m.Queues {
		effs[q.Name] = effectiveOf(q, m)
	}
	// Parking lots: queues that dead letters reach. Nobody processes them in
	// a loop, so a delivery limit matters less there.
	parked := map[string]bool{}
	for _, q := range m.Queues {
		if e := effs[q.Name]; e.dlx != nil {
			k := q.Name
			if e.dlrk != nil {
				k = *e.dlrk
			} else if len(e.incomingKeys) > 0 {
				k = e.incomingKeys[0]
			}
			reached, _ := routes(m, *e.dlx, k, map[string]bool{})
			for _, r := range reached {
				if effs[r].ttl == nil {
					parked[r] = true
				}
			}
		}
	}
	for _, l := range m.Ladders {
		parked[l.DeadQueue] = true
	}
	for _, q := range m.Queues {
		e := effs[q.Name]
		obj := "queue " + q.Name
		delayQueue := e.ttl != nil && e.dlx != nil
		silentDrop := q.Kind == "quorum" && e.dlx == nil && e.limit == nil
		if silentDrop {
			// Lint knows no broker: the warning says which versions.
			add(SevWarning, "quorum-silent-drop", q.Pos, obj,
				"quorum queue `%s` has no dead-letter exchange and no delivery limit: on RabbitMQ 4.x the default limit of %d applies, and a message delivered %d times is dropped without a trace (3.x redelivers it forever); give it a `dead_letter` exchange (or a policy with dead-letter-exchange), or, for 4.x only, turn the limit off with `x-delivery-limit: -1` in `arguments` (3.x takes a negative limit as 0 and removes a message at its first return)", q.Name, rabbitrules.DefaultDeliveryLimit, rabbitrules.DefaultDeliveryLimit)
		} else if q.Kind == "quorum" && (e.limit == nil || *e.limit <= 0) && !delayQueue && !parked[q.Name] {
			add(SevWarning, "quorum-no-delivery-limit", q.Pos, obj,
				"quorum queue `%s` has no delivery limit: on RabbitMQ 3.x a message that always fails is redelivered forever (4.x dead-letters it after %d deliveries); set `delivery_limit`", q.Name, rabbitrules.DefaultDeliveryLimit)
		}
		if e.limit != nil && *e.limit > 0 && e.dlx == nil {
			add(SevWarning, "limit-no-dlx", q.Pos, obj,
				"queue `%s` has a delivery limit of %d and no dead-letter exchange: a message delivered %d times is dropped without a trace; give it a `dead_letter` exchange (or a policy with dead-letter-exchange)", q.Name, *e.limit, *e.limit)
		}
		if q.Kind == "classic" && q.Durable && !q.AutoDelete && !e.hasMaxPrio {
			add(SevWarning, "classic-queue", q.Pos, obj,
				"queue `%s` is classic: a quorum queue would serve (replicated, with a delivery limit for poison messages); set `type: quorum`, or ignore `classic-queue`", q.Name)
		}
		if e.ttl != nil && e.dlx == nil {
			add(SevWarning, "ttl-no-dlx", q.Pos, obj, "queue `%s` expires messages after %dms without a dead-letter exchange: expired messages are lost", q.Name, *e.ttl)
		}
		if e.dlx == nil {
			continue
		}
		dlx := *e.dlx
		if !exists[dlx] {
			add(SevWarning, "dlx-undeclared", q.Pos, obj, "queue `%s` dead-letters to exchange `%s`, which this spec does not declare: it must already exist", q.Name, dlx)
			continue
		}
		keys := e.incomingKeys
		if e.dlrk != nil {
			keys = []string{*e.dlrk}
		}
		if len(keys) == 0 {
			// No binding and no dead-letter key: messages published straight
			// to the queue keep the queue's name as their key.
			keys = []string{q.Name}
		}
		for _, k := range keys {
			reached, known := routes(m, dlx, k, map[string]bool{})
			if known && len(reached) == 0 {
				what := "routing key `" + k + "`"
				if e.dlrk == nil {
					what = "the messages' own routing key `" + k + "` (no dead-letter routing key is set)"
				}
				add(SevError, "dlx-unroutable", q.Pos, obj,
					"queue `%s` dead-letters to `%s` with %s, but no binding of `%s` matches it: dead letters are silently dropped; bind a queue or set a dead-letter routing key that is bound",
					q.Name, dlx, what, dlx)
			}
			for _, r := range reached {
				if !slices.Contains(edges[q.Name], r) {
					edges[q.Name] = append(edges[q.Name], r)
				}
			}
		}
	}
	pos := map[string]Pos{}
	for _, q := range m.Queues {
		pos[q.Name] = q.Pos
	}
	for _, q := range m.Queues {
		if slices.Contains(edges[q.Name], q.Name) {
			add(SevError, "dlx-self", q.Pos, "queue "+q.Name,
				"queue `%s` dead-letters into itself: rejected messages loop forever and expired ones are dropped by RabbitMQ's cycle detection; dead-letter to another queue", q.Name)
		}
	}
	for _, scc := range cycles(m.Queues, edges) {
		hasTTL := false
		for _, n := range scc {
			if e := effs[n]; e.ttl != nil && *e.ttl > 0 {
				hasTTL = true
			}
		}
		if !hasTTL {
			add(SevError, "dlx-cycle", pos[scc[0]], "queue "+scc[0],
				"queues %s dead-letter into each other and none has a message TTL: a rejected message circles forever; give the retry queue a `message_ttl` or break the cycle", "`"+strings.Join(scc, "` → `")+"`")
		}
	}
	for _, l := range m.Ladders {
		for i := 1; i < len(l.Tiers); i++ {
			if l.Tiers[i].Delay <= l.Tiers[i-1].Delay {
				add(SevWarning, "ladder-ttl-order", l.Tiers[i].Pos, "retry ladder "+l.Name,
					"retry ladder `%s`: tier %d (%s) is not longer than tier %d (%s); order tiers from the shortest delay to the longest",
					l.Name, i+1, FormatDuration(l.Tiers[i].Delay), i, FormatDuration(l.Tiers[i-1].Delay))
			}
		}
	}
	lintArguments(m, opts.RabbitMQVersion, add)
	lintWildcardKeys(m, effs, add)
}

// lintArguments reports the queue arguments and policy keys that some
// RabbitMQ version refuses or ignores (rabbitrules.CheckQueue). Without a
// version each finding is a warning (an info for what does nothing) that
// names the versions it holds on; with one, those that hold on it are
// errors, and the others are left out.
func lintArguments(m *RabbitModel, version string, add addFunc) {
	ver := rabbitrules.ParseVersion(version)
	policies := specPolicies(m.Policies)
	for _, q := range m.Queues {
		var def map[string]any
		if p := matchingPolicy(q.Name, policies); p != nil {
			def = p.Definition
		}
		for _, f := range rabbitrules.CheckQueue(q.Arguments, def) {
			rule, sev := "queue-mode-ignored", SevInfo
			switch {
			case f.Arg == "x-queue-version":
				rule, sev = "queue-version-refused", SevWarning
			case strings.HasSuffix(f.Arg, "delayed-retry-type"):
				rule, sev = "delayed-retry-version", SevWarning
			}
			if ver.Known {
				if !f.On(ver) {
					continue
				}
				if sev == SevWarning {
					sev = SevError
				}
			}
			add(sev, rule, q.Pos, "queue "+q.Name, "queue `%s`: %s", q.Name, f.Why)
		}
	}
}

// cycles returns the strongly connected components of more than one queue
// (Tarjan), each in a stable order.
func cycles(qs []Queue, edges map[string][]string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	n := 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				slices.Reverse(comp)
				out = append(out, comp)
			}
		}
	}
	for _, q := range qs {
		if _, seen := index[q.Name]; !seen {
			strong(q.Name)
		}
	}
	return out
}

// lintRabbitMQ checks the model's RabbitMQ part, if any.
func lintRabbitMQ(m *Model, opts LintOptions, add addFunc) {
	if m.Rabbit != nil {
		lintRabbit(m.Rabbit, opts, add)
	}
}
