package sqs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// receiveFake hands out one batch of ten messages, then none, and records
// the receipt handles made visible again.
type receiveFake struct {
	*fakeSQS
	mu       sync.Mutex
	batches  int
	released []string
}

func (f *receiveFake) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.batches > 0 {
		return &sqs.ReceiveMessageOutput{}, nil
	}
	f.batches++
	var out sqs.ReceiveMessageOutput
	for i := range int(in.MaxNumberOfMessages) {
		out.Messages = append(out.Messages, types.Message{
			MessageId:     aws.String(fmt.Sprint("m", i)),
			ReceiptHandle: aws.String(fmt.Sprint("h", i)),
			Body:          aws.String("{}"),
		})
	}
	return &out, nil
}

func (f *receiveFake) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range in.Entries {
		if e.VisibilityTimeout == 0 {
			f.released = append(f.released, aws.ToString(e.ReceiptHandle))
		}
	}
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

// A subscription closed while it holds received messages it has not handed
// out yet (the run stopped reading: another receiver reached the limit, a
// cancel, an error) makes them visible again, with the one it handed out:
// none stays hidden until its visibility timeout.
func TestCloseReleasesWhatWasReceivedButNotHandedOut(t *testing.T) {
	base, _ := newFake(t)
	base.attrs["QueueArn"] = "arn:aws:sqs:us-east-1:123456789012:orders"
	f := &receiveFake{fakeSQS: base}
	b := newBroker(f, "us-east-1", nil)
	sub, err := b.Consume(context.Background(), fakeURL, broker.ConsumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sub.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Receipt.Handle != "h0" {
		t.Fatalf("first delivery has handle %q, want h0", d.Receipt.Handle)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(f.released)
	slices.Sort(got)
	want := []string{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"}
	if !slices.Equal(got, want) {
		t.Errorf("released %v, want all ten received: %v", got, want)
	}
	if _, err := sub.Next(context.Background()); err == nil {
		t.Error("Next after Close handed out a message")
	}
}
