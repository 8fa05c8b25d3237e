// Package topology declares retry and dead-letter topologies on RabbitMQ and
// SQS from one reviewed spec file: it parses and validates the file, expands
// high-level constructs (retry ladders, work queues with a DLQ, SQS pairs)
// into exchanges, queues, bindings, policies and SQS queues, lints them
// offline, plans the difference with what a broker has, applies that plan in
// dependency order, exports a broker's topology back into the spec format,
// and draws it as a graph.
//
// The library speaks only the broker package's interfaces
// (broker.RabbitTopologyReader, broker.RabbitTopologyApplier,
// broker.SQSTopologyReader, broker.SQSTopologyApplier).
//
// What every broker shares (the spec's parser, the plan and its rendering,
// the lint framework, the graph) is in files without a broker's name. Each
// broker's expansion, plan, export and lint rules are in files of its own
// (model_rabbitmq.go, plan_rabbitmq.go, export_rabbitmq.go,
// lint_rabbitmq.go, graph_rabbitmq.go, apply_rabbitmq.go,
// positions_rabbitmq.go; the same with _sqs.go), which system_rabbitmq.go
// and system_sqs.go register (system.go). The spec's and the model's
// sections (Spec.RabbitMQ, Model.SQS) and the schema's stay in the shared
// files: they are the file format, one struct that yaml reads and writes.
package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// SpecVersion is the only spec format version this package reads.
const SpecVersion = 1

// Pos is a place in a spec file.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"column,omitempty"`
}

func (p Pos) String() string {
	f := p.File
	if f == "" {
		f = "spec"
	}
	if p.Line == 0 {
		return f
	}
	return fmt.Sprintf("%s:%d:%d", f, p.Line, p.Col)
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// Duration is a spec duration: Go syntax ("300ms", "15s", "1m30s") plus
// days ("4d", "14d").
type Duration time.Duration

// ParseDuration reads a spec duration.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if strings.HasSuffix(s, "d") && !strings.HasSuffix(s, "md") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || n < 0 || n > 3650 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d, nil
}

// FormatDuration writes d the way a spec would: the largest whole unit of
// d, h, m, s or ms.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return FormatDuration(time.Duration(d)), nil }

// D is the duration as time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Spec is a parsed topology file.
type Spec struct {
	Version int `yaml:"version"`
	// NamePrefix is prepended to every exchange, queue and policy name the
	// spec declares (not to amq.* or the default exchange, and not inside a
	// policy's raw pattern).
	NamePrefix string      `yaml:"name_prefix,omitempty"`
	RabbitMQ   *RabbitSpec `yaml:"rabbitmq,omitempty"`
	SQS        *SQSSpec    `yaml:"sqs,omitempty"`
	Lint       *LintSpec   `yaml:"lint,omitempty"`

	File string `yaml:"-"`
}

// LintSpec tunes the linter.
type LintSpec struct {
	// Ignore lists rule names to skip everywhere.
	Ignore []string `yaml:"ignore,omitempty"`
}

// RabbitSpec is the RabbitMQ part of a spec.
type RabbitSpec struct {
	Vhost        string          `yaml:"vhost,omitempty"`
	Defaults     *RabbitDefaults `yaml:"defaults,omitempty"`
	RetryLadders []RetryLadder   `yaml:"retry_ladders,omitempty"`
	WorkQueues   []WorkQueue     `yaml:"work_queues,omitempty"`
	Exchanges    []ExchangeSpec  `yaml:"exchanges,omitempty"`
	Queues       []QueueSpec     `yaml:"queues,omitempty"`
	Bindings     []BindingSpec   `yaml:"bindings,omitempty"`
	Policies     []PolicySpec    `yaml:"policies,omitempty"`
	Pos          Pos             `yaml:"-"`
}

// RabbitDefaults apply to every queue and high-level construct that does not
// say otherwise.
type RabbitDefaults struct {
	// QueueType is classic or quorum; a queue must get its type from here or
	// from its own `type`.
	QueueType string `yaml:"queue_type,omitempty"`
	// DeadLetterVia is policy (the default) or arguments: how dead-letter
	// exchange and key, message TTL, delivery limit and max length are set.
	DeadLetterVia string `yaml:"dead_letter_via,omitempty"`
	// Durable defaults to true.
	Durable *bool `yaml:"durable,omitempty"`
	// PolicyPriority of generated policies (default 10, above catch-all
	// policies at 0).
	PolicyPriority *int `yaml:"policy_priority,omitempty"`
}

// ExchangeSpec declares one exchange.
type ExchangeSpec struct {
	Name       string         `yaml:"name"`
	Type       string         `yaml:"type"`
	Durable    *bool          `yaml:"durable,omitempty"`
	AutoDelete bool           `yaml:"auto_delete,omitempty"`
	Internal   bool           `yaml:"internal,omitempty"`
	Arguments  map[string]any `yaml:"arguments,omitempty"`
	Pos        Pos            `yaml:"-"`
}

