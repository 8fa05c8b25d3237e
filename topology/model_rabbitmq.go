package topology

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// RabbitModel is the RabbitMQ half of a model.
type RabbitModel struct {
	Vhost     string
	Exchanges []Exchange
	Queues    []Queue
	Bindings  []Binding
	Policies  []Policy
	Ladders   []Ladder
}

// Exchange is an exchange to declare and where in the spec it comes from.
type Exchange struct {
	broker.Exchange
	Pos  Pos    `json:"position"`
	From string `json:"from,omitempty"` // the construct that generated it
}

// Queue is a queue to declare.
type Queue struct {
	broker.QueueDecl
	Kind string `json:"kind"` // classic, quorum, stream
	Pos  Pos    `json:"position"`
	From string `json:"from,omitempty"`
}

// Binding is a binding to declare.
type Binding struct {
	broker.Binding
	Pos  Pos    `json:"position"`
	From string `json:"from,omitempty"`
}

// Policy is a policy to put.
type Policy struct {
	broker.Policy
	Pos  Pos    `json:"position"`
	From string `json:"from,omitempty"`
}

type queueIntent struct {
	name          string
	typ           string
	durable       bool
	autoDelete    bool
	dlx           *string
	dlrk          *string
	ttl           *time.Duration
	deliveryLimit *int64
	maxLength     *int64
	delayedRetry  *DelayedRetry
	via           string
	policy        *GeneratedPolicy
	args          map[string]any
	pos           Pos
	from          string
}

func (e *expander) defaults() RabbitDefaults {
	if e.spec.RabbitMQ.Defaults != nil {
		return *e.spec.RabbitMQ.Defaults
	}
	return RabbitDefaults{}
}

func (e *expander) durable() bool {
	if d := e.defaults().Durable; d != nil {
		return *d
	}
	return true
}

func (e *expander) via(own string) string {
	if own != "" {
		return own
	}
	if v := e.defaults().DeadLetterVia; v != "" {
		return v
	}
	return "policy"
}

func (e *expander) queueType(own string, pos Pos, what string) string {
	if own != "" {
		return own
	}
	if t := e.defaults().QueueType; t != "" {
		return t
	}
	e.add(pos, "%s has no queue type: set `queue_type` (classic or quorum) on it or `rabbitmq.defaults.queue_type`", what)
	return "classic"
}

func (e *expander) rabbit(r *RabbitSpec) {
	e.m.Rabbit = &RabbitModel{Vhost: r.Vhost}
	for i := range r.RetryLadders {
		e.ladder(&r.RetryLadders[i])
	}
	for i := range r.WorkQueues {
		e.workQueue(&r.WorkQueues[i])
	}
	for _, x := range r.Exchanges {
		d := e.durable()
		if x.Durable != nil {
			d = *x.Durable
		}
		e.exchange(broker.Exchange{Name: e.name(x.Name), Type: x.Type, Durable: d, AutoDelete: x.AutoDelete,
			Internal: x.Internal, Arguments: normalizeTable(x.Arguments)}, x.Pos, "")
	}
	for _, q := range r.Queues {
		d := e.durable()
		if q.Durable != nil {
			d = *q.Durable
		}
		qi := queueIntent{name: q.Name, typ: e.queueType(q.Type, q.Pos, fmt.Sprintf("queue `%s`", q.Name)),
			durable: d, autoDelete: q.AutoDelete, deliveryLimit: q.DeliveryLimit, maxLength: q.MaxLength,
			delayedRetry: q.DelayedRetry, via: e.via(q.DeadLetterVia), policy: q.Policy, args: q.Arguments, pos: q.Pos}
		if q.DeadLetter != nil {
			x := q.DeadLetter.Exchange
			qi.dlx = &x
			qi.dlrk = q.DeadLetter.RoutingKey
		}
		if q.MessageTTL != nil {
			t := q.MessageTTL.D()
			qi.ttl = &t
		}
		e.queue(qi)
		for _, b := range q.Bind {
			e.binding(broker.Binding{Source: e.name(b.Exchange), Destination: e.name(q.Name), DestinationType: "queue",
				RoutingKey: b.RoutingKey, Arguments: normalizeTable(b.Arguments)}, b.Pos, "")
		}
	}
	for _, b := range r.Bindings {
		dest, dt := b.Queue, "queue"
		switch {
		case b.Queue != "" && b.ToExchange != "":
			e.add(b.Pos, "binding from `%s` names both `queue` and `to_exchange`: keep one", b.Exchange)
			continue
		case b.ToExchange != "":
			dest, dt = b.ToExchange, "exchange"
		case b.Queue == "":
			e.add(b.Pos, "binding from `%s` needs `queue` or `to_exchange`", b.Exchange)
			continue
		}
		keys := b.RoutingKeys
		if b.RoutingKey != "" || len(keys) == 0 {
			keys = append([]string{b.RoutingKey}, keys...)
		}
		for _, k := range keys {
			e.binding(broker.Binding{Source: e.name(b.Exchange), Destination: e.name(dest), DestinationType: dt,
				RoutingKey: k, Arguments: normalizeTable(b.Arguments)}, b.Pos, "")
		}
	}
	for _, p := range r.Policies {
		pat := p.Pattern
		switch {
		case pat != "" && len(p.Match) > 0:
			e.add(p.Pos, "policy `%s` has both `pattern` and `match`: keep one", p.Name)
		case len(p.Match) > 0:
			names := make([]string, len(p.Match))
			for i, n := range p.Match {
				names[i] = regexp.QuoteMeta(e.name(n))
			}
			if len(names) == 1 {
				pat = "^" + names[0] + "$"
			} else {
				pat = "^(" + strings.Join(names, "|") + ")$"
			}
		case pat == "":
			e.add(p.Pos, "policy `%s` needs `pattern` or `match`", p.Name)
		}
		if _, err := regexp.Compile(pat); err != nil {
			e.add(p.Pos, "policy `%s`: `pattern` is not a regular expression: %v", p.Name, err)
		}
		applyTo := p.ApplyTo
		if applyTo == "" {
			applyTo = "queues"
		}
		if len(p.Definition) == 0 {
			e.add(p.Pos, "policy `%s` has an empty `definition`", p.Name)
		}
		e.policy(broker.Policy{Name: e.name(p.Name), Pattern: pat, ApplyTo: applyTo, Priority: p.Priority,
			Definition: normalizeTable(p.Definition)}, p.Pos, "")
	}
}

