package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	amqp "github.com/rabbitmq/amqp091-go"
)

func benchBody(i, size int) string {
	head := fmt.Sprintf(`{"order_id":"ord-%d","error":{"message":"timeout calling pricing"},"note":"`, i)
	return head + strings.Repeat("x", max(size-len(head)-2, 0)) + `"}`
}

// fillRabbit publishes n transient messages (fast to fill; a peek treats
// them like any other) to a classic queue with
// publisher confirms, keeping a window of unconfirmed publishes in flight.
func fillRabbit(url, queue string, n, size int, del bool) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return fmt.Errorf("connect: %s", strings.ReplaceAll(err.Error(), url, "amqp://…"))
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if del {
		_, err := ch.QueueDelete(queue, false, false, false)
		return err
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	ctx := context.Background()
	const window = 2000
	pending := make([]*amqp.DeferredConfirmation, 0, window)
	for i := range n {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, amqp.Publishing{
			MessageId: fmt.Sprintf("deep-%08d", i), ContentType: "application/json", DeliveryMode: amqp.Transient,
			Headers: amqp.Table{"x-exception-message": "timeout calling pricing"}, Body: []byte(benchBody(i, size)),
		})
		if err != nil {
			return err
		}
		pending = append(pending, dc)
		if len(pending) == window {
			for _, p := range pending {
				if !p.Wait() {
					return fmt.Errorf("publish %d nacked", i)
				}
			}
			pending = pending[:0]
		}
	}
	for _, p := range pending {
		if !p.Wait() {
			return fmt.Errorf("publish nacked")
		}
	}
	return nil
}

// fillSQS sends n messages with SendMessageBatch from 8 concurrent senders.
func fillSQS(endpoint, queue string, n, size int, del bool) error {
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue)})
	if err != nil {
		return err
	}
	if del {
		_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		return err
	}
	jobs := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := range jobs {
				var entries []sqstypes.SendMessageBatchRequestEntry
				for i := start; i < min(start+10, n); i++ {
					entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
						Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(benchBody(i, size)),
						MessageAttributes: map[string]sqstypes.MessageAttributeValue{"ErrorMessage": {DataType: aws.String("String"), StringValue: aws.String("timeout calling pricing")}},
					})
				}
				for attempt := 0; ; attempt++ {
					out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries})
					if err == nil && len(out.Failed) == 0 {
						break
					}
					if attempt == 5 {
						errs <- fmt.Errorf("send batch at %d: %v", start, err)
						return
					}
					time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
				}
			}
		}()
	}
	for start := 0; start < n; start += 10 {
		select {
		case jobs <- start:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
