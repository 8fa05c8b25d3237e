package sqs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestConformance runs the shared adapter suite against both emulators,
// on standard and FIFO queues. The harness makes, fills and reads the
// queues with an SDK client of its own, never through the adapter.
//
// Allowances for emulators, which are not AWS: the dead letters are sent
// into the dead-letter queue rather than dead-lettered by receives (the
// emulators differ in when they move a message past maxReceiveCount), so
// they carry no DeadLetterQueueSourceArn and their origin is the queue's
// only source, which dlq resolves the same way on AWS; and fauxqs has no
// message move tasks, which the adapter reports as broker.ErrUnsupported,
// so the server-side move runs on local-aws-sqs. local-aws-sqs deletes a
// purged queue's messages 60 seconds after PurgeQueue (AWS allows itself
// as long): the suite waits for the count to reach 0 within its 90 seconds.
func TestConformance(t *testing.T) {
	env := brokertest.SQS(t)
	for _, e := range []struct{ name, endpoint string }{{"fauxqs", env.Endpoint}, {"local-aws-sqs", env.MoveEndpoint}} {
		t.Run(e.name, func(t *testing.T) {
			b := openAt(t, e.endpoint)
			cfg, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			h := &sqsHarness{urls: map[string]string{},
				client: sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(e.endpoint) })}
			brokertest.Conformance(t, brokertest.Harness{
				Broker: b,
				Kinds: []brokertest.Kind{
					{Name: "standard", Kind: broker.KindSQSStandard, Make: h.maker(false)},
					{Name: "fifo", Kind: broker.KindSQSFIFO, Make: h.maker(true)},
				},
				Count:       h.count,
				Contents:    h.contents,
				DeadLetters: h.deadLetters,
			})
		})
	}
}

type sqsHarness struct {
	client *sqs.Client
	mu     sync.Mutex
	urls   map[string]string // queue name → URL
	dedup  int
}

func (h *sqsHarness) create(t brokertest.TB, prefix string, fifo bool, attrs map[string]string) string {
	t.Helper()
	name := brokertest.NameTB(t, prefix)
	if attrs == nil {
		attrs = map[string]string{}
	}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := h.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = h.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
	})
	h.mu.Lock()
	h.urls[name] = u
	h.mu.Unlock()
	return name
}

func (h *sqsHarness) url(q string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.urls[q]
}

// send sends msgs one at a time, so that their order is the order sent.
func (h *sqsHarness) send(t brokertest.TB, q string, fifo bool, msgs []brokertest.Fill) {
	t.Helper()
	for _, m := range msgs {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(h.url(q)), MessageBody: aws.String(m.Body)}
		if fifo {
			h.mu.Lock()
			h.dedup++
			in.MessageDeduplicationId = aws.String(strconv.Itoa(h.dedup) + "-" + m.Body)
			h.mu.Unlock()
			in.MessageGroupId = aws.String(m.Group)
		}
		if _, err := h.client.SendMessage(context.Background(), in); err != nil {
			t.Fatalf("send to %s: %v", q, err)
		}
	}
}

func (h *sqsHarness) maker(fifo bool) func(brokertest.TB, []brokertest.Fill) string {
	return func(t brokertest.TB, msgs []brokertest.Fill) string {
		t.Helper()
		q := h.create(t, "q", fifo, nil)
		h.send(t, q, fifo, msgs)
		return q
	}
}

// count is every message of the queue: visible, in flight and delayed.
func (h *sqsHarness) count(t brokertest.TB, q string) int64 {
	t.Helper()
	out, err := h.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(h.url(q)),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatalf("attributes of %s: %v", q, err)
	}
	var n int64
	for _, k := range []string{attrDepth, attrNotVisible, attrDelayed} {
		v, _ := strconv.ParseInt(out.Attributes[k], 10, 64)
		n += v
	}
	return n
}

// contents receives and deletes every message of the queue, in the order
// received (a FIFO queue's group order).
func (h *sqsHarness) contents(t brokertest.TB, q string) []string {
	t.Helper()
	var bodies []string
	for empty := 0; empty < 2; {
		out, err := h.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.url(q)),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		if err != nil {
			t.Fatalf("receive from %s: %v", q, err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := h.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(h.url(q)), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", q, err)
			}
		}
	}
	return bodies
}

// deadLetters makes a work queue whose redrive policy names a dead-letter
// queue, and puts n messages into the latter (see TestConformance).
func (h *sqsHarness) deadLetters(t brokertest.TB, n int) (string, broker.Destination) {
	t.Helper()
	dlq := h.create(t, "dlq", false, nil)
	out, err := h.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(h.url(dlq)),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("ARN of %s: %v", dlq, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	src := h.create(t, "src", false, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, arn)})
	var msgs []brokertest.Fill
	for i := range n {
		msgs = append(msgs, brokertest.Fill{Body: "dead-" + strings.Repeat("x", i)})
	}
	h.send(t, dlq, false, msgs)
	return dlq, broker.Destination{Kind: broker.ToQueue, Queue: src}
}