func (e *expander) exchange(x broker.Exchange, pos Pos, from string) {
	if x.Name == "" {
		e.add(pos, "exchange needs a non-empty `name` (the default exchange cannot be declared)")
		return
	}
	if strings.HasPrefix(x.Name, "amq.") {
		e.add(pos, "exchange `%s`: names starting with amq. are reserved by RabbitMQ", x.Name)
		return
	}
	if len(x.Name) > 255 {
		e.add(pos, "exchange name `%s…` is longer than 255 bytes", x.Name[:32])
		return
	}
	if x.Arguments == nil {
		x.Arguments = map[string]any{}
	}
	if i, ok := e.exIdx[x.Name]; ok {
		prev := e.m.Rabbit.Exchanges[i]
		if !reflect.DeepEqual(prev.Exchange, x) {
			e.add(pos, "exchange `%s` is declared twice with different settings (first at %s)", x.Name, prev.Pos)
		}
		return
	}
	e.exIdx[x.Name] = len(e.m.Rabbit.Exchanges)
	e.m.Rabbit.Exchanges = append(e.m.Rabbit.Exchanges, Exchange{Exchange: x, Pos: pos, From: from})
}

func (e *expander) binding(b broker.Binding, pos Pos, from string) {
	if b.Arguments == nil {
		b.Arguments = map[string]any{}
	}
	k := bindingKey(b)
	if e.bindSeen[k] {
		return
	}
	e.bindSeen[k] = true
	e.m.Rabbit.Bindings = append(e.m.Rabbit.Bindings, Binding{Binding: b, Pos: pos, From: from})
}

