package sqs

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.OriginResolver = (*Broker)(nil)

// originTTL is how long the source queues of a DLQ are remembered.
const originTTL = 5 * time.Minute

// originCache remembers, per DLQ URL, the source queue URLs that dead-letter
// into it, so that resolving the origin of many messages costs one lookup.
type originCache struct {
	sources []string // source queue URLs
	at      time.Time
}

// Origin finds the queue a dead letter in queue came from:
//
//  1. the message's DeadLetterQueueSourceArn (set by SQS when it moved the
//     message);
//  2. else the sources of the DLQ: ListDeadLetterSourceQueues, or, where the
//     endpoint lacks that call or the caller lacks its permission, a scan of
//     every queue's RedrivePolicy for the DLQ's ARN. One source is the
//     origin; several are broker.ErrConflict naming them and the to option; none is
//     broker.ErrNotFound.
//
// The sources are cached per DLQ for a few minutes. The destination names
// the queue by name when it lives in the DLQ's account, else by ARN.
func (b *Broker) Origin(ctx context.Context, queue string, m *broker.Message) (broker.Destination, error) {
	src := ""
	if m != nil {
		if m.Death != nil && m.Death.QueueARN != "" {
			src = m.Death.QueueARN
		} else {
			src = m.SystemAttributes[sysDLQSourceArn]
		}
	}
	dlqURL, err := b.queueURL(ctx, queue)
	if err != nil {
		return broker.Destination{}, err
	}
	if src != "" {
		return broker.Destination{Kind: broker.ToQueue, Queue: b.sameAccountName(ctx, dlqURL, src), Via: sysDLQSourceArn}, nil
	}
	sources, err := b.deadLetterSources(ctx, dlqURL)
	if err != nil {
		return broker.Destination{}, err
	}
	op := "find the origin of messages in `" + queueName(queue) + "`"
	switch len(sources) {
	case 0:
		return broker.Destination{}, broker.Errorf(broker.ErrNotFound, op,
			"no queue has `%s` as its dead-letter queue and the message does not say where it came from: pass %s", queueName(queue), broker.OptTo.With("queue:NAME"))
	case 1:
		return broker.Destination{Kind: broker.ToQueue, Queue: nameFromURL(sources[0]), Via: "the DLQ's only source queue"}, nil
	}
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = nameFromURL(s)
	}
	return broker.Destination{}, broker.Errorf(broker.ErrConflict, op,
		"%d queues dead-letter into `%s` (%s) and the message does not say which it came from: pick one with %s",
		len(names), queueName(queue), strings.Join(names, ", "), broker.OptTo.With("queue:NAME"))
}

// sameAccountName returns the queue name of srcARN when it is in the same
// account as the queue at dlqURL, else the ARN itself.
func (b *Broker) sameAccountName(ctx context.Context, dlqURL, srcARN string) string {
	sa, ok := parseARN(srcARN)
	if !ok {
		return srcARN
	}
	if da, err := b.queueARN(ctx, dlqURL); err == nil {
		if d, ok := parseARN(da); ok && d.account == sa.account && d.region == sa.region {
			return sa.name
		}
	}
	return srcARN
}

// deadLetterSources returns the URLs of the queues whose RedrivePolicy
// targets the queue at dlqURL, sorted.
func (b *Broker) deadLetterSources(ctx context.Context, dlqURL string) ([]string, error) {
	b.mu.Lock()
	c, ok := b.origins[dlqURL]
	b.mu.Unlock()
	if ok && time.Since(c.at) < originTTL {
		return c.sources, nil
	}
	sources, err := b.listDeadLetterSources(ctx, dlqURL)
	if err != nil && (errors.Is(err, broker.ErrUnsupported) || errors.Is(err, broker.ErrAccessDenied)) {
		b.log.Debug("sqs: ListDeadLetterSourceQueues unavailable; scanning redrive policies", "err", err)
		scanned, serr := b.scanDeadLetterSources(ctx, dlqURL)
		if serr == nil {
			sources, err = scanned, nil
		} else if errors.Is(err, broker.ErrUnsupported) {
			err = serr
		}
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(sources)
	b.mu.Lock()
	b.origins[dlqURL] = originCache{sources: sources, at: time.Now()}
	b.mu.Unlock()
	return sources, nil
}

func (b *Broker) listDeadLetterSources(ctx context.Context, dlqURL string) ([]string, error) {
	var out []string
	in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL), MaxResults: aws.Int32(1000)}
	for {
		page, err := b.api.ListDeadLetterSourceQueues(ctx, in)
		if err != nil {
			return nil, b.queueErr("list the dead-letter sources of `"+nameFromURL(dlqURL)+"`", dlqURL, err)
		}
		out = append(out, page.QueueUrls...)
		if aws.ToString(page.NextToken) == "" || len(page.QueueUrls) == 0 {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// scanDeadLetterSources reads the RedrivePolicy of every queue and keeps those
// that target the DLQ's ARN.
func (b *Broker) scanDeadLetterSources(ctx context.Context, dlqURL string) ([]string, error) {
	arn, err := b.queueARN(ctx, dlqURL)
	if err != nil {
		return nil, err
	}
	urls, err := b.listQueueURLs(ctx, "")
	if err != nil {
		return nil, err
	}
	policies, err := b.attributesOf(ctx, urls, types.QueueAttributeNameRedrivePolicy)
	if err != nil {
		return nil, err
	}
	var sources []string
	for u, a := range policies {
		if target, _, ok := parseRedrivePolicy(a[attrRedrivePolicy]); ok && target == arn {
			sources = append(sources, u)
		}
	}
	return sources, nil
}
