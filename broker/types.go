package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// System names the kind of backend a queue or message lives on: the
// adapter's word for itself ("rabbitmq"), as JSON output and archives
// record it. The set is open: each system names itself in a file of its own
// (system_rabbitmq.go, system_sqs.go, system_archive.go), and an adapter of
// another system declares its value in its own package
// (const System broker.System = "nats") and registers what the libraries
// need to know of its messages with RegisterMessageTraits. Libraries never
// branch on a System's value; they compare two, or ask the adapter's
// traits.
type System string

// QueueKind is the type of a queue, as its adapter names it ("quorum",
// "sqs-fifo"). Like System the set is open: each system's file names its
// kinds, and libraries never branch on one; what a kind means for reading
// and writing is in the queue's Traits.
type QueueKind string

// Queue is a health snapshot of one queue. Numbers the backend does not know
// are left nil rather than reported as zero.
type Queue struct {
	System System    `json:"system"`
	Name   string    `json:"name"`
	Kind   QueueKind `json:"kind"`
	Vhost  string    `json:"vhost,omitempty"` // RabbitMQ
	URL    string    `json:"url,omitempty"`   // SQS queue URL, archive path
	ARN    string    `json:"arn,omitempty"`   // SQS

	// Depth is the number of messages ready for delivery (RabbitMQ
	// messages_ready, SQS ApproximateNumberOfMessages, archive lines).
	Depth int64 `json:"depth"`
	// InFlight is unacknowledged (RabbitMQ) or not visible (SQS).
	InFlight *int64 `json:"in_flight,omitempty"`
	// Delayed is SQS ApproximateNumberOfMessagesDelayed.
	Delayed   *int64 `json:"delayed,omitempty"`
	Consumers *int64 `json:"consumers,omitempty"`
	// ConsumerCapacity is RabbitMQ's consumer utilisation, 0..1.
	ConsumerCapacity *float64 `json:"consumer_capacity,omitempty"`
	// OldestAge is the age of the oldest message where the backend knows it
	// (SQS ApproximateAgeOfOldestMessage via CloudWatch is not available, so
	// archives and streams mostly).
	OldestAge *time.Duration `json:"oldest_age,omitempty"`
	// Bytes is the total size of ready messages where known.
	Bytes *int64 `json:"bytes,omitempty"`

	// DeadLetterTarget names where this queue dead-letters to: a RabbitMQ
	// exchange (with DeadLetterRoutingKey) or an SQS queue ARN/name.
	DeadLetterTarget     string `json:"dead_letter_target,omitempty"`
	DeadLetterRoutingKey string `json:"dead_letter_routing_key,omitempty"`
	// DeadLetterQueues are the queues this queue's dead letters end up in.
	DeadLetterQueues []string `json:"dead_letter_queues,omitempty"`
	// DeadLetterSources are the queues that dead-letter into this one. A
	// queue with sources is a DLQ.
	DeadLetterSources []string `json:"dead_letter_sources,omitempty"`
	// IsDLQ is true when the queue's Role is dlq or parking.
	IsDLQ bool `json:"is_dlq"`
	// Role is what the queue is for (work, retry, dlq, parking), and
	// RoleSource what says so; see AssignRoles.
	Role       Role       `json:"role"`
	RoleSource RoleSource `json:"role_source"`
	// MessageTTL is how long a RabbitMQ queue keeps a message before it
	// expires (x-message-ttl, or the policy's message-ttl); 0 when none.
	MessageTTL time.Duration `json:"message_ttl,omitempty"`
	// DeliveryDelay is an SQS queue's DelaySeconds; 0 when none.
	DeliveryDelay time.Duration `json:"delivery_delay,omitempty"`
	// DeliveryLimit is the quorum x-delivery-limit or the SQS maxReceiveCount
	// of this queue's own redrive policy; 0 when none.
	DeliveryLimit int64 `json:"delivery_limit,omitempty"`
	// DeliveryLimitDefault is true when DeliveryLimit is not set on the
	// queue but is the broker's default (RabbitMQ 4.x quorum queues: 20).
	DeliveryLimitDefault bool `json:"delivery_limit_default,omitempty"`
	// DropsAfter, when not 0, is the number of deliveries after which the
	// broker silently drops a message of this queue: a RabbitMQ quorum queue
	// with a delivery limit (its own, or the 4.x default) and nowhere to
	// dead-letter to.
	DropsAfter int64 `json:"drops_after,omitempty"`
	// MaxLength and MaxLengthBytes are a RabbitMQ queue's length limit
	// (x-max-length, x-max-length-bytes, or the policy's max-length and
	// max-length-bytes: the lower of the two), nil when none. Overflow is
	// what the queue does past it: OverflowDropHead (RabbitMQ's default:
	// the oldest messages are dropped, or dead-lettered), "reject-publish"
	// or "reject-publish-dlx" (the publish is refused); "" without a limit.
	MaxLength      *int64 `json:"max_length,omitempty"`
	MaxLengthBytes *int64 `json:"max_length_bytes,omitempty"`
	Overflow       string `json:"overflow,omitempty"`
	// Policy is the RabbitMQ policy applied, if any.
	Policy string `json:"policy,omitempty"`
	// Arguments are the RabbitMQ queue arguments or SQS attributes.
	Arguments map[string]any `json:"arguments,omitempty"`
	Durable   bool           `json:"durable,omitempty"`

	// Leader, Members and Online describe a replicated queue (RabbitMQ
	// quorum queues and streams): the node of its leader, the nodes that
	// hold a replica, and those of them that are running. Empty for other
	// queues.
	Leader  string   `json:"leader,omitempty"`
	Members []string `json:"members,omitempty"`
	Online  []string `json:"online,omitempty"`
}

