package sqs

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// baseName is a unique queue-name stem for this test with room for suffixes
// such as "-dlq.fifo" within SQS's 80 characters.
func baseName(t *testing.T) string {
	t.Helper()
	n := brokertest.Name(t, "q")
	if len(n) > 64 {
		n = "dlqt-" + n[len(n)-59:]
	}
	return n
}

// createQueue creates a queue and deletes it when the test ends.
func createQueue(t testing.TB, b *Broker, name string, attrs map[string]string) string {
	t.Helper()
	ctx := context.Background()
	out, err := b.api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = b.api.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
	})
	return u
}

// createPair creates a DLQ and a source queue that dead-letters into it
// after maxReceives receives. fifo makes both FIFO queues.
func createPair(t *testing.T, b *Broker, maxReceives int, fifo bool) (srcURL, dlqURL string) {
	t.Helper()
	base := baseName(t)
	suffix := ""
	attrs := map[string]string{}
	if fifo {
		suffix = ".fifo"
		attrs["FifoQueue"] = "true"
	}
	dlqURL = createQueue(t, b, base+"-dlq"+suffix, attrs)
	arn := mustARN(t, b, dlqURL)
	src := map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, arn, maxReceives)}
	for k, v := range attrs {
		src[k] = v
	}
	srcURL = createQueue(t, b, base+"-src"+suffix, src)
	return srcURL, dlqURL
}

func mustARN(t *testing.T, b *Broker, u string) string {
	t.Helper()
	a, err := b.queueARN(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sendBodies sends one message per body; group is the FIFO group ("" for
// standard queues).
func sendBodies(t *testing.T, b *Broker, u, group string, bodies ...string) {
	t.Helper()
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < len(bodies) && j < i+10; j++ {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(bodies[j])}
			if group != "" {
				e.MessageGroupId = aws.String(group)
				e.MessageDeduplicationId = aws.String(newDedupID())
			}
			entries = append(entries, e)
		}
		out, err := b.api.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: entries})
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("send: %d failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
}

func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// depth reads the visible and in-flight counts of a queue.
func depth(t *testing.T, b *Broker, u string) (visible, inFlight int) {
	t.Helper()
	a, err := b.attributes(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(a[attrDepth])
	inFlight, _ = strconv.Atoi(a[attrNotVisible])
	return visible, inFlight
}

// waitDepth polls until the queue shows want visible messages and none in
// flight, or fails after a deadline.
func waitDepth(t *testing.T, b *Broker, u string, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, f := depth(t, b, u)
		if v == want && f == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: %d visible, %d in flight; want %d visible, 0 in flight", nameFromURL(u), v, f, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
