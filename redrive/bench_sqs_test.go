package redrive

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
)

// BenchmarkRedriveSQS moves 20,000 1 KiB messages between two fauxqs
// queues per iteration with the real adapter, four windows of 100 at once;
// BenchmarkRedriveSQSBareLoop moves them with four plain
// receive/send/delete loops, the baseline of scripts/bench/redrive.sh.
// Profile with -cpuprofile.
func BenchmarkRedriveSQS(b *testing.B) { benchSQS(b, false) }

func BenchmarkRedriveSQSBareLoop(b *testing.B) { benchSQS(b, true) }

func benchSQS(b *testing.B, bare bool) {
	env := brokertest.SQS(b)
	ctx := context.Background()
	client := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(env.Endpoint), Credentials: aws.AnonymousCredentials{}})
	src, err := dlqsqs.Open(ctx, dlqsqs.Config{Region: "us-east-1", Endpoint: env.Endpoint})
	if err != nil {
		b.Fatal(err)
	}
	name := brokertest.Name(b, "bench")
	var urls []string
	for _, q := range []string{name + "-dlq", name + "-dst"} {
		out, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(q)})
		if err != nil {
			b.Fatal(err)
		}
		urls = append(urls, aws.ToString(out.QueueUrl))
	}
	b.Cleanup(func() {
		for _, u := range urls {
			client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	const n = 20000
	body := strings.Repeat("x", 1024)
	fill := func() {
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n/40; i++ {
					var es []sqstypes.SendMessageBatchRequestEntry
					for j := 0; j < 10; j++ {
						es = append(es, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body)})
					}
					if _, err := client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(urls[0]), Entries: es}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		if bare {
			if moved := bareLoop(ctx, client, urls[0], urls[1], 4, n); moved != n {
				b.Fatalf("moved %d", moved)
			}
		} else {
			s, err := Run(ctx, src, name+"-dlq", src, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: name + "-dst"}, Concurrency: 4, Window: 100, NoRedriveHeader: os.Getenv("BENCH_NO_HEADER") != ""})
			if err != nil || s.Moved != n {
				b.Fatalf("moved %d: %v", s.Moved, err)
			}
		}
		b.StopTimer()
		client.PurgeQueue(ctx, &awssqs.PurgeQueueInput{QueueUrl: aws.String(urls[1])})
		b.StartTimer()
	}
	// Both end with one empty long poll of a second: leave it out.
	b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)-1), "msgs/s")
}

// bareLoop moves every message from one queue to another with conc
// workers, each receiving 10, sending them, deleting them.
func bareLoop(ctx context.Context, c *awssqs.Client, from, to string, conc, want int) int64 {
	var moved atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(from), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					return
				}
				if len(out.Messages) == 0 {
					// The emulator may answer empty while others hold
					// messages: stop only once everything has moved.
					if moved.Load() >= int64(want) {
						return
					}
					continue
				}
				var se []sqstypes.SendMessageBatchRequestEntry
				var de []sqstypes.DeleteMessageBatchRequestEntry
				for i, m := range out.Messages {
					se = append(se, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body})
					de = append(de, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
				}
				if _, err := c.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(to), Entries: se}); err != nil {
					return
				}
				if _, err := c.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(from), Entries: de}); err != nil {
					return
				}
				moved.Add(int64(len(out.Messages)))
			}
		}()
	}
	wg.Wait()
	return moved.Load()
}
