package broker

import "context"

// Topology objects as the brokers see them. The topology library reads them
// to plan, and hands them back to declare. Arguments and definitions hold
// JSON-like values: string, bool, int64, float64, []any, map[string]any.

// Exchange is a RabbitMQ exchange.
type Exchange struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"` // direct, topic, fanout, headers, x-…
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments,omitempty"`
}

// QueueDecl is a RabbitMQ queue as declared: what a declare must repeat
// exactly, or RabbitMQ answers 406 PRECONDITION_FAILED.
type QueueDecl struct {
	Name       string         `json:"name"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Exclusive  bool           `json:"exclusive"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	// Type is the queue type the server reports (classic, quorum, stream);
	// informational when reading, ignored when declaring (the type is the
	// x-queue-type argument).
	Type string `json:"type,omitempty"`
	// Policy is the policy in effect on the queue, when reading.
	Policy string `json:"policy,omitempty"`
	// Messages is how many messages the queue holds (ready and unacked),
	// when reading; a declare ignores it.
	Messages int64 `json:"messages,omitempty"`
}

// Binding routes from an exchange to a queue or another exchange.
type Binding struct {
	Source          string         `json:"source"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // "queue" or "exchange"
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments,omitempty"`
}

// Policy is a RabbitMQ policy: definition keys (dead-letter-exchange,
// message-ttl, delivery-limit, …) applied to the queues or exchanges whose
// names match Pattern. Of the policies that match, only the one with the
// highest priority applies.
type Policy struct {
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply_to"` // queues, exchanges, all
	Priority   int            `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// RabbitTopology is everything declared on one vhost.
type RabbitTopology struct {
	Vhost     string      `json:"vhost"`
	Exchanges []Exchange  `json:"exchanges"`
	Queues    []QueueDecl `json:"queues"`
	Bindings  []Binding   `json:"bindings"`
	Policies  []Policy    `json:"policies"`
}

// RabbitTopologyReader reads the exchanges, queues, bindings and policies of
// the broker's vhost through the management API, which shows queue arguments
// without declaring anything. Bindings from the default exchange and
// exchanges named amq.* or "" are left out.
type RabbitTopologyReader interface {
	ReadRabbitTopology(ctx context.Context) (RabbitTopology, error)
}

// ServerVersioner reports the server's version ("4.0.5"), for behaviour
// that changed between versions (RabbitMQ 4.0 gave quorum queues a default
// delivery limit).
type ServerVersioner interface {
	ServerVersion(ctx context.Context) (string, error)
}

// TopologyAction is what a change does to one object.
type TopologyAction string

const (
	// Declare creates the object, or confirms that an identical one exists;
	// for policies and SQS queue attributes it updates in place.
	Declare TopologyAction = "declare"
	// Delete removes the object; deleting something absent is not an error.
	Delete TopologyAction = "delete"
)

// RabbitChange declares or deletes exactly one of its objects.
type RabbitChange struct {
	Action   TopologyAction `json:"action"`
	Exchange *Exchange      `json:"exchange,omitempty"`
	Queue    *QueueDecl     `json:"queue,omitempty"`
	Binding  *Binding       `json:"binding,omitempty"`
	Policy   *Policy        `json:"policy,omitempty"`
}

// RabbitTopologyApplier applies one change on the broker's vhost. A declare
// that differs from what exists is ErrConflict (RabbitMQ's 406) and leaves the
// connection usable for the next change.
type RabbitTopologyApplier interface {
	ApplyRabbitChange(ctx context.Context, c RabbitChange) error
}

// SQSQueueState is an SQS queue with its attributes as GetQueueAttributes
// reports them: every value a string; RedrivePolicy and RedriveAllowPolicy
// are JSON documents.
type SQSQueueState struct {
	Name       string            `json:"name"`
	URL        string            `json:"url"`
	ARN        string            `json:"arn"`
	Attributes map[string]string `json:"attributes"`
}

// SQSTopologyReader reads SQS queues and their attributes.
type SQSTopologyReader interface {
	// ReadSQSQueues returns the named queues that exist; missing ones are
	// absent from the result, not an error.
	ReadSQSQueues(ctx context.Context, names []string) ([]SQSQueueState, error)
	// ListSQSQueues returns every queue whose name starts with prefix (""
	// for all queues of the account and region).
	ListSQSQueues(ctx context.Context, prefix string) ([]SQSQueueState, error)
}

// SQSChange creates a queue with attributes, sets attributes of an existing
// queue in place, or deletes a queue.
type SQSChange struct {
	Action     TopologyAction    `json:"action"`
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// SQSTopologyApplier applies one change. A Declare creates the queue when it
// is missing and otherwise sets the given attributes; it returns the queue's
// state afterwards.
type SQSTopologyApplier interface {
	ApplySQSChange(ctx context.Context, c SQSChange) (SQSQueueState, error)
}
