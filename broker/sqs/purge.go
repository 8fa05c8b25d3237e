package sqs

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Purger = (*Broker)(nil)

// Purge deletes every message of the queue with PurgeQueue and returns the
// queue's ApproximateNumberOfMessages (+ NotVisible + Delayed) just before,
// which is all SQS says about how many went. SQS takes up to 60 seconds to
// finish a purge and allows one purge per queue every 60 seconds; a second
// one within that time is broker.ErrConflict saying to wait.
func (b *Broker) Purge(ctx context.Context, queue string) (int64, error) {
	u, err := b.queueURL(ctx, queue)
	if err != nil {
		return 0, err
	}
	a, err := b.attributes(ctx, u)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, k := range []string{attrDepth, attrNotVisible, attrDelayed} {
		v, _ := strconv.ParseInt(a[k], 10, 64)
		n += v
	}
	if _, err := b.api.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(u)}); err != nil {
		return 0, b.queueErr("purge queue `"+nameFromURL(u)+"`", u, err)
	}
	return n, nil
}
