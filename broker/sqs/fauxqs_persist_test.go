package sqs

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestFauxqsPersistentVisibilityZero checks the emulator rather than dlq:
// fauxqs 2.4.1 with persistence on (the fault servers' fauxqs) lost every
// message whose visibility was changed to 0 — its updateMessageReady stored
// a null receive count into a NOT NULL column, SQLite threw, and the message
// was on neither the in-flight nor the ready list; the client got HTTP 500.
// scripts/brokers patches the installed fauxqs (patch_fauxqs); this test
// fails if the patch is lost. dlq's redrive hands messages back this way.
func TestFauxqsPersistentVisibilityZero(t *testing.T) {
	env := brokertest.Fault(t)
	env.NeedSQS(t)
	b := openAt(t, env.SQS.Endpoint)
	ctx := context.Background()
	u := createQueue(t, b, baseName(t), nil)
	sendBodies(t, b, u, "", "handed-back")

	receive := func(wait int32) []types.Message {
		t.Helper()
		out, err := b.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(u),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           300,
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		return out.Messages
	}
	first := receive(1)
	if len(first) != 1 {
		t.Fatalf("first receive: %d messages, want 1", len(first))
	}
	if _, err := b.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(u), ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		// Unpatched: HTTP 500 (NOT NULL constraint failed), which the SDK
		// retries into MessageNotInflight.
		t.Errorf("ChangeMessageVisibility to 0 (fauxqs unpatched? see patch_fauxqs in scripts/brokers): %v", err)
	}
	again := receive(5)
	if len(again) != 1 {
		v, f := depth(t, b, u)
		t.Fatalf("after ChangeMessageVisibility to 0: received %d messages, want the one handed back (queue shows %d visible, %d in flight)", len(again), v, f)
	}
	if got := aws.ToString(again[0].Body); got != "handed-back" {
		t.Errorf("body %q, want %q", got, "handed-back")
	}
	if got := again[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; got != "2" {
		t.Errorf("ApproximateReceiveCount %q after the second receive, want 2", got)
	}
}
