package sqs

import (
	"context"
	"sort"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Namer = (*Broker)(nil)

// QueueNames lists queue names with ListQueues alone (SQS filters by
// prefix), reading no attributes.
func (b *Broker) QueueNames(ctx context.Context, prefix string) ([]string, error) {
	urls, err := b.listQueueURLs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = nameFromURL(u)
	}
	sort.Strings(out)
	return out, nil
}
