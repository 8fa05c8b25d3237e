package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// fakeSQS answers the calls a test scripts and fails the test when a
// scripted call never happened (or an unscripted one did).
type fakeSQS struct {
	sqsAPI // nil: any call not overridden panics
	t      *testing.T

	mu     sync.Mutex
	sends  []func(*sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
	dels   []func(*sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error)
	attrs  map[string]string
	called map[string]int
}

func newFake(t *testing.T) (*fakeSQS, *Broker) {
	f := &fakeSQS{t: t, attrs: map[string]string{}, called: map[string]int{}}
	t.Cleanup(func() {
		if len(f.sends) > 0 || len(f.dels) > 0 {
			t.Errorf("expected calls never happened: %d SendMessageBatch, %d DeleteMessageBatch", len(f.sends), len(f.dels))
		}
	})
	return f, newBroker(f, "us-east-1", nil)
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: f.attrs}, nil
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sends) == 0 {
		f.t.Fatalf("unexpected SendMessageBatch with %d entries", len(in.Entries))
	}
	fn := f.sends[0]
	f.sends = f.sends[1:]
	return fn(in)
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.dels) == 0 {
		f.t.Fatalf("unexpected DeleteMessageBatch with %d entries", len(in.Entries))
	}
	fn := f.dels[0]
	f.dels = f.dels[1:]
	return fn(in)
}

const fakeURL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"

func TestPublishPartialFailure(t *testing.T) {
	f, b := newFake(t)
	var msgs []broker.Outgoing
	for i := range 3 {
		msgs = append(msgs, broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: fakeURL},
			Message: &broker.Message{System: broker.SQS, Body: []byte(fmt.Sprint("m", i))}})
	}
	// First call: entry 0 ok, 1 fails on SQS's side (retried), 2 is the
	// sender's fault (not retried). Second call: the retry of 1 succeeds.
	f.sends = append(f.sends,
		func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			if len(in.Entries) != 3 {
				t.Errorf("first batch has %d entries", len(in.Entries))
			}
			return &sqs.SendMessageBatchOutput{
				Successful: []types.SendMessageBatchResultEntry{{Id: in.Entries[0].Id, MessageId: aws.String("a")}},
				Failed: []types.BatchResultErrorEntry{
					{Id: in.Entries[1].Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false},
					{Id: in.Entries[2].Id, Code: aws.String("InvalidMessageContents"), Message: aws.String("bad char"), SenderFault: true},
				},
			}, nil
		},
		func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			if len(in.Entries) != 1 || aws.ToString(in.Entries[0].MessageBody) != "m1" {
				t.Errorf("retry batch bodies %q, want [m1]", testdiff.Pick(in.Entries, func(e types.SendMessageBatchRequestEntry) string { return aws.ToString(e.MessageBody) }))
			}
			return &sqs.SendMessageBatchOutput{Successful: []types.SendMessageBatchResultEntry{{Id: in.Entries[0].Id}}}, nil
		})
	errs, err := b.Publish(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("confirmed messages have errors: %v", errs)
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "bad char") || !strings.Contains(errs[2].Error(), "`orders`") {
		t.Errorf("sender-fault entry: %v", errs[2])
	}
}

func TestPublishWholeBatchFailure(t *testing.T) {
	f, b := newFake(t)
	f.sends = append(f.sends, func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return nil, errors.New("connection reset")
	})
	errs, err := b.Publish(context.Background(), []broker.Outgoing{
		{Dest: broker.Destination{Kind: broker.ToQueue, Queue: fakeURL}, Message: &broker.Message{System: broker.SQS, Body: []byte("a")}},
		{Dest: broker.Destination{Kind: broker.ToQueue, Queue: fakeURL}, Message: &broker.Message{System: broker.SQS, Body: []byte("b")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e == nil {
			t.Errorf("message %d reported sent after the batch call failed", i)
		}
	}
}

func TestAckPartialFailure(t *testing.T) {
	f, b := newFake(t)
	sub := &subscription{b: b, url: fakeURL, name: "orders", unsettled: map[string]struct{}{"h0": {}, "h1": {}, "h2": {}}}
	f.dels = append(f.dels,
		func(in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
			return &sqs.DeleteMessageBatchOutput{
				Successful: []types.DeleteMessageBatchResultEntry{{Id: in.Entries[0].Id}},
				Failed: []types.BatchResultErrorEntry{
					{Id: in.Entries[1].Id, Code: aws.String("InternalError"), SenderFault: false},
					{Id: in.Entries[2].Id, Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String("expired"), SenderFault: true},
				},
			}, nil
		},
		func(in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
			if len(in.Entries) != 1 || aws.ToString(in.Entries[0].ReceiptHandle) != "h1" {
				t.Errorf("retry receipt handles %q, want [h1]", testdiff.Pick(in.Entries, func(e types.DeleteMessageBatchRequestEntry) string { return aws.ToString(e.ReceiptHandle) }))
			}
			return &sqs.DeleteMessageBatchOutput{Successful: []types.DeleteMessageBatchResultEntry{{Id: in.Entries[0].Id}}}, nil
		})
	err := sub.Ack(context.Background(), broker.Receipt{Handle: "h0"}, broker.Receipt{Handle: "h1"}, broker.Receipt{Handle: "h2"})
	if err == nil || !strings.Contains(err.Error(), "1 message not deleted") || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("ack error = %v", err)
	}
	if len(sub.unsettled) != 0 {
		t.Errorf("unsettled after ack: %v", sub.unsettled)
	}
}