func bindingKey(b broker.Binding) string {
	dt := b.DestinationType
	if dt == "" {
		dt = "queue"
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s", b.Source, dt, b.Destination, b.RoutingKey, canonical(b.Arguments))
}

func (e *expander) policy(p broker.Policy, pos Pos, from string) {
	if p.Name == "" {
		e.add(pos, "policy needs a `name`")
		return
	}
	if i, ok := e.polIdx[p.Name]; ok {
		prev := e.m.Rabbit.Policies[i]
		if !reflect.DeepEqual(prev.Policy, p) {
			e.add(pos, "policy `%s` is declared twice with different settings (first at %s)", p.Name, prev.Pos)
		}
		return
	}
	e.polIdx[p.Name] = len(e.m.Rabbit.Policies)
	e.m.Rabbit.Policies = append(e.m.Rabbit.Policies, Policy{Policy: p, Pos: pos, From: from})
}

func (e *expander) queue(qi queueIntent) {
	name := e.name(qi.name)
	what := fmt.Sprintf("queue `%s`", name)
	switch {
	case qi.name == "":
		e.add(qi.pos, "queue needs a non-empty `name`")
		return
	case strings.HasPrefix(name, "amq."):
		e.add(qi.pos, "%s: names starting with amq. are reserved by RabbitMQ", what)
		return
	case len(name) > 255:
		e.add(qi.pos, "queue name `%s…` is longer than 255 bytes", name[:32])
		return
	}
	args := normalizeTable(qi.args)
	if args == nil {
		args = map[string]any{}
	}
	if t, ok := args["x-queue-type"]; ok && t != qi.typ {
		e.add(qi.pos, "%s: `type: %s` disagrees with argument x-queue-type %v", what, qi.typ, t)
	}
	if qi.typ != "classic" {
		args["x-queue-type"] = qi.typ
		if !qi.durable || qi.autoDelete {
			e.add(qi.pos, "%s: %s queues are always durable and never auto-delete", what, qi.typ)
		}
	}
	if qi.deliveryLimit != nil && qi.typ != "quorum" {
		e.add(qi.pos, "%s: `delivery_limit` needs a quorum queue (`type: quorum`)", what)
	}
	if qi.deliveryLimit != nil && *qi.deliveryLimit < 0 {
		e.add(qi.pos, "%s: `delivery_limit` must be 0 or more", what)
	}
	if qi.typ == "stream" && (qi.dlx != nil || qi.ttl != nil) {
		e.add(qi.pos, "%s: streams do not dead-letter or expire messages one by one: drop `dead_letter` and `message_ttl`", what)
	}
	if qi.ttl != nil {
		if ms := qi.ttl.Milliseconds(); ms > maxTTL || *qi.ttl%time.Millisecond != 0 {
			e.add(qi.pos, "%s: `message_ttl` must be whole milliseconds up to %d", what, int64(maxTTL))
		}
	}
	if qi.dlrk != nil && qi.dlx == nil {
		e.add(qi.pos, "%s: a dead-letter routing key needs a dead-letter exchange", what)
	}
	settings := map[string]any{}
	if qi.dlx != nil {
		settings["dead-letter-exchange"] = e.name(*qi.dlx)
	}
	if qi.dlrk != nil {
		settings["dead-letter-routing-key"] = *qi.dlrk
	}
	if qi.ttl != nil {
		settings["message-ttl"] = qi.ttl.Milliseconds()
	}
	if qi.deliveryLimit != nil {
		settings["delivery-limit"] = *qi.deliveryLimit
	}
	if qi.maxLength != nil {
		settings["max-length"] = *qi.maxLength
	}
	if r := qi.delayedRetry; r != nil {
		e.delayedRetry(qi, what, settings)
	}
	if qi.via == "arguments" {
		for k, v := range settings {
			if old, ok := args["x-"+k]; ok && !reflect.DeepEqual(old, v) {
				e.add(qi.pos, "%s: argument x-%s %v disagrees with the setting %v", what, k, old, v)
			}
			args["x-"+k] = v
		}
		if qi.policy != nil {
			e.add(qi.pos, "%s: `policy` needs `dead_letter_via: policy`", what)
		}
	} else if len(settings) > 0 || (qi.policy != nil && len(qi.policy.Definition) > 0) {
		p := broker.Policy{Name: name + ".dlq-policy", Pattern: "^" + regexp.QuoteMeta(name) + "$", ApplyTo: "queues",
			Priority: defaultPolicyPriority, Definition: settings}
		if pp := e.defaults().PolicyPriority; pp != nil {
			p.Priority = *pp
		}
		if qi.policy != nil {
			if qi.policy.Name != "" {
				p.Name = e.name(qi.policy.Name)
			}
			if qi.policy.Priority != nil {
				p.Priority = *qi.policy.Priority
			}
			maps.Copy(p.Definition, normalizeTable(qi.policy.Definition))
		}
		e.policy(p, qi.pos, qi.from)
	}
	q := broker.QueueDecl{Name: name, Durable: qi.durable, AutoDelete: qi.autoDelete, Arguments: args}
	if i, ok := e.qIdx[name]; ok {
		prev := e.m.Rabbit.Queues[i]
		if !reflect.DeepEqual(prev.QueueDecl, q) {
			e.add(qi.pos, "%s is declared twice with different settings (first at %s)", what, prev.Pos)
		}
		return
	}
	e.qIdx[name] = len(e.m.Rabbit.Queues)
	e.m.Rabbit.Queues = append(e.m.Rabbit.Queues, Queue{QueueDecl: q, Kind: qi.typ, Pos: qi.pos, From: qi.from})
}

// Ladder is an expanded RabbitMQ retry ladder. Its names are final
// (prefixed). RabbitMQ counts deaths in x-death but has no attempt limit of
// its own, so the consumer enforces MaxAttempts: see OnFailure.
type Ladder struct {
	Name             string       `json:"name"`
	MainExchange     string       `json:"main_exchange"`
	MainQueue        string       `json:"main_queue"`
	ReturnRoutingKey string       `json:"return_routing_key"`
	RetryExchange    string       `json:"retry_exchange"`
	Tiers            []LadderTier `json:"tiers"`
	DeadExchange     string       `json:"dead_exchange"`
	DeadQueue        string       `json:"dead_queue"`
	MaxAttempts      int          `json:"max_attempts"`
	Pos              Pos          `json:"position"`
}

// LadderTier is one delay step.
type LadderTier struct {
	Delay      time.Duration `json:"delay"`
	Queue      string        `json:"queue"`
	RoutingKey string        `json:"routing_key"`
	Pos        Pos           `json:"position"`
}

func (e *expander) ladder(l *RetryLadder) {
	from := "retry ladder " + l.Name
	if len(l.Tiers) == 0 {
		e.add(l.Pos, "retry ladder `%s` needs at least one tier", l.Name)
		return
	}
	if len(l.Main.RoutingKeys) == 0 {
		e.add(l.Pos, "retry ladder `%s`: `main.routing_keys` needs at least one key", l.Name)
		return
	}
	typ := e.queueType(l.QueueType, l.Pos, fmt.Sprintf("retry ladder `%s`", l.Name))
	via := e.via(l.DeadLetterVia)
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	mainX := or(l.Main.Exchange, l.Name+".main.x")
	mainQ := or(l.Main.Queue, l.Name+".main.q")
	retryX := or(l.RetryExchange, l.Name+".retry.x")
	var dead LadderDead
	if l.Dead != nil {
		dead = *l.Dead
	}
	deadX := or(dead.Exchange, l.Name+".dead.x")
	deadQ := or(dead.Queue, l.Name+".dead.q")
	// By default retried messages come back with a key the first binding
	// matches, never the pattern itself (`order.#` gives `order`).
	ret := or(l.Main.ReturnRoutingKey, concreteKey(l.Main.RoutingKeys[0], l.Name))
	maxAttempts := l.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = len(l.Tiers) + 1
	}
	if maxAttempts < 1 {
		e.add(l.Pos, "retry ladder `%s`: `max_attempts` must be at least 1", l.Name)
	}
	lad := Ladder{Name: l.Name, MainExchange: e.name(mainX), MainQueue: e.name(mainQ), ReturnRoutingKey: ret,
		RetryExchange: e.name(retryX), DeadExchange: e.name(deadX), DeadQueue: e.name(deadQ), MaxAttempts: maxAttempts, Pos: l.Pos}
	d := e.durable()
	mainType := or(l.Main.ExchangeType, "topic")
	e.exchange(broker.Exchange{Name: e.name(mainX), Type: mainType, Durable: d, Arguments: map[string]any{}}, l.Pos, from)
	e.exchange(broker.Exchange{Name: e.name(retryX), Type: "direct", Durable: d, Arguments: map[string]any{}}, l.Pos, from)
	e.exchange(broker.Exchange{Name: e.name(deadX), Type: "fanout", Durable: d, Arguments: map[string]any{}}, l.Pos, from)
	for i, t := range l.Tiers {
		delay := t.Delay.D()
		if delay <= 0 {
			e.add(t.Pos, "retry ladder `%s`: tier %d needs a `delay` above 0", l.Name, i+1)
		}
		q, k := l.Name+".retry.q", l.Name+".retry"
		if len(l.Tiers) > 1 {
			q, k = l.Name+".retry."+FormatDuration(delay)+".q", l.Name+".retry."+FormatDuration(delay)
		}
		lad.Tiers = append(lad.Tiers, LadderTier{Delay: delay, Queue: e.name(or(t.Queue, q)), RoutingKey: or(t.RoutingKey, k), Pos: t.Pos})
	}
	first := lad.Tiers[0].RoutingKey
	e.queue(queueIntent{name: mainQ, typ: typ, durable: d, dlx: &retryX, dlrk: &first, deliveryLimit: l.Main.DeliveryLimit,
		via: via, pos: l.Pos, from: from})
	for _, k := range l.Main.RoutingKeys {
		e.binding(broker.Binding{Source: e.name(mainX), Destination: e.name(mainQ), DestinationType: "queue", RoutingKey: k}, l.Pos, from)
	}
	for i, t := range lad.Tiers {
		ttl := t.Delay
		tq := strings.TrimPrefix(t.Queue, e.spec.NamePrefix)
		e.queue(queueIntent{name: tq, typ: typ, durable: d, dlx: &mainX, dlrk: &ret, ttl: &ttl, via: via, pos: l.Tiers[i].Pos, from: from})
		e.binding(broker.Binding{Source: e.name(retryX), Destination: t.Queue, DestinationType: "queue", RoutingKey: t.RoutingKey}, l.Tiers[i].Pos, from)
	}
	e.queue(queueIntent{name: deadQ, typ: typ, durable: d, via: via, pos: l.Pos, from: from})
	e.binding(broker.Binding{Source: e.name(deadX), Destination: e.name(deadQ), DestinationType: "queue"}, l.Pos, from)
	e.m.Rabbit.Ladders = append(e.m.Rabbit.Ladders, lad)
}

