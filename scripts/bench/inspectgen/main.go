// Command inspectgen makes data for the inspect benchmarks: a synthetic
// dead-letter archive (N messages with JSON bodies of about 1 KiB, mixed
// failure reasons from framework headers, body fields and broker death
// reasons, several source queues, ages spread over a week), or a deep queue
// on RabbitMQ or SQS filled by a fast pipelined publisher.
//
//	inspectgen -n 1000000 -o /tmp/dlq-1m.jsonl
//	inspectgen -n 1000000 -frameworks -size 256 -o /tmp/dlq-frameworks-1m.jsonl
//	inspectgen -n 1000000 -rabbit amqp://user:pass@127.0.0.1:5672/ -queue deep.dlq
//	inspectgen -n 100000 -sqs http://127.0.0.1:9324 -queue deep-dlq
//	inspectgen -rabbit URL -queue deep.dlq -delete
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

func main() {
	n := flag.Int("n", 100000, "messages")
	out := flag.String("o", "", "archive file to write (.jsonl or .jsonl.gz)")
	size := flag.Int("size", 1024, "approximate body size in bytes")
	rabbitURL := flag.String("rabbit", "", "fill this RabbitMQ (amqp URL) instead of writing an archive")
	sqsEndpoint := flag.String("sqs", "", "fill this SQS endpoint instead of writing an archive")
	queue := flag.String("queue", "", "queue to fill (created when missing)")
	del := flag.Bool("delete", false, "delete -queue instead of filling it")
	templates := flag.Int("templates", -1, "write an incident archive instead: failure reasons with variable parts from this many templates (0: the five of an incident)")
	frameworks := flag.Bool("frameworks", false, "write an archive of mixed framework dead letters instead (Spring, MassTransit, NServiceBus, SNS, Lambda, EventBridge, Celery, plain)")
	flag.Parse()
	var err error
	switch {
	case *rabbitURL != "":
		err = fillRabbit(*rabbitURL, *queue, *n, *size, *del)
	case *sqsEndpoint != "":
		err = fillSQS(*sqsEndpoint, *queue, *n, *size, *del)
	case *out == "":
		err = fmt.Errorf("-o FILE, -rabbit URL or -sqs ENDPOINT is required")
	case *frameworks:
		err = mixedFrameworks(*n, *out, *size)
	case *templates >= 0:
		err = incident(*n, *out, *size, *templates)
	default:
		err = run(*n, *out, *size)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inspectgen:", err)
		os.Exit(1)
	}
}

var (
	sources = []string{"orders", "payments", "shipping", "invoices"}
	reasons = []string{"rejected", "expired", "maxlen", "delivery_limit"}
	errs    = []string{"card declined", "timeout calling pricing", "customer not found", "validation failed: amount", "upstream 503"}
)

func run(n int, path string, size int) error {
	os.Remove(path)
	w, err := archive.NewWriter(path, archive.WriterOptions{Generator: "inspectgen", Source: archive.Source{System: broker.RabbitMQ, Queue: "bench.dlq"}})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UTC()
	pad := strings.Repeat("x", size)
	for i := range n {
		src := sources[rng.IntN(len(sources))]
		m := &broker.Message{
			ID:     fmt.Sprintf("msg-%08d", i),
			System: broker.RabbitMQ,
			Queue:  "bench.dlq",
			Properties: broker.Properties{
				ContentType: "application/json", DeliveryMode: 2,
				MessageID: fmt.Sprintf("msg-%08d", i),
				Timestamp: now.Add(-time.Duration(rng.Int64N(int64(7 * 24 * time.Hour)))).Truncate(time.Second),
			},
			Headers: map[string]any{"tenant": fmt.Sprintf("t%d", rng.IntN(20))},
		}
		// Every 100th message reuses an earlier ID: duplicates to find.
		if i%100 == 99 {
			m.Properties.MessageID = fmt.Sprintf("msg-%08d", i-50)
			m.ID = m.Properties.MessageID
		}
		r := reasons[rng.IntN(len(reasons))]
		m.Death = &broker.Death{Reason: r, Queue: src, Exchange: src + ".x", RoutingKeys: []string{src + ".created"}, Count: 1, First: m.Properties.Timestamp.Add(time.Second), Last: m.Properties.Timestamp.Add(time.Second)}
		var body string
		head := fmt.Sprintf(`{"order_id":"ord-%d","customer":{"id":"c-%d","tier":"t%d"},"amount":%d.%02d,`, i, rng.IntN(50000), rng.IntN(3), rng.IntN(1000), rng.IntN(100))
		switch k := rng.IntN(4); k {
		case 0:
			m.Headers["x-exception-message"] = errs[rng.IntN(len(errs))]
			body = head
		case 1:
			body = head + fmt.Sprintf(`"error":{"code":%d,"message":%q},`, 400+rng.IntN(5), errs[rng.IntN(len(errs))])
		default:
			body = head
		}
		body += `"note":"` + pad[:max(size-len(body)-10, 0)] + `"}`
		m.Body = []byte(body)
		if err := w.Write(m); err != nil {
			return err
		}
	}
	return w.Close()
}