// DeadLetterSpec is where a queue's dead letters go.
type DeadLetterSpec struct {
	Exchange string `yaml:"exchange"`
	// RoutingKey replaces the message's routing key when set; otherwise
	// dead letters keep the key they were published with.
	RoutingKey *string `yaml:"routing_key,omitempty"`
}

// QueueBind binds the queue it appears in to an exchange.
type QueueBind struct {
	Exchange   string         `yaml:"exchange"`
	RoutingKey string         `yaml:"routing_key,omitempty"`
	Arguments  map[string]any `yaml:"arguments,omitempty"`
	Pos        Pos            `yaml:"-"`
}

// QueueSpec declares one queue.
type QueueSpec struct {
	Name          string          `yaml:"name"`
	Type          string          `yaml:"type,omitempty"`
	Durable       *bool           `yaml:"durable,omitempty"`
	AutoDelete    bool            `yaml:"auto_delete,omitempty"`
	DeadLetter    *DeadLetterSpec `yaml:"dead_letter,omitempty"`
	MessageTTL    *Duration       `yaml:"message_ttl,omitempty"`
	DeliveryLimit *int64          `yaml:"delivery_limit,omitempty"`
	MaxLength     *int64          `yaml:"max_length,omitempty"`
	DelayedRetry  *DelayedRetry   `yaml:"delayed_retry,omitempty"`
	DeadLetterVia string          `yaml:"dead_letter_via,omitempty"`
	// Policy tunes the policy generated when DeadLetterVia is policy.
	Policy    *GeneratedPolicy `yaml:"policy,omitempty"`
	Arguments map[string]any   `yaml:"arguments,omitempty"`
	Bind      []QueueBind      `yaml:"bind,omitempty"`
	Pos       Pos              `yaml:"-"`
}

// DelayedRetry is a quorum queue's native delayed retry (RabbitMQ 4.3): a
// returned message waits min × its delivery count, at most max, before it
// is delivered again; an alternative to a TTL retry ladder.
type DelayedRetry struct {
	// Type says which returns are delayed: all, failed, returned or
	// disabled.
	Type string    `yaml:"type"`
	Min  Duration  `yaml:"min"`
	Max  *Duration `yaml:"max,omitempty"`
}

// GeneratedPolicy tunes a policy that dlq generates for one queue.
type GeneratedPolicy struct {
	Name     string `yaml:"name,omitempty"`
	Priority *int   `yaml:"priority,omitempty"`
	// Definition adds keys (for example ha-mode) to the generated policy.
	Definition map[string]any `yaml:"definition,omitempty"`
}

// BindingSpec binds an exchange to a queue or to another exchange.
type BindingSpec struct {
	Exchange    string         `yaml:"exchange"`
	Queue       string         `yaml:"queue,omitempty"`
	ToExchange  string         `yaml:"to_exchange,omitempty"`
	RoutingKey  string         `yaml:"routing_key,omitempty"`
	RoutingKeys []string       `yaml:"routing_keys,omitempty"`
	Arguments   map[string]any `yaml:"arguments,omitempty"`
	Pos         Pos            `yaml:"-"`
}

// PolicySpec declares a policy. Pattern is a raw regular expression; Match
// lists exact names instead (prefixed with name_prefix).
type PolicySpec struct {
	Name       string         `yaml:"name"`
	Pattern    string         `yaml:"pattern,omitempty"`
	Match      []string       `yaml:"match,omitempty"`
	ApplyTo    string         `yaml:"apply_to,omitempty"`
	Priority   int            `yaml:"priority,omitempty"`
	Definition map[string]any `yaml:"definition"`
	Pos        Pos            `yaml:"-"`
}

// RetryLadder expands into a main exchange and queue, a retry exchange with
// one delay queue per tier, and a dead exchange and queue.
type RetryLadder struct {
	Name          string      `yaml:"name"`
	QueueType     string      `yaml:"queue_type,omitempty"`
	DeadLetterVia string      `yaml:"dead_letter_via,omitempty"`
	Main          LadderMain  `yaml:"main"`
	RetryExchange string      `yaml:"retry_exchange,omitempty"`
	Tiers         []Tier      `yaml:"tiers"`
	MaxAttempts   int         `yaml:"max_attempts,omitempty"`
	Dead          *LadderDead `yaml:"dead,omitempty"`
	Pos           Pos         `yaml:"-"`
}

// LadderMain is the ladder's main exchange and work queue.
type LadderMain struct {
	Exchange     string   `yaml:"exchange,omitempty"`
	ExchangeType string   `yaml:"exchange_type,omitempty"`
	Queue        string   `yaml:"queue,omitempty"`
	RoutingKeys  []string `yaml:"routing_keys"`
	// ReturnRoutingKey is the key retried messages come back with (default:
	// the first of RoutingKeys).
	ReturnRoutingKey string `yaml:"return_routing_key,omitempty"`
	DeliveryLimit    *int64 `yaml:"delivery_limit,omitempty"`
}

