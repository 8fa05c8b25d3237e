package redrive

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/broker/sqs/sqsbench"
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
	client := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(env.Endpoint), Credentials: aws.AnonymousCredentials{}}, dlqsqs.OwnRequestBodies)
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
		if err := sqsbench.Fill(ctx, client, urls[0], body, 4, n/40); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		if bare {
			if moved := sqsbench.BareMove(ctx, client, urls[0], urls[1], 4, n); moved != n {
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
