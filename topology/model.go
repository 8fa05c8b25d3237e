package topology

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Model is a spec expanded into the objects a broker holds: every
// high-level construct replaced by its exchanges, queues, bindings, policies
// and SQS queues, every default filled in, every name prefixed.
type Model struct {
	File   string
	Prefix string
	Rabbit *RabbitModel
	SQS    *SQSModel
	// Ignore is the lint rules the spec silences.
	Ignore []string
}

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

// SQSModel is the SQS half of a model.
type SQSModel struct {
	Queues  []SQSQueue
	Ladders []SQSLadder
}

// SQSQueue is an SQS queue with the attributes the spec sets. RedrivePolicy
// and RedriveAllowPolicy are kept as names (DeadLetter, RedriveAllow) and
// rendered with ARNs once the queues exist.
type SQSQueue struct {
	Name         string
	FIFO         bool
	Attributes   map[string]string
	DeadLetter   *SQSDeadLetter
	RedriveAllow *SQSRedriveAllow
	Pos          Pos
	From         string
}

// SQSLadder describes an expanded SQS retry ladder for consumers and graphs.
type SQSLadder struct {
	Main   string
	Tiers  []string
	Delays []time.Duration
	DLQ    string
	Pos    Pos
}

const (
	defaultPolicyPriority = 10
	maxTTL                = math.MaxUint32 // RabbitMQ's x-message-ttl limit, in ms
)

type expander struct {
	spec     *Spec
	m        *Model
	problems []Problem
	exIdx    map[string]int
	qIdx     map[string]int
	polIdx   map[string]int
	bindSeen map[string]bool
}

func (e *expander) add(p Pos, format string, args ...any) {
	if p.File == "" {
		p.File = e.spec.File
	}
	e.problems = append(e.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// name applies the spec's name_prefix, except to the default exchange and
// the built-in amq.* exchanges.
func (e *expander) name(n string) string {
	if n == "" || strings.HasPrefix(n, "amq.") {
		return n
	}
	return e.spec.NamePrefix + n
}

// Expand turns a parsed spec into a model. Problems that need more than the
// schema (duplicate names with different settings, impossible settings) are
// a *SpecError.
func Expand(s *Spec) (*Model, error) {
	e := &expander{spec: s, m: &Model{File: s.File, Prefix: s.NamePrefix},
		exIdx: map[string]int{}, qIdx: map[string]int{}, polIdx: map[string]int{}, bindSeen: map[string]bool{}}
	if s.Lint != nil {
		e.m.Ignore = s.Lint.Ignore
	}
	if s.Version != SpecVersion {
		e.add(Pos{Line: 1, Col: 1}, "`version: %d` is required", SpecVersion)
	}
	if s.RabbitMQ != nil {
		e.rabbit(s.RabbitMQ)
	}
	if s.SQS != nil {
		e.sqs(s.SQS)
	}
	if s.RabbitMQ == nil && s.SQS == nil {
		e.add(Pos{Line: 1, Col: 1}, "spec declares nothing: add a `rabbitmq:` or `sqs:` section")
	}
	if len(e.problems) > 0 {
		sort.SliceStable(e.problems, func(i, j int) bool { return e.problems[i].Pos.Line < e.problems[j].Pos.Line })
		return nil, &SpecError{Problems: e.problems}
	}
	return e.m, nil
}

// Load parses, validates and expands a spec file.
func Load(path string) (*Model, error) {
	s, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return Expand(s)
}

// LoadBytes parses, validates and expands a spec held in memory.
func LoadBytes(file string, data []byte) (*Model, error) {
	s, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	return Expand(s)
}

// ---- RabbitMQ ----

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
			via: e.via(q.DeadLetterVia), policy: q.Policy, args: q.Arguments, pos: q.Pos}
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
		via: e.via(w.DeadLetterVia), pos: w.Pos, from: from}
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

// ---- SQS ----

