package sqs

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// fill publishes n messages of size bytes to queue u and returns the rate.
func fill(tb testing.TB, b *Broker, u string, n, size int) float64 {
	tb.Helper()
	body := []byte(strings.Repeat("x", size))
	const chunk = 500
	start := time.Now()
	for sent := 0; sent < n; sent += chunk {
		k := min(chunk, n-sent)
		out := make([]broker.Outgoing, k)
		for i := range out {
			out[i] = broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: u},
				Message: &broker.Message{System: broker.SQS, Body: body}}
		}
		errs, err := b.Publish(context.Background(), out)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				tb.Fatal(e)
			}
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

func benchBroker(b *testing.B) *Broker {
	env := brokertest.SQS(b)
	br, err := Open(context.Background(), Config{Endpoint: env.Endpoint})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return br
}

func benchQueue(b *testing.B, br *Broker, suffix string) string {
	name := brokertest.Name(b, suffix)
	u := createQueue(b, br, name, nil)
	return u
}

// BenchmarkPublish measures Publish throughput (1 KiB messages, 500 per call)
// against the emulator.
func BenchmarkPublish(b *testing.B) {
	br := benchBroker(b)
	u := benchQueue(b, br, "pub")
	n := 20000
	b.ResetTimer()
	var rate float64
	for range b.N {
		rate = fill(b, br, u, n, 1024)
	}
	b.ReportMetric(rate, "msg/s")
}

// BenchmarkPeekFirstPage measures the time to the first page (20 messages)
// of a peek at several queue depths; it must not grow with depth. Depths
// come from DLQ_BENCH_SQS_DEPTHS (default "1000,100000"; add 1000000 for the
// full figure).
func BenchmarkPeekFirstPage(b *testing.B) {
	depths := os.Getenv("DLQ_BENCH_SQS_DEPTHS")
	if depths == "" {
		depths = "1000,100000"
	}
	br := benchBroker(b)
	for _, ds := range strings.Split(depths, ",") {
		depth, err := strconv.Atoi(strings.TrimSpace(ds))
		if err != nil {
			b.Fatalf("DLQ_BENCH_SQS_DEPTHS: %v", err)
		}
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			u := benchQueue(b, br, "peek")
			rate := fill(b, br, u, depth, 256)
			b.Logf("filled %d messages at %.0f msg/s", depth, rate)
			real := br.api
			counting := &countingAPI{sqsAPI: real}
			br.api = counting
			defer func() { br.api = real }()
			b.ResetTimer()
			var times []time.Duration
			for range b.N {
				for range 5 {
					start := time.Now()
					n := 0
					_, err := br.Peek(context.Background(), u, broker.PeekOptions{Limit: 20}, func(*broker.Message) error {
						n++
						return nil
					})
					if err != nil || n != 20 {
						b.Fatalf("peek: %d messages, %v", n, err)
					}
					times = append(times, time.Since(start))
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/first-page")
			// The adapter's share: a fixed number of calls per page, whatever
			// the depth; the rest of the time is the server answering them.
			b.ReportMetric(float64(counting.calls.Load())/float64(len(times)), "calls/first-page")
			b.ReportMetric(float64(counting.receiveNanos.Load())/float64(len(times))/1e6, "ms-in-receive/first-page")
		})
	}
}

// countingAPI counts the calls made and the time spent in ReceiveMessage.
type countingAPI struct {
	sqsAPI
	calls        atomic.Int64
	receiveNanos atomic.Int64
}

func (c *countingAPI) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.calls.Add(1)
	start := time.Now()
	defer func() { c.receiveNanos.Add(int64(time.Since(start))) }()
	return c.sqsAPI.ReceiveMessage(ctx, in, optFns...)
}

func (c *countingAPI) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.calls.Add(1)
	return c.sqsAPI.GetQueueAttributes(ctx, in, optFns...)
}

func (c *countingAPI) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.calls.Add(1)
	return c.sqsAPI.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}