func (e *expander) workQueue(w *WorkQueue) {
	from := "work queue " + w.Queue
	d := e.durable()
	typ := e.queueType(w.QueueType, w.Pos, fmt.Sprintf("work queue `%s`", w.Queue))
	dl := w.DeadLetter
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	e.exchange(broker.Exchange{Name: e.name(w.Exchange), Type: or(w.ExchangeType, "topic"), Durable: d, Arguments: map[string]any{}}, w.Pos, from)
	e.exchange(broker.Exchange{Name: e.name(dl.Exchange), Type: or(dl.ExchangeType, "topic"), Durable: d, Arguments: map[string]any{}}, w.Pos, from)
	qi := queueIntent{name: w.Queue, typ: typ, durable: d, dlx: &dl.Exchange, dlrk: dl.RoutingKey, deliveryLimit: w.DeliveryLimit,
		delayedRetry: w.DelayedRetry, via: e.via(w.DeadLetterVia), pos: w.Pos, from: from}
	if w.MessageTTL != nil {
		t := w.MessageTTL.D()
		qi.ttl = &t
	}
	e.queue(qi)
	for _, k := range w.RoutingKeys {
		e.binding(broker.Binding{Source: e.name(w.Exchange), Destination: e.name(w.Queue), DestinationType: "queue", RoutingKey: k}, w.Pos, from)
	}
	e.queue(queueIntent{name: dl.Queue, typ: or(dl.QueueType, typ), durable: d, via: e.via(w.DeadLetterVia), pos: w.Pos, from: from})
	e.binding(broker.Binding{Source: e.name(dl.Exchange), Destination: e.name(dl.Queue), DestinationType: "queue", RoutingKey: or(dl.BindingKey, "#")}, w.Pos, from)
}