var sqsName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`) })

func (e *expander) sqs(s *SQSSpec) {
	e.m.SQS = &SQSModel{}
	seen := map[string]int{}
	addQ := func(q SQSQueue) {
		if i, ok := seen[q.Name]; ok {
			prev := e.m.SQS.Queues[i]
			if !reflect.DeepEqual(prev.Attributes, q.Attributes) || !reflect.DeepEqual(prev.DeadLetter, q.DeadLetter) {
				e.add(q.Pos, "sqs queue `%s` is declared twice with different settings (first at %s)", q.Name, prev.Pos)
			}
			return
		}
		seen[q.Name] = len(e.m.SQS.Queues)
		e.m.SQS.Queues = append(e.m.SQS.Queues, q)
	}
	dur := func(d time.Duration) *Duration { x := Duration(d); return &x }
	withDefaults := func(s SQSSettings, def SQSSettings) SQSSettings {
		if s.VisibilityTimeout == nil {
			s.VisibilityTimeout = def.VisibilityTimeout
		}
		if s.Retention == nil {
			s.Retention = def.Retention
		}
		if s.ReceiveWait == nil {
			s.ReceiveWait = def.ReceiveWait
		}
		if s.Delay == nil {
			s.Delay = def.Delay
		}
		return s
	}
	srcDefaults := SQSSettings{VisibilityTimeout: dur(30 * time.Second), Retention: dur(4 * 24 * time.Hour),
		ReceiveWait: dur(20 * time.Second), Delay: dur(0)}
	dlqDefaults := SQSSettings{VisibilityTimeout: dur(30 * time.Second), Retention: dur(14 * 24 * time.Hour),
		ReceiveWait: dur(20 * time.Second)}
	dlqName := func(name, own string) string {
		if own != "" {
			return own
		}
		if base, ok := strings.CutSuffix(name, ".fifo"); ok {
			return base + "-dlq.fifo"
		}
		return name + "-dlq"
	}
	mrc := func(n int) int {
		if n == 0 {
			return 5
		}
		return n
	}
	for _, p := range s.Pairs {
		from := "sqs pair " + p.Name
		dlq := dlqName(p.Name, p.DLQ)
		addQ(e.sqsQueue(dlq, withDefaults(p.DeadLetterQueue, dlqDefaults), nil,
			&SQSRedriveAllow{Permission: "byQueue", Sources: []string{p.Name}}, p.Pos, from))
		addQ(e.sqsQueue(p.Name, withDefaults(p.Source, srcDefaults),
			&SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(p.MaxReceiveCount)}, nil, p.Pos, from))
	}
	for _, l := range s.RetryLadders {
		from := "sqs retry ladder " + l.Name
		dlq := dlqName(l.Name, l.DLQ)
		if len(l.Tiers) == 0 {
			e.add(l.Pos, "sqs retry ladder `%s` needs at least one tier", l.Name)
			continue
		}
		base, fifo := strings.CutSuffix(l.Name, ".fifo")
		sources := []string{l.Name}
		lad := SQSLadder{Main: e.name(l.Name), DLQ: e.name(dlq), Pos: l.Pos}
		var tierQueues []SQSQueue
		for i, t := range l.Tiers {
			d := t.D()
			if d <= 0 || d > 15*time.Minute {
				e.add(l.Pos, "sqs retry ladder `%s`: tier %d is %s; SQS delays are 1s to 15m", l.Name, i+1, FormatDuration(d))
			}
			lad.Delays = append(lad.Delays, d)
			name := base + "-retry-" + FormatDuration(d)
			if fifo {
				name += ".fifo"
			}
			sources = append(sources, name)
			st := withDefaults(l.Source, srcDefaults)
			st.Delay = &l.Tiers[i]
			tierQueues = append(tierQueues, e.sqsQueue(name, st, &SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(l.MaxReceiveCount)}, nil, l.Pos, from))
			lad.Tiers = append(lad.Tiers, e.name(name))
		}
		if len(sources) > 10 {
			e.add(l.Pos, "sqs retry ladder `%s`: a DLQ's RedriveAllowPolicy names at most 10 sources; use fewer tiers", l.Name)
		}
		addQ(e.sqsQueue(dlq, withDefaults(l.DeadLetterQueue, dlqDefaults), nil, &SQSRedriveAllow{Permission: "byQueue", Sources: sources}, l.Pos, from))
		addQ(e.sqsQueue(l.Name, withDefaults(l.Source, srcDefaults), &SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(l.MaxReceiveCount)}, nil, l.Pos, from))
		for _, q := range tierQueues {
			addQ(q)
		}
		e.m.SQS.Ladders = append(e.m.SQS.Ladders, lad)
	}
	for _, q := range s.Queues {
		addQ(e.sqsQueue(q.Name, q.SQSSettings, q.DeadLetter, q.RedriveAllow, q.Pos, ""))
	}
}

func (e *expander) sqsQueue(name string, s SQSSettings, dl *SQSDeadLetter, ra *SQSRedriveAllow, pos Pos, from string) SQSQueue {
	full := e.name(name)
	q := SQSQueue{Name: full, Attributes: map[string]string{}, Pos: pos, From: from}
	base, fifo := strings.CutSuffix(full, ".fifo")
	q.FIFO = fifo
	what := fmt.Sprintf("sqs queue `%s`", full)
	if !sqsName().MatchString(base) || len(full) > 80 {
		e.add(pos, "%s: SQS names are 1 to 80 letters, digits, - and _ (FIFO names end in .fifo)", what)
	}
	secs := func(field, attr string, d *Duration, lo, hi time.Duration) {
		if d == nil {
			return
		}
		v := d.D()
		if v%time.Second != 0 || v < lo || v > hi {
			e.add(pos, "%s: `%s` must be whole seconds from %s to %s, not %s", what, field, FormatDuration(lo), FormatDuration(hi), FormatDuration(v))
			return
		}
		q.Attributes[attr] = fmt.Sprint(int64(v / time.Second))
	}
	secs("visibility_timeout", "VisibilityTimeout", s.VisibilityTimeout, 0, 12*time.Hour)
	secs("retention", "MessageRetentionPeriod", s.Retention, time.Minute, 14*24*time.Hour)
	secs("receive_wait", "ReceiveMessageWaitTimeSeconds", s.ReceiveWait, 0, 20*time.Second)
	secs("delay", "DelaySeconds", s.Delay, 0, 15*time.Minute)
	if s.MaxMessageSize != nil {
		if *s.MaxMessageSize < 1024 || *s.MaxMessageSize > 1048576 {
			e.add(pos, "%s: `max_message_size` must be 1024 to 1048576 bytes", what)
		}
		q.Attributes["MaximumMessageSize"] = fmt.Sprint(*s.MaxMessageSize)
	}
	if fifo {
		q.Attributes["FifoQueue"] = "true"
	}
	if s.ContentBasedDeduplication != nil {
		if !fifo {
			e.add(pos, "%s: `content_based_deduplication` is for FIFO queues (names ending in .fifo)", what)
		}
		q.Attributes["ContentBasedDeduplication"] = fmt.Sprint(*s.ContentBasedDeduplication)
	}
	for k, v := range s.Attributes {
		switch k {
		case "RedrivePolicy", "RedriveAllowPolicy":
			e.add(pos, "%s: set %s with `dead_letter` / `redrive_allow`, which name queues rather than ARNs", what, k)
			continue
		case "QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
			"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp":
			e.add(pos, "%s: %s is read-only", what, k)
			continue
		}
		if old, ok := q.Attributes[k]; ok && old != v {
			e.add(pos, "%s: attribute %s=%s disagrees with the setting %s", what, k, v, old)
		}
		q.Attributes[k] = v
	}
	if dl != nil {
		if dl.MaxReceiveCount < 1 || dl.MaxReceiveCount > 1000 {
			e.add(pos, "%s: `max_receive_count` must be 1 to 1000", what)
		}
		q.DeadLetter = &SQSDeadLetter{Queue: e.name(dl.Queue), MaxReceiveCount: dl.MaxReceiveCount}
		if q.DeadLetter.Queue == full {
			e.add(pos, "%s dead-letters into itself: name another queue in `dead_letter.queue`", what)
		}
	}
	if ra != nil {
		r := &SQSRedriveAllow{Permission: ra.Permission}
		for _, s := range ra.Sources {
			r.Sources = append(r.Sources, e.name(s))
		}
		switch {
		case ra.Permission == "byQueue" && (len(ra.Sources) == 0 || len(ra.Sources) > 10):
			e.add(pos, "%s: `redrive_allow` byQueue needs 1 to 10 `sources`", what)
		case ra.Permission != "byQueue" && len(ra.Sources) > 0:
			e.add(pos, "%s: `redrive_allow.sources` needs `permission: byQueue`", what)
		}
		q.RedriveAllow = r
	}
	return q
}

// ---- values ----

// normalizeTable returns a copy of t with every number as int64 (when whole)
// or float64, so that values from YAML, JSON and the brokers compare equal.
func normalizeTable(t map[string]any) map[string]any {
	if t == nil {
		return nil
	}
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = normalizeValue(v)
	}
	return out
}

func normalizeValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	case uint:
		return int64(x)
	case float32:
		return normalizeValue(float64(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case map[string]any:
		return normalizeTable(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeValue(e)
		}
		return out
	default:
		return v
	}
}

// canonical renders a normalized value deterministically, for keys and
// comparisons.
func canonical(v any) string {
	switch x := normalizeValue(v).(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%s", k, canonical(x[k]))
		}
		b.WriteByte('}')
		return b.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canonical(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return "null"
	default:
		return fmt.Sprint(x)
	}
}

func equalValues(a, b any) bool { return canonical(a) == canonical(b) }
