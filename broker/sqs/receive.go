package sqs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// receive asks for up to max (≤ 10) messages with all system and message
// attributes. visibility < 0 keeps the queue's own timeout; wait is the long
// poll (0 for a short poll).
func (b *Broker) receive(ctx context.Context, url string, max int, visibility, wait time.Duration) ([]types.Message, error) {
	if max > 10 {
		max = 10
	}
	if max < 1 {
		max = 1
	}
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(max),
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		//lint:ignore SA1019 older endpoints and emulators only read the deprecated field.
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	}
	if visibility >= 0 {
		in.VisibilityTimeout = int32(visibility / time.Second)
	}
	out, err := b.api.ReceiveMessage(ctx, in)
	if err != nil {
		b.log.Debug("sqs: receive", "queue", nameFromURL(url), "asked", max, "visibility", visibility, "wait", wait, "err", err)
		return nil, b.queueErr("receive from queue `"+nameFromURL(url)+"`", url, err)
	}
	b.log.Debug("sqs: receive", "queue", nameFromURL(url), "asked", max, "got", len(out.Messages), "visibility", visibility, "wait", wait)
	return out.Messages, nil
}

// changeVisibility sets the visibility of handles in batches of 10 and
// returns how many could not be changed (handles expired meanwhile, queue
// gone) with the first error.
func (b *Broker) changeVisibility(ctx context.Context, url string, handles []string, d time.Duration) (failed int, err error) {
	secs := int32(d / time.Second)
	for i := 0; i < len(handles); i += 10 {
		end := min(i+10, len(handles))
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, end-i)
		for j := i; j < end; j++ {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(j - i)),
				ReceiptHandle:     aws.String(handles[j]),
				VisibilityTimeout: secs,
			})
		}
		out, cerr := b.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if cerr != nil {
			failed += len(entries)
			if err == nil {
				err = b.queueErr("change visibility in queue `"+nameFromURL(url)+"`", url, cerr)
			}
			continue
		}
		failed += len(out.Failed)
		if len(out.Failed) > 0 && err == nil {
			f := out.Failed[0]
			err = fmt.Errorf("change visibility in queue `%s`: %s (%s)", nameFromURL(url), aws.ToString(f.Message), aws.ToString(f.Code))
		}
	}
	b.log.Debug("sqs: change visibility", "queue", nameFromURL(url), "messages", len(handles), "to", d, "failed", failed, "err", err)
	return failed, err
}