// Decimal is the AMQP decimal header type: Value × 10^-Scale.
type Decimal struct {
	Scale uint8 `json:"scale"`
	Value int32 `json:"value"`
}

// String renders the decimal exactly, e.g. {Scale: 2, Value: -105} as
// "-1.05".
func (d Decimal) String() string {
	s := strconv.FormatInt(int64(d.Value), 10)
	if d.Scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= int(d.Scale) {
		s = "0" + s
	}
	s = s[:len(s)-int(d.Scale)] + "." + s[len(s)-int(d.Scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// Properties are the AMQP basic properties. For SQS messages only the ones
// that map (MessageId, Timestamp) are set.
type Properties struct {
	ContentType     string    `json:"content_type,omitempty"`
	ContentEncoding string    `json:"content_encoding,omitempty"`
	DeliveryMode    uint8     `json:"delivery_mode,omitempty"` // 1 transient, 2 persistent
	Priority        uint8     `json:"priority,omitempty"`
	CorrelationID   string    `json:"correlation_id,omitempty"`
	ReplyTo         string    `json:"reply_to,omitempty"`
	Expiration      string    `json:"expiration,omitempty"`
	MessageID       string    `json:"message_id,omitempty"`
	Timestamp       time.Time `json:"timestamp,omitzero"`
	Type            string    `json:"type,omitempty"`
	UserID          string    `json:"user_id,omitempty"`
	AppID           string    `json:"app_id,omitempty"`
}

// Attribute is an SQS message attribute with its data type ("String",
// "Number", "Binary", or a custom "Number.int" style type).
type Attribute struct {
	DataType    string `json:"data_type"`
	StringValue string `json:"string_value,omitempty"`
	BinaryValue []byte `json:"binary_value,omitempty"`
}

// DeathEntry is one x-death table entry, or the SQS equivalent.
type DeathEntry struct {
	Reason      string    `json:"reason"` // rejected, expired, maxlen, delivery_limit, max_receives
	Queue       string    `json:"queue"`
	Exchange    string    `json:"exchange,omitempty"`
	RoutingKeys []string  `json:"routing_keys,omitempty"`
	Count       int64     `json:"count"`
	Time        time.Time `json:"time,omitzero"` // first time this (queue, reason) happened
}

// Death is the normalised death record of a message: why and where it died.
// Reason, Queue, Exchange and RoutingKeys come from the death in the origin:
// the most recent death (x-death[0], which RabbitMQ keeps newest first) that
// is not the TTL expiry of a retry queue; First is the earliest death
// time (x-first-death-*), Last the most recent.
type Death struct {
	Reason      string       `json:"reason"`
	Queue       string       `json:"queue"`               // the queue the message died in (its origin)
	QueueARN    string       `json:"queue_arn,omitempty"` // SQS DeadLetterQueueSourceArn
	Exchange    string       `json:"exchange,omitempty"`
	RoutingKeys []string     `json:"routing_keys,omitempty"`
	Count       int64        `json:"count"` // total deaths over all entries
	First       time.Time    `json:"first,omitzero"`
	Last        time.Time    `json:"last,omitzero"`
	FirstReason string       `json:"first_reason,omitempty"`
	FirstQueue  string       `json:"first_queue,omitempty"`
	History     []DeathEntry `json:"history,omitempty"` // newest first
}

// Message is one message from any backend.
//
// Headers hold AMQP application headers with their Go types preserved:
// bool, int8, int16, int32, int64, uint8, uint16, uint32, float32, float64,
// string, []byte, Decimal, time.Time, map[string]any (table), []any (array)
// and nil. Adapters convert to and from their SDK's types.
type Message struct {
	// ID is the stable fingerprint: the same every time the same message is
	// seen, in any session. See Fingerprint.
	ID string `json:"id"`

	System System `json:"system"`
	Queue  string `json:"queue"` // where it was read from

	Body       []byte               `json:"body"`
	Headers    map[string]any       `json:"headers,omitempty"`
	Properties Properties           `json:"properties"`
	Attributes map[string]Attribute `json:"attributes,omitempty"` // SQS message attributes
	// SystemAttributes are SQS system attributes (ApproximateReceiveCount,
	// SentTimestamp, DeadLetterQueueSourceArn, MessageGroupId, …).
	SystemAttributes map[string]string `json:"system_attributes,omitempty"`

	// Exchange and RoutingKey the message was delivered with (RabbitMQ).
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`

	Death *Death `json:"death,omitempty"`

	// DeliveryCount is x-delivery-count (quorum) or ApproximateReceiveCount
	// (SQS) as read, before this read when the backend can tell.
	DeliveryCount int64 `json:"delivery_count"`
	// AcquiredCount is x-acquired-count (RabbitMQ 4.3 quorum queues: every
	// delivery, a requeued one included), 0 when the message carries none.
	AcquiredCount int64 `json:"acquired_count,omitempty"`
	Redelivered   bool  `json:"redelivered,omitempty"`
	// Timestamp is when the message was first published or sent, where known.
	Timestamp time.Time `json:"timestamp,omitzero"`
	// Position is where the message sits: a stream offset, a line number in
	// an archive, an SQS sequence number, the place in a RabbitMQ queue of
	// an unreadable message. Informational.
	Position string `json:"position,omitempty"`
	// Unreadable, when set, says why the adapter's client could not decode
	// the message and how what it holds was read instead (RabbitMQ: through
	// the management API, header types approximate).
	Unreadable string `json:"unreadable,omitempty"`
}

// Size is the body size in bytes.
func (m *Message) Size() int { return len(m.Body) }

// Age is how long ago the message was first dead-lettered, or else published,
// relative to now; zero when unknown.
func (m *Message) Age(now time.Time) time.Duration {
	t := m.Timestamp
	if m.Death != nil && !m.Death.First.IsZero() {
		t = m.Death.First
	}
	if t.IsZero() {
		return 0
	}
	return now.Sub(t)
}

// Clone returns a deep copy whose maps and slices can be modified freely.
func (m *Message) Clone() *Message {
	c := *m
	c.Body = append([]byte(nil), m.Body...)
	if m.Headers != nil {
		c.Headers = cloneTable(m.Headers)
	}
	if m.Attributes != nil {
		c.Attributes = make(map[string]Attribute, len(m.Attributes))
		for k, v := range m.Attributes {
			v.BinaryValue = append([]byte(nil), v.BinaryValue...)
			c.Attributes[k] = v
		}
	}
	if m.SystemAttributes != nil {
		c.SystemAttributes = make(map[string]string, len(m.SystemAttributes))
		for k, v := range m.SystemAttributes {
			c.SystemAttributes[k] = v
		}
	}
	if m.Death != nil {
		d := *m.Death
		d.RoutingKeys = append([]string(nil), d.RoutingKeys...)
		d.History = append([]DeathEntry(nil), d.History...)
		c.Death = &d
	}
	return &c
}

func cloneTable(t map[string]any) map[string]any {
	c := make(map[string]any, len(t))
	for k, v := range t {
		c[k] = cloneValue(v)
	}
	return c
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneTable(x)
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneValue(e)
		}
		return c
	case []byte:
		return append([]byte(nil), x...)
	default:
		return v
	}
}

// DestinationKind says where a message is sent.
type DestinationKind string

const (
	// ToOrigin resolves per message to where it was dead-lettered from.
	ToOrigin DestinationKind = "origin"
	// ToQueue publishes to a queue by name (RabbitMQ default exchange, SQS queue
	// name, URL or ARN).
	ToQueue DestinationKind = "queue"
	// ToExchange publishes to a RabbitMQ exchange with a routing key.
	ToExchange DestinationKind = "exchange"
	// ToFile appends to an archive file.
	ToFile DestinationKind = "file"
)

// Destination is a concrete place to publish to. RoutingKeys, when more than
// one, means the message is published once per key (RabbitMQ CC semantics are
// not used so that each copy is confirmed on its own).
type Destination struct {
	Kind        DestinationKind `json:"kind"`
	Queue       string          `json:"queue,omitempty"`
	Exchange    string          `json:"exchange,omitempty"`
	RoutingKeys []string        `json:"routing_keys,omitempty"`
	Path        string          `json:"path,omitempty"`
	// Via names the record that chose an origin (x-death,
	// DeadLetterQueueSourceArn, a framework's header, the DLQ's only
	// source): set where an origin is resolved, empty otherwise. It is not
	// part of where the message goes.
	Via string `json:"via,omitempty"`
}

// ErrNotADestination is wrapped by ParseDestination's error for text of no
// known form.
var ErrNotADestination = errors.New("not a destination")

// ParseDestination reads the forms users type: origin (or ""), queue:NAME,
// exchange:NAME[:KEY[,KEY…]] and file://PATH. An exchange without a key
// routes each message with its own (see the redrive engine).
func ParseDestination(s string) (Destination, error) {
	switch {
	case s == "" || s == "origin":
		return Destination{Kind: ToOrigin}, nil
	case strings.HasPrefix(s, "queue:"):
		q := strings.TrimPrefix(s, "queue:")
		if q == "" {
			return Destination{}, errors.New("`queue:` names no queue: write queue:NAME")
		}
		return Destination{Kind: ToQueue, Queue: q}, nil
	case strings.HasPrefix(s, "exchange:"):
		name, key, hasKey := strings.Cut(strings.TrimPrefix(s, "exchange:"), ":")
		d := Destination{Kind: ToExchange, Exchange: name}
		if hasKey {
			d.RoutingKeys = strings.Split(key, ",")
		}
		return d, nil
	case strings.HasPrefix(s, "file://"):
		p := strings.TrimPrefix(s, "file://")
		if p == "" {
			return Destination{}, errors.New("`file://` names no file: write file://PATH.jsonl")
		}
		return Destination{Kind: ToFile, Path: p}, nil
	}
	return Destination{}, fmt.Errorf("`%s` is %w: use origin, queue:NAME, exchange:NAME[:KEY] or file://PATH", s, ErrNotADestination)
}

// String renders the destination the way users type it.
func (d Destination) String() string {
	switch d.Kind {
	case ToQueue:
		return "queue:" + d.Queue
	case ToExchange:
		s := "exchange:" + d.Exchange
		if len(d.RoutingKeys) > 0 {
			s += ":" + d.RoutingKeys[0]
			for _, k := range d.RoutingKeys[1:] {
				s += "," + k
			}
		}
		return s
	case ToFile:
		return "file://" + d.Path
	default:
		return string(d.Kind)
	}
}

// OverflowDropHead is the overflow of a queue that drops (or dead-letters)
// its oldest messages to take new ones past its length limit: a message
// moved into it may cost another.
const OverflowDropHead = "drop-head"
