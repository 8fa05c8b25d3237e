// Package sqsbench holds plain AWS SDK loops that redrive's SQS benchmarks
// and integration tests set queues up and check them with: filling a
// queue, draining it, and a bare batch receive/send/delete loop (the
// simplest correct way to move messages between two queues, which the
// benchmarks compare dlq against).
package sqsbench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Fill sends batches of 10 copies of body to url from workers goroutines,
// batches per worker each, and returns the first error.
func Fill(ctx context.Context, c *sqs.Client, url, body string, workers, batches int) error {
	var wg sync.WaitGroup
	var ferr atomic.Value
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			es := make([]types.SendMessageBatchRequestEntry, 10)
			for j := range es {
				es[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body)}
			}
			for i := 0; i < batches; i++ {
				if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: es}); err != nil {
					ferr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e, ok := ferr.Load().(error); ok {
		return e
	}
	return nil
}

// BareMove moves messages from one queue to another with conc workers,
// each receiving 10, sending them, then deleting them, until want have
// moved (the emulator may answer empty while other workers hold messages)
// or a call fails five times in a row. A failed send or delete is tried
// again, as the SDK's retries do for dlq: a worker that gave up would
// leave its messages hidden for the visibility timeout. It returns how
// many moved.
func BareMove(ctx context.Context, c *sqs.Client, from, to string, conc int, want int64) int64 {
	var moved atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(from), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					return
				}
				if len(out.Messages) == 0 {
					if moved.Load() >= want {
						return
					}
					continue
				}
				se := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
				de := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					se[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body}
					de[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				for try := 0; try < 5; try++ {
					if _, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(to), Entries: se}); err == nil {
						break
					}
				}
				if err != nil {
					return
				}
				for try := 0; try < 5; try++ {
					if _, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(from), Entries: de}); err == nil {
						break
					}
				}
				moved.Add(int64(len(out.Messages)))
			}
		}()
	}
	wg.Wait()
	return moved.Load()
}

// Drain receives (with every attribute) and deletes the messages of url
// until two long polls of a second come back empty, and returns them in
// receive order.
func Drain(ctx context.Context, c *sqs.Client, url string) ([]types.Message, error) {
	var all []types.Message
	for empty := 0; empty < 2; {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			return all, err
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		de := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			de[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: de}); err != nil {
			return all, err
		}
		all = append(all, out.Messages...)
	}
	return all, nil
}
