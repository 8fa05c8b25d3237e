package topology

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// One piece, though long: the schema is one table, and its walker and
// its reference rendering must read it the same way.
//
// The schema of the spec file. check walks a parsed YAML document against
// it and reports every problem at its line and column; SchemaReference
// renders it for `dlq help topology-spec`.

type kind int

const (
	kStr     kind = iota // a string
	kInt                 // an integer
	kBool                // true or false
	kDur                 // a duration: 300ms, 15s, 1m, 4d
	kStrList             // a list of strings
	kDurList             // a list of durations
	kObj                 // a mapping with known fields
	kList                // a list of mappings with known fields
	kArgs                // a mapping of names to values (queue arguments, policy definitions)
	kStrMap              // a mapping of names to strings (SQS attributes)
)

func (k kind) String() string {
	switch k {
	case kStr:
		return "string"
	case kInt:
		return "integer"
	case kBool:
		return "bool"
	case kDur:
		return "duration"
	case kStrList:
		return "list of strings"
	case kDurList:
		return "list of durations"
	case kObj:
		return "object"
	case kList:
		return "list"
	case kArgs:
		return "map"
	case kStrMap:
		return "map of strings"
	}
	return "?"
}

type field struct {
	name string
	kind kind
	obj  *object
	enum []string
	req  bool
	doc  string
}

type object struct {
	what   string // "queue", "retry ladder": used in messages
	fields []field
}

