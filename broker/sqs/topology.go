package sqs

import (
	"context"
	"errors"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.SQSTopologyReader  = (*Broker)(nil)
	_ broker.SQSTopologyApplier = (*Broker)(nil)
)

// topologyConcurrency bounds the GetQueueUrl calls of one ReadSQSQueues.
const topologyConcurrency = 8

// ReadSQSQueues returns the named queues that exist, with all their
// attributes. Missing queues are left out.
func (b *Broker) ReadSQSQueues(ctx context.Context, names []string) ([]broker.SQSQueueState, error) {
	seen := map[string]bool{}
	var uniq []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	found, err := gather(ctx, uniq, topologyConcurrency, b.queueURL)
	if err != nil {
		return nil, err
	}
	urls := make([]string, 0, len(found))
	for _, n := range uniq {
		if u, ok := found[n]; ok {
			urls = append(urls, u)
		}
	}
	return b.queueStates(ctx, urls)
}

// ListSQSQueues returns every queue whose name starts with prefix, with all
// its attributes.
func (b *Broker) ListSQSQueues(ctx context.Context, prefix string) ([]broker.SQSQueueState, error) {
	urls, err := b.listQueueURLs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return b.queueStates(ctx, urls)
}

func (b *Broker) queueStates(ctx context.Context, urls []string) ([]broker.SQSQueueState, error) {
	attrs, err := b.attributesOf(ctx, urls)
	if err != nil {
		return nil, err
	}
	out := make([]broker.SQSQueueState, 0, len(attrs))
	for u, a := range attrs {
		out = append(out, broker.SQSQueueState{Name: nameFromURL(u), URL: u, ARN: a["QueueArn"], Attributes: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ApplySQSChange creates a queue with its attributes, sets the attributes
// of an existing one in place, or deletes one (a missing queue is already
// deleted).
func (b *Broker) ApplySQSChange(ctx context.Context, c broker.SQSChange) (_ broker.SQSQueueState, err error) {
	// Every failure names the queue (its operation says which).
	defer func() { err = broker.Naming(c.Name, err) }()
	st := broker.SQSQueueState{Name: c.Name}
	u, err := b.queueURL(ctx, c.Name)
	missing := errors.Is(err, broker.ErrNotFound)
	if err != nil && !missing {
		return st, err
	}
	if c.Action == broker.Delete {
		if missing {
			return st, nil
		}
		if _, err := b.api.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
			return st, b.queueErr("delete queue `"+c.Name+"`", u, err)
		}
		b.forget(c.Name, u)
		return st, nil
	}
	if missing {
		out, err := b.api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(c.Name), Attributes: c.Attributes})
		if err != nil {
			return st, translateErr("create queue `"+c.Name+"`", err)
		}
		u = aws.ToString(out.QueueUrl)
		b.mu.Lock()
		b.urls[c.Name] = u
		b.mu.Unlock()
	} else if len(c.Attributes) > 0 {
		attrs := make(map[string]string, len(c.Attributes))
		for k, v := range c.Attributes {
			if k != "FifoQueue" { // fixed at creation
				attrs[k] = v
			}
		}
		if _, err := b.api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(u), Attributes: attrs}); err != nil {
			return st, b.queueErr("set attributes of queue `"+c.Name+"`", u, err)
		}
	}
	a, err := b.attributes(ctx, u)
	if err != nil {
		return st, err
	}
	return broker.SQSQueueState{Name: c.Name, URL: u, ARN: a["QueueArn"], Attributes: a}, nil
}

// forget drops a deleted queue from the name, URL and ARN caches.
func (b *Broker) forget(name, url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, v := range b.urls {
		if v == url || k == name {
			delete(b.urls, k)
		}
	}
	delete(b.arns, url)
}
