package rabbitmq

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

const benchMessages = 100_000

func benchBroker(b *testing.B) *Broker {
	env := brokertest.RabbitMQ(b)
	br, err := Open(context.Background(), Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return br
}

// BenchmarkPublish publishes 100,000 persistent 1 KiB messages per
// iteration to a classic and a quorum queue, in Publish calls of `batch`
// messages, and reports messages per second (the redrive target is RabbitMQ's
// own shovel on the same machine: about 6.3k/s classic, 20.6k/s quorum).
func BenchmarkPublish(b *testing.B) {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	for _, kind := range []string{"classic", "quorum"} {
		for _, batch := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", kind, batch), func(b *testing.B) {
				br := benchBroker(b)
				q := brokertest.Name(b, kind)
				args := amqp.Table{}
				if kind == "quorum" {
					args["x-queue-type"] = "quorum"
				}
				declareQueue(b, br, q, args)
				msgs := make([]broker.Outgoing, batch)
				for i := range msgs {
					msgs[i] = broker.Outgoing{
						Message: &broker.Message{Body: body, Properties: broker.Properties{MessageID: fmt.Sprintf("m-%d", i), ContentType: "application/json", DeliveryMode: 2}},
						Dest:    broker.Destination{Kind: broker.ToQueue, Queue: q},
					}
				}
				ctx := context.Background()
				b.ResetTimer()
				start := time.Now()
				for n := 0; n < b.N; n++ {
					for sent := 0; sent < benchMessages; sent += batch {
						errs, err := br.Publish(ctx, msgs)
						if err != nil {
							b.Fatal(err)
						}
						for _, e := range errs {
							if e != nil {
								b.Fatal(e)
							}
						}
					}
					b.StopTimer()
					if _, err := br.Purge(ctx, q); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.N*benchMessages)/time.Since(start).Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkPeekFirstPage measures the time to the first page (20 messages)
// of a hold peek on a deep classic queue; it must not depend on the depth.
// DLQ_BENCH_DEPTH adds a deeper queue (1000000 for the figure),
// filled on the fault-test broker so that the shared one keeps its memory.
func BenchmarkPeekFirstPage(b *testing.B) {
	depths := []int{1000, 100_000}
	extra, _ := strconv.Atoi(os.Getenv("DLQ_BENCH_DEPTH"))
	if extra > 0 {
		depths = append(depths, extra)
	}
	for _, depthN := range depths {
		b.Run(fmt.Sprintf("depth=%d", depthN), func(b *testing.B) {
			var br *Broker
			if depthN == extra {
				env := brokertest.Fault(b)
				var err error
				if br, err = Open(context.Background(), Config{URL: env.Rabbit.AMQPURL, ManagementURL: env.Rabbit.MgmtURL}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { br.Close() })
			} else {
				br = benchBroker(b)
			}
			q := brokertest.Name(b, "deep")
			declareQueue(b, br, q, nil)
			fill(b, br, q, depthN)
			ctx := context.Background()
			b.ResetTimer()
			var total time.Duration
			for n := 0; n < b.N; n++ {
				start := time.Now()
				read := 0
				_, err := br.Peek(ctx, q, broker.PeekOptions{Limit: 20}, func(*broker.Message) error {
					read++
					if read == 20 {
						total += time.Since(start)
					}
					return nil
				})
				if err != nil || read != 20 {
					b.Fatalf("peek: %d %v", read, err)
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-page")
		})
	}
}

func fill(b *testing.B, br *Broker, q string, n int) {
	b.Helper()
	body := make([]byte, 1024)
	msgs := make([]broker.Outgoing, 10000)
	for i := range msgs {
		msgs[i] = broker.Outgoing{Message: &broker.Message{Body: body, Properties: broker.Properties{DeliveryMode: 1}},
			Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}}
	}
	for sent := 0; sent < n; sent += len(msgs) {
		m := msgs
		if n-sent < len(m) {
			m = m[:n-sent]
		}
		if _, err := br.Publish(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}