func (o *object) field(name string) (field, bool) {
	for _, f := range o.fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func (o *object) names() []string {
	n := make([]string, len(o.fields))
	for i, f := range o.fields {
		n[i] = f.name
	}
	return n
}

var (
	queueTypes    = []string{"classic", "quorum", "stream"}
	deadLetterVia = []string{"policy", "arguments"}
	exchangeTypes = []string{"direct", "topic", "fanout", "headers"}
)

func sqsSettingsFields() []field {
	return []field{
		{name: "visibility_timeout", kind: kDur, doc: "VisibilityTimeout (0s–12h)"},
		{name: "retention", kind: kDur, doc: "MessageRetentionPeriod (1m–14d)"},
		{name: "receive_wait", kind: kDur, doc: "ReceiveMessageWaitTimeSeconds, long polling (0s–20s)"},
		{name: "delay", kind: kDur, doc: "DelaySeconds (0s–15m)"},
		{name: "max_message_size", kind: kInt, doc: "MaximumMessageSize in bytes (1024–262144)"},
		{name: "content_based_deduplication", kind: kBool, doc: "ContentBasedDeduplication (FIFO queues only)"},
		{name: "attributes", kind: kStrMap, doc: "any other attributes by their SQS name, verbatim"},
	}
}

// schemas is the spec format, built on first use (a spec read, the
// reference printed) rather than when dlq starts. settings is the one
// object of SQS queue settings that the reference prints once.
type schemas struct{ spec, settings *object }

var specSchemas = sync.OnceValue(func() schemas {
	sqsSettingsObj := &object{what: "sqs queue settings", fields: sqsSettingsFields()}
	return schemas{spec: newSpecSchema(sqsSettingsObj), settings: sqsSettingsObj}
})

func newSpecSchema(sqsSettingsObj *object) *object {
	return &object{what: "spec", fields: []field{
		{name: "version", kind: kInt, req: true, doc: "spec format version: 1"},
		{name: "name_prefix", kind: kStr, doc: "prepended to every name the spec declares (not to raw policy patterns)"},
		{name: "lint", kind: kObj, doc: "linter settings", obj: &object{what: "lint", fields: []field{
			{name: "ignore", kind: kStrList, doc: "rule names to skip (see `dlq topology lint --help`)"},
		}}},
		{name: "rabbitmq", kind: kObj, doc: "RabbitMQ topology of one vhost", obj: &object{what: "rabbitmq", fields: []field{
			{name: "vhost", kind: kStr, doc: "the vhost this spec is for (checked against the broker; default: the broker's)"},
			{name: "defaults", kind: kObj, doc: "defaults for every queue and construct", obj: &object{what: "defaults", fields: []field{
				{name: "queue_type", kind: kStr, enum: queueTypes[:2], doc: "classic or quorum: every queue needs a type, from here or its own"},
				{name: "dead_letter_via", kind: kStr, enum: deadLetterVia, doc: "policy (default) or arguments: how DLX, TTL, delivery limit and max length are set"},
				{name: "durable", kind: kBool, doc: "durable exchanges and queues (default true)"},
				{name: "policy_priority", kind: kInt, doc: "priority of generated policies (default 10)"},
			}}},
			{name: "retry_ladders", kind: kList, doc: "main → retry tiers (TTL) → back to main; after max attempts → dead", obj: &object{what: "retry ladder", fields: []field{
				{name: "name", kind: kStr, req: true, doc: "base of the generated names (NAME.main.x, NAME.main.q, NAME.retry.x, NAME.retry.q, NAME.dead.x, NAME.dead.q)"},
				{name: "queue_type", kind: kStr, enum: queueTypes[:2], doc: "classic or quorum (default: defaults.queue_type)"},
				{name: "dead_letter_via", kind: kStr, enum: deadLetterVia, doc: "policy or arguments"},
				{name: "main", kind: kObj, req: true, doc: "the main exchange and work queue", obj: &object{what: "ladder main", fields: []field{
					{name: "exchange", kind: kStr, doc: "main exchange (default NAME.main.x)"},
					{name: "exchange_type", kind: kStr, enum: exchangeTypes, doc: "default topic"},
					{name: "queue", kind: kStr, doc: "main queue (default NAME.main.q)"},
					{name: "routing_keys", kind: kStrList, req: true, doc: "keys binding the main queue to the main exchange"},
					{name: "return_routing_key", kind: kStr, doc: "key retried messages come back with (default: the first routing key with its wildcards removed: order.# gives order)"},
					{name: "delivery_limit", kind: kInt, doc: "quorum x-delivery-limit of the main queue"},
				}}},
				{name: "retry_exchange", kind: kStr, doc: "retry exchange, direct (default NAME.retry.x)"},
				{name: "tiers", kind: kList, req: true, doc: "delay tiers, shortest first", obj: &object{what: "tier", fields: []field{
					{name: "delay", kind: kDur, req: true, doc: "x-message-ttl of the tier queue"},
					{name: "queue", kind: kStr, doc: "tier queue (default NAME.retry.q for one tier, NAME.retry.DELAY.q for several)"},
					{name: "routing_key", kind: kStr, doc: "tier key on the retry exchange (default NAME.retry or NAME.retry.DELAY)"},
				}}},
				{name: "max_attempts", kind: kInt, doc: "attempts before a message is parked in the dead queue (default: tiers + 1); enforced by the consumer from x-death"},
				{name: "dead", kind: kObj, doc: "the parking lot", obj: &object{what: "ladder dead", fields: []field{
					{name: "exchange", kind: kStr, doc: "dead exchange, fanout (default NAME.dead.x)"},
					{name: "queue", kind: kStr, doc: "dead queue (default NAME.dead.q)"},
				}}},
			}}},
			{name: "work_queues", kind: kList, doc: "a work queue with a dead-letter exchange and DLQ", obj: &object{what: "work queue", fields: []field{
				{name: "exchange", kind: kStr, req: true, doc: "exchange the work is published to"},
				{name: "exchange_type", kind: kStr, enum: exchangeTypes, doc: "default topic"},
				{name: "queue", kind: kStr, req: true, doc: "the work queue"},
				{name: "routing_keys", kind: kStrList, req: true, doc: "binding keys of the work queue"},
				{name: "queue_type", kind: kStr, enum: queueTypes[:2], doc: "classic or quorum"},
				{name: "dead_letter_via", kind: kStr, enum: deadLetterVia, doc: "policy or arguments"},
				{name: "delivery_limit", kind: kInt, doc: "quorum x-delivery-limit: poison messages leave after N deliveries"},
				{name: "message_ttl", kind: kDur, doc: "x-message-ttl of the work queue"},
				{name: "delayed_retry", kind: kObj, doc: "RabbitMQ 4.3, quorum: native delayed retry, an alternative to a retry ladder", obj: &object{what: "delayed_retry", fields: []field{
					{name: "type", kind: kStr, req: true, enum: rabbitrules.DelayedRetryTypes, doc: "which returns wait: all, failed, returned or disabled"},
					{name: "min", kind: kDur, doc: "delay of the first return; the n-th waits n × min (required unless disabled)"},
					{name: "max", kind: kDur, doc: "the longest delay"},
				}}},
				{name: "dead_letter", kind: kObj, req: true, doc: "where dead letters go", obj: &object{what: "work queue dead_letter", fields: []field{
					{name: "exchange", kind: kStr, req: true, doc: "the dead-letter exchange"},
					{name: "exchange_type", kind: kStr, enum: exchangeTypes, doc: "default topic"},
					{name: "routing_key", kind: kStr, doc: "x-dead-letter-routing-key (default: keep the message's key)"},
					{name: "queue", kind: kStr, req: true, doc: "the DLQ"},
					{name: "binding_key", kind: kStr, doc: "key binding the DLQ to the dead-letter exchange (default #)"},
					{name: "queue_type", kind: kStr, enum: queueTypes[:2], doc: "type of the DLQ (default: the work queue's)"},
				}}},
			}}},
			{name: "exchanges", kind: kList, doc: "exchanges, declared as written", obj: &object{what: "exchange", fields: []field{
				{name: "name", kind: kStr, req: true},
				{name: "type", kind: kStr, req: true, doc: "direct, topic, fanout, headers or a plugin type (x-…)"},
				{name: "durable", kind: kBool, doc: "default true"},
				{name: "auto_delete", kind: kBool},
				{name: "internal", kind: kBool},
				{name: "arguments", kind: kArgs, doc: "for example alternate-exchange"},
			}}},
			{name: "queues", kind: kList, doc: "queues, declared as written", obj: &object{what: "queue", fields: []field{
				{name: "name", kind: kStr, req: true},
				{name: "type", kind: kStr, enum: queueTypes, doc: "classic, quorum or stream (default: defaults.queue_type)"},
				{name: "durable", kind: kBool, doc: "default true"},
				{name: "auto_delete", kind: kBool},
				{name: "dead_letter", kind: kObj, doc: "dead-letter exchange and key", obj: &object{what: "dead_letter", fields: []field{
					{name: "exchange", kind: kStr, req: true, doc: "dead-letter exchange (\"\" for the default exchange)"},
					{name: "routing_key", kind: kStr, doc: "dead-letter routing key (default: keep the message's key)"},
				}}},
				{name: "message_ttl", kind: kDur, doc: "message TTL"},
				{name: "delivery_limit", kind: kInt, doc: "quorum delivery limit"},
				{name: "max_length", kind: kInt, doc: "max messages"},
				{name: "delayed_retry", kind: kObj, doc: "RabbitMQ 4.3, quorum: native delayed retry, an alternative to a retry ladder", obj: &object{what: "delayed_retry", fields: []field{
					{name: "type", kind: kStr, req: true, enum: rabbitrules.DelayedRetryTypes, doc: "which returns wait: all, failed, returned or disabled"},
					{name: "min", kind: kDur, doc: "delay of the first return; the n-th waits n × min (required unless disabled)"},
					{name: "max", kind: kDur, doc: "the longest delay"},
				}}},
				{name: "dead_letter_via", kind: kStr, enum: deadLetterVia, doc: "policy or arguments for the settings above"},
				{name: "policy", kind: kObj, doc: "the generated policy (dead_letter_via: policy)", obj: &object{what: "policy", fields: []field{
					{name: "name", kind: kStr, doc: "default QUEUE.dlq-policy"},
					{name: "priority", kind: kInt, doc: "default defaults.policy_priority"},
					{name: "definition", kind: kArgs, doc: "extra definition keys"},
				}}},
				{name: "arguments", kind: kArgs, doc: "raw queue arguments (x-…), declared as written"},
				{name: "bind", kind: kList, doc: "bindings of this queue", obj: &object{what: "bind", fields: []field{
					{name: "exchange", kind: kStr, req: true},
					{name: "routing_key", kind: kStr},
					{name: "arguments", kind: kArgs},
				}}},
			}}},
			{name: "bindings", kind: kList, doc: "bindings", obj: &object{what: "binding", fields: []field{
				{name: "exchange", kind: kStr, req: true, doc: "source exchange"},
				{name: "queue", kind: kStr, doc: "destination queue"},
				{name: "to_exchange", kind: kStr, doc: "destination exchange (instead of queue)"},
				{name: "routing_key", kind: kStr},
				{name: "routing_keys", kind: kStrList, doc: "one binding per key"},
				{name: "arguments", kind: kArgs},
			}}},
			{name: "policies", kind: kList, doc: "policies", obj: &object{what: "policy", fields: []field{
				{name: "name", kind: kStr, req: true},
				{name: "pattern", kind: kStr, doc: "regular expression over names, as written"},
				{name: "match", kind: kStrList, doc: "exact names instead of a pattern (name_prefix applies)"},
				{name: "apply_to", kind: kStr, enum: []string{"queues", "exchanges", "all"}, doc: "default queues"},
				{name: "priority", kind: kInt},
				{name: "definition", kind: kArgs, req: true, doc: "dead-letter-exchange, dead-letter-routing-key, message-ttl, delivery-limit, …"},
			}}},
		}}},
		{name: "sqs", kind: kObj, doc: "SQS queues of one account and region", obj: &object{what: "sqs", fields: []field{
			{name: "pairs", kind: kList, doc: "a source queue and its DLQ with safe defaults", obj: &object{what: "sqs pair", fields: []field{
				{name: "name", kind: kStr, req: true, doc: "source queue (NAME.fifo makes a FIFO pair)"},
				{name: "dlq", kind: kStr, doc: "DLQ (default NAME-dlq, or NAME-dlq.fifo)"},
				{name: "max_receive_count", kind: kInt, doc: "receives before a message moves to the DLQ (default 5)"},
				{name: "source", kind: kObj, obj: sqsSettingsObj, doc: "source settings (defaults: visibility 30s, retention 4d, receive_wait 20s, delay 0s)"},
				{name: "dead_letter_queue", kind: kObj, obj: sqsSettingsObj, doc: "DLQ settings (defaults: visibility 30s, retention 14d, receive_wait 20s)"},
			}}},
			{name: "retry_ladders", kind: kList, doc: "a main queue, one delay queue per tier and a DLQ", obj: &object{what: "sqs retry ladder", fields: []field{
				{name: "name", kind: kStr, req: true, doc: "main queue; tiers are NAME-retry-DELAY"},
				{name: "tiers", kind: kDurList, req: true, doc: "DelaySeconds of each delay queue, shortest first (≤ 15m)"},
				{name: "max_receive_count", kind: kInt, doc: "default 5"},
				{name: "dlq", kind: kStr, doc: "default NAME-dlq"},
				{name: "source", kind: kObj, obj: sqsSettingsObj},
				{name: "dead_letter_queue", kind: kObj, obj: sqsSettingsObj},
			}}},
			{name: "queues", kind: kList, doc: "queues with exactly the attributes written", obj: &object{what: "sqs queue", fields: append(
				[]field{{name: "name", kind: kStr, req: true, doc: "queue name (.fifo for FIFO)"}},
				append(sqsSettingsFields(),
					field{name: "dead_letter", kind: kObj, doc: "RedrivePolicy", obj: &object{what: "dead_letter", fields: []field{
						{name: "queue", kind: kStr, req: true, doc: "the DLQ's name"},
						{name: "max_receive_count", kind: kInt, req: true},
					}}},
					field{name: "redrive_allow", kind: kObj, doc: "RedriveAllowPolicy of a DLQ", obj: &object{what: "redrive_allow", fields: []field{
						{name: "permission", kind: kStr, req: true, enum: []string{"allowAll", "denyAll", "byQueue"}},
						{name: "sources", kind: kStrList, doc: "source queue names (byQueue)"},
					}}},
				)...)}},
		}}},
	}}
}

// Problem is one thing wrong in a spec, at a place.
type Problem struct {
	Pos Pos    `json:"position"`
	Msg string `json:"message"`
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// SpecError lists every problem found in a spec. Its Error() is the first
// problem and a count; Problems holds them all, one per line when printed.
type SpecError struct {
	Problems []Problem
}

func (e *SpecError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid spec"
	}
	s := e.Problems[0].String()
	if n := len(e.Problems) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

type checker struct {
	file     string
	problems []Problem
	budget   int // nodes left to visit: bounds alias expansion
}

func (c *checker) add(n *yaml.Node, format string, args ...any) {
	p := posOf(n)
	p.File = c.file
	c.problems = append(c.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func (c *checker) object(n *yaml.Node, o *object, depth int) {
	c.budget--
	if c.budget < 0 || depth > 32 {
		if c.budget == -1 {
			c.add(n, "spec too large or too deeply nested")
		}
		return
	}
	n = resolve(n)
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.add(n, "%s must be a mapping of fields (%s), not %s", o.what, strings.Join(o.names(), ", "), describe(n))
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.add(k, "%s: field names must be plain words", o.what)
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			c.add(k, "`%s` appears twice in %s (first at line %d)", k.Value, o.what, prev.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := o.field(k.Value)
		if !ok {
			msg := fmt.Sprintf("unknown field `%s` in %s", k.Value, o.what)
			if s := closest(k.Value, o.names()); s != "" {
				msg += fmt.Sprintf(": did you mean `%s`?", s)
			} else {
				msg += ": valid fields are " + strings.Join(o.names(), ", ")
			}
			c.add(k, "%s", msg)
			continue
		}
		c.value(v, f, depth+1)
	}
	for _, f := range o.fields {
		if f.req && seen[f.name] == nil {
			c.add(n, "%s needs `%s`", o.what, f.name)
		}
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (c *checker) scalar(n *yaml.Node, f field, what string) {
	switch f.kind {
	case kStr:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!bool" {
			c.add(n, "`%s` must be a string, not %s (quote it if needed)", what, describe(n))
			return
		}
		if len(f.enum) > 0 && !slices.Contains(f.enum, n.Value) {
			c.add(n, "`%s` is %q: use one of %s", what, n.Value, strings.Join(f.enum, ", "))
		}
	case kInt:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			c.add(n, "`%s` must be a whole number, not %s", what, describe(n))
		}
	case kBool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			c.add(n, "`%s` must be true or false, not %s", what, describe(n))
		}
	case kDur:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			c.add(n, "`%s` must be a duration such as 300ms, 15s, 1m or 4d, not %s", what, describe(n))
			return
		}
		if _, err := ParseDuration(n.Value); err != nil {
			c.add(n, "`%s` must be a duration with a unit such as 300ms, 15s, 1m or 4d, not %q", what, n.Value)
		}
	}
}

func (c *checker) value(n *yaml.Node, f field, depth int) {
	c.budget--
	if c.budget < 0 {
		return
	}
	n = resolve(n)
	if n == nil {
		return
	}
	switch f.kind {
	case kStr, kInt, kBool, kDur:
		c.scalar(n, f, f.name)
	case kStrList, kDurList:
		if n.Kind != yaml.SequenceNode {
			c.add(n, "`%s` must be a list, not %s", f.name, describe(n))
			return
		}
		ek := kStr
		if f.kind == kDurList {
			ek = kDur
		}
		for _, e := range n.Content {
			c.budget--
			c.scalar(resolve(e), field{kind: ek}, f.name+"[]")
		}
	case kObj:
		c.object(n, f.obj, depth)
	case kList:
		if n.Kind != yaml.SequenceNode {
			c.add(n, "`%s` must be a list of %ss, not %s", f.name, f.obj.what, describe(n))
			return
		}
		for _, e := range n.Content {
			c.object(e, f.obj, depth)
		}
	case kArgs, kStrMap:
		if n.Kind != yaml.MappingNode {
			c.add(n, "`%s` must be a mapping of names to values, not %s", f.name, describe(n))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			c.budget--
			if k.Kind != yaml.ScalarNode || k.Value == "" {
				c.add(k, "`%s`: keys must be non-empty names", f.name)
				continue
			}
			if seen[k.Value] {
				c.add(k, "`%s` appears twice in `%s`", k.Value, f.name)
			}
			seen[k.Value] = true
			if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				c.add(v, "`%s.%s` has no value", f.name, k.Value)
				continue
			}
			if f.kind == kStrMap && v.Kind != yaml.ScalarNode {
				c.add(v, "`%s.%s` must be a string", f.name, k.Value)
			}
			if f.kind == kArgs && depth > 30 {
				c.add(v, "`%s.%s` is nested too deeply", f.name, k.Value)
			}
		}
	}
}

// closest returns the valid name nearest to s by edit distance, if close.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := broker.EditDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// plural is the English plural of a schema object's name.
func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "y") && !strings.HasSuffix(s, "ey"):
		return strings.TrimSuffix(s, "y") + "ies"
	case strings.HasSuffix(s, "s"):
		return s
	}
	return s + "s"
}

// SchemaReference renders every field of the spec format, indented by
// nesting, with its type and meaning.
func SchemaReference() string {
	sch := specSchemas()
	var b strings.Builder
	var walk func(o *object, indent int)
	walk = func(o *object, indent int) {
		for _, f := range o.fields {
			t := f.kind.String()
			if f.kind == kList {
				t = "list of " + plural(f.obj.what)
			}
			if len(f.enum) > 0 {
				t = strings.Join(f.enum, "|")
			}
			if f.req {
				t += ", required"
			}
			name := strings.Repeat("  ", indent) + f.name
			fmt.Fprintf(&b, "%-32s %s", name, t)
			if f.doc != "" {
				fmt.Fprintf(&b, ": %s", f.doc)
			}
			b.WriteByte('\n')
			if f.obj != nil && (f.kind == kObj || f.kind == kList) && f.obj != sch.settings {
				walk(f.obj, indent+1)
			}
			if f.obj == sch.settings {
				fmt.Fprintf(&b, "%s(same fields as sqs.queues: visibility_timeout … attributes)\n", strings.Repeat("  ", indent+1))
			}
		}
	}
	walk(sch.spec, 0)
	return b.String()
}
