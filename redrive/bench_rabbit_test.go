package redrive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
)

// BenchmarkRedriveRabbitMQ moves 20,000 persistent 1 KiB messages between
// two classic (or, with BENCH_KIND=quorum, quorum) queues per iteration
// with the real adapter; BENCH_WINDOW and BENCH_CONCURRENCY set the
// engine's. Profile with -cpuprofile; scripts/bench/redrive.sh compares
// with a shovel end to end.
func BenchmarkRedriveRabbitMQ(b *testing.B) {
	env := brokertest.RabbitMQ(b)
	ctx := context.Background()
	br, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		b.Fatal("dial failed")
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	kind := os.Getenv("BENCH_KIND")
	if kind == "" {
		kind = "classic"
	}
	name := brokertest.Name(b, "bench")
	for _, q := range []string{name, name + ".dst"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{"x-queue-type": kind}); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if c, err := conn.Channel(); err == nil {
				c.QueueDelete(q, false, false, false)
			}
		}()
	}
	ch.Confirm(false)
	const n = 20000
	body := bytes.Repeat([]byte("x"), 1024)
	win, _ := strconv.Atoi(os.Getenv("BENCH_WINDOW"))
	conc, _ := strconv.Atoi(os.Getenv("BENCH_CONCURRENCY"))
	for b.Loop() {
		b.StopTimer()
		var ds []*amqp.DeferredConfirmation
		for i := 0; i < n; i++ {
			d, err := ch.PublishWithDeferredConfirm("", name, false, false, amqp.Publishing{DeliveryMode: 2, MessageId: fmt.Sprint("m", i), Body: body})
			if err != nil {
				b.Fatal(err)
			}
			ds = append(ds, d)
		}
		for _, d := range ds {
			d.Wait()
		}
		b.StartTimer()
		s, err := Run(ctx, br, name, br, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: name + ".dst"}, Window: win, Concurrency: conc})
		if err != nil || s.Moved != n {
			b.Fatalf("moved %d: %v", s.Moved, err)
		}
		b.StopTimer()
		ch.QueuePurge(name+".dst", false)
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