// Tier is one delay step of a retry ladder.
type Tier struct {
	Delay      Duration `yaml:"delay"`
	Queue      string   `yaml:"queue,omitempty"`
	RoutingKey string   `yaml:"routing_key,omitempty"`
	Pos        Pos      `yaml:"-"`
}

// LadderDead is the ladder's parking lot.
type LadderDead struct {
	Exchange string `yaml:"exchange,omitempty"`
	Queue    string `yaml:"queue,omitempty"`
}

// WorkQueue is a work queue with its own dead-letter exchange and DLQ.
type WorkQueue struct {
	Exchange      string         `yaml:"exchange"`
	ExchangeType  string         `yaml:"exchange_type,omitempty"`
	Queue         string         `yaml:"queue"`
	RoutingKeys   []string       `yaml:"routing_keys"`
	QueueType     string         `yaml:"queue_type,omitempty"`
	DeadLetterVia string         `yaml:"dead_letter_via,omitempty"`
	DeliveryLimit *int64         `yaml:"delivery_limit,omitempty"`
	MessageTTL    *Duration      `yaml:"message_ttl,omitempty"`
	DelayedRetry  *DelayedRetry  `yaml:"delayed_retry,omitempty"`
	DeadLetter    WorkDeadLetter `yaml:"dead_letter"`
	Pos           Pos            `yaml:"-"`
}

// WorkDeadLetter is the dead-letter side of a work queue.
type WorkDeadLetter struct {
	Exchange     string  `yaml:"exchange"`
	ExchangeType string  `yaml:"exchange_type,omitempty"`
	RoutingKey   *string `yaml:"routing_key,omitempty"`
	Queue        string  `yaml:"queue"`
	BindingKey   string  `yaml:"binding_key,omitempty"`
	QueueType    string  `yaml:"queue_type,omitempty"`
}

// SQSSpec is the SQS part of a spec.
type SQSSpec struct {
	Pairs        []SQSPair        `yaml:"pairs,omitempty"`
	RetryLadders []SQSRetryLadder `yaml:"retry_ladders,omitempty"`
	Queues       []SQSQueueSpec   `yaml:"queues,omitempty"`
}

// SQSSettings are the settable attributes of an SQS queue.
type SQSSettings struct {
	VisibilityTimeout         *Duration         `yaml:"visibility_timeout,omitempty"`
	Retention                 *Duration         `yaml:"retention,omitempty"`
	ReceiveWait               *Duration         `yaml:"receive_wait,omitempty"`
	Delay                     *Duration         `yaml:"delay,omitempty"`
	MaxMessageSize            *int64            `yaml:"max_message_size,omitempty"`
	ContentBasedDeduplication *bool             `yaml:"content_based_deduplication,omitempty"`
	Attributes                map[string]string `yaml:"attributes,omitempty"`
}

// SQSDeadLetter is a queue's RedrivePolicy.
type SQSDeadLetter struct {
	Queue           string `yaml:"queue"`
	MaxReceiveCount int    `yaml:"max_receive_count"`
}

// SQSRedriveAllow is a DLQ's RedriveAllowPolicy.
type SQSRedriveAllow struct {
	Permission string   `yaml:"permission"` // allowAll, denyAll, byQueue
	Sources    []string `yaml:"sources,omitempty"`
}

// SQSQueueSpec declares one SQS queue with exactly the attributes given.
type SQSQueueSpec struct {
	Name         string `yaml:"name"`
	SQSSettings  `yaml:",inline"`
	DeadLetter   *SQSDeadLetter   `yaml:"dead_letter,omitempty"`
	RedriveAllow *SQSRedriveAllow `yaml:"redrive_allow,omitempty"`
	Pos          Pos              `yaml:"-"`
}

// SQSPair is a source queue with its DLQ and safe defaults.
type SQSPair struct {
	Name            string      `yaml:"name"`
	DLQ             string      `yaml:"dlq,omitempty"`
	MaxReceiveCount int         `yaml:"max_receive_count,omitempty"`
	Source          SQSSettings `yaml:"source,omitempty"`
	DeadLetterQueue SQSSettings `yaml:"dead_letter_queue,omitempty"`
	Pos             Pos         `yaml:"-"`
}

// SQSRetryLadder is a main queue, delay queues for retries and a DLQ.
type SQSRetryLadder struct {
	Name            string      `yaml:"name"`
	Tiers           []Duration  `yaml:"tiers"`
	MaxReceiveCount int         `yaml:"max_receive_count,omitempty"`
	DLQ             string      `yaml:"dlq,omitempty"`
	Source          SQSSettings `yaml:"source,omitempty"`
	DeadLetterQueue SQSSettings `yaml:"dead_letter_queue,omitempty"`
	Pos             Pos         `yaml:"-"`
}
