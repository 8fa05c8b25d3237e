package inspect

import (
	"context"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// Source is the queue a message was dead-lettered from: the death record's
// queue, else the source queue its broker recorded (broker.RecordedSource), else the
// origin its failure record names (a queue, or exchange:NAME:KEY); "" when
// unknown.
func Source(m *broker.Message) string {
	if m.Death != nil {
		if m.Death.Queue != "" {
			return m.Death.Queue
		}
		if m.Death.QueueARN != "" {
			return broker.SourceName(m.Death.QueueARN)
		}
	}
	if id := broker.RecordedSource(m); id != "" {
		return broker.SourceName(id)
	}
	if f := FailureOf(m); f != nil && f.Origin != nil {
		if d := f.Origin.Destination(); d.Kind == broker.ToQueue {
			return d.Queue
		} else {
			return d.String()
		}
	}
	return ""
}

// QueueSource finds the source of the messages of one queue that do not
// name theirs (no death record, no recorded source): the origin the
// broker resolves for such a message, as a redrive to the origin would
// (SQS: the queue's only dead-letter source queue; RabbitMQ: none, since
// only x-death tells). The broker is asked once, when a message first needs
// it; "" when it cannot tell. A nil *QueueSource is Source.
type QueueSource struct {
	b     broker.OriginResolver
	queue string
	once  sync.Once
	name  string
}

// NewQueueSource returns the QueueSource of queue on b; nil when b cannot
// resolve origins.
func NewQueueSource(b broker.Broker, queue string) *QueueSource {
	r, ok := b.(broker.OriginResolver)
	if !ok {
		return nil
	}
	return &QueueSource{b: r, queue: queue}
}

// Of is Source(m), else the queue's source.
func (q *QueueSource) Of(ctx context.Context, m *broker.Message) string {
	if s := Source(m); s != "" || q == nil {
		return s
	}
	q.once.Do(func() {
		d, err := q.b.Origin(ctx, q.queue, &broker.Message{System: m.System, Queue: q.queue})
		if err == nil && d.Kind == broker.ToQueue {
			q.name = broker.SourceName(d.Queue)
		}
	})
	return q.name
}