// incident writes n dead letters whose x-exception-message reasons carry
// variable parts (ids, numbers, UUIDs, quoted dates). With templates 0 they
// come from the five templates of an incident (duplicate keys, read
// timeouts with an id in the URL, 503s naming a SKU and a request UUID,
// customers not found, a date-parse error); with templates k > 0 from k
// templates that differ in their first two words, so that none merge.
func incident(n int, path string, size, templates int) error {
	os.Remove(path)
	w, err := archive.NewWriter(path, archive.WriterOptions{Generator: "inspectgen", Source: archive.Source{System: broker.RabbitMQ, Queue: "bench.dlq"}})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now().UTC()
	pad := strings.Repeat("x", size)
	for i := range n {
		var reason string
		if templates > 0 {
			k := rng.IntN(templates)
			reason = fmt.Sprintf("Handler %s failed on step %s for order %d", word(k), word(k/7), rng.IntN(1e6))
		} else {
			switch rng.IntN(5) {
			case 0:
				reason = fmt.Sprintf(`ERROR: duplicate key value violates unique constraint "orders_pkey" Detail: Key (id)=(%d) already exists.`, rng.IntN(1e7))
			case 1:
				reason = fmt.Sprintf("Read timed out calling https://pricing.internal/v2/orders/%d/quote after %dms", rng.IntN(1e7), 5000+rng.IntN(100))
			case 2:
				reason = fmt.Sprintf("Inventory service returned 503 for SKU-%d (request %08x-%04x-4%03x-a%03x-%012x)", rng.IntN(10000), rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Int64N(1<<48))
			case 3:
				reason = fmt.Sprintf("Customer cus_%d not found", rng.IntN(100000))
			default:
				reason = fmt.Sprintf(`Cannot deserialize value of type java.time.LocalDate from String "%02d/%02d/20%02d": not a valid date`, 1+rng.IntN(31), 13+rng.IntN(20), rng.IntN(30))
			}
		}
		ts := now.Add(-time.Duration(rng.Int64N(int64(7 * 24 * time.Hour)))).Truncate(time.Second)
		m := &broker.Message{
			ID: fmt.Sprintf("msg-%08d", i), System: broker.RabbitMQ, Queue: "bench.dlq",
			Properties: broker.Properties{ContentType: "application/json", DeliveryMode: 2, MessageID: fmt.Sprintf("msg-%08d", i), Timestamp: ts},
			Headers:    map[string]any{"x-exception-message": reason},
			Death:      &broker.Death{Reason: "rejected", Queue: "orders", Count: 1, First: ts.Add(time.Second), Last: ts.Add(time.Second)},
		}
		body := fmt.Sprintf(`{"order_id":"ord-%d","amount":%d,`, i, rng.IntN(1000))
		m.Body = []byte(body + `"note":"` + pad[:max(size-len(body)-10, 0)] + `"}`)
		if err := w.Write(m); err != nil {
			return err
		}
	}
	return w.Close()
}

// word spells k in letters only (a literal word, never an id).
func word(k int) string {
	b := []byte{'X'}
	for {
		b = append(b, byte('a'+k%26))
		k /= 26
		if k == 0 {
			return string(b)
		}
	}
}