// expandRabbitMQ expands the spec's `rabbitmq:` section, if any.
func expandRabbitMQ(e *expander) bool {
	if e.spec.RabbitMQ == nil {
		return false
	}
	e.rabbit(e.spec.RabbitMQ)
	return true
}

// delayedRetry checks a queue's native delayed retry and adds it to its
// settings (delayed-retry-type, -min and -max, in milliseconds).
func (e *expander) delayedRetry(qi queueIntent, what string, settings map[string]any) {
	r := qi.delayedRetry
	if qi.typ != "quorum" {
		e.add(qi.pos, "%s: `delayed_retry` needs a quorum queue (`type: quorum`); RabbitMQ 4.3 refuses it on other queues", what)
	}
	if !slices.Contains(rabbitrules.DelayedRetryTypes, r.Type) {
		e.add(qi.pos, "%s: `delayed_retry.type` must be one of %s", what, strings.Join(rabbitrules.DelayedRetryTypes, ", "))
	}
	ms := func(d Duration, field string) int64 {
		if d.D() <= 0 || d.D() > maxTTL*time.Millisecond || d.D()%time.Millisecond != 0 {
			e.add(qi.pos, "%s: `delayed_retry.%s` must be whole milliseconds, more than 0 and up to %d", what, field, int64(maxTTL))
		}
		return d.D().Milliseconds()
	}
	settings["delayed-retry-type"] = r.Type
	if r.Type == "disabled" && r.Min == 0 && r.Max == nil {
		return
	}
	lo := ms(r.Min, "min")
	settings["delayed-retry-min"] = lo
	if r.Max != nil {
		hi := ms(*r.Max, "max")
		if hi < lo {
			e.add(qi.pos, "%s: `delayed_retry.max` (%s) is shorter than `min` (%s)", what, FormatDuration(r.Max.D()), FormatDuration(r.Min.D()))
		}
		settings["delayed-retry-max"] = hi
	}
}
