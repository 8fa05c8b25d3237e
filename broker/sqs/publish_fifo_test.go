package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// fifoMsgs are n messages for a FIFO queue, in groups by groups(i).
func fifoMsgs(n int, group func(i int) string) []broker.Outgoing {
	var msgs []broker.Outgoing
	for i := range n {
		msgs = append(msgs, broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: fakeURL},
			GroupID: group(i), DeduplicationID: fmt.Sprint("d", i),
			Message: &broker.Message{System: broker.SQS, Body: []byte(fmt.Sprint("m", i))}})
	}
	return msgs
}

// TestPublishFIFOStopsAGroupAtItsFirstFailure: once a message of a group is
// not accepted, no later message of that group is sent (in the same batch
// it is not retried behind an accepted one; in later batches it is not
// sent), while other groups go on.
func TestPublishFIFOStopsAGroupAtItsFirstFailure(t *testing.T) {
	f, b := newFake(t)
	f.attrs[attrFifo] = "true"
	// Groups: even indexes "a", odd "b".
	msgs := fifoMsgs(30, func(i int) string { return map[bool]string{true: "a", false: "b"}[i%2 == 0] })
	var sent [][]string
	record := func(in *sqs.SendMessageBatchInput) {
		var bodies []string
		for _, e := range in.Entries {
			bodies = append(bodies, aws.ToString(e.MessageBody))
		}
		sent = append(sent, bodies)
	}
	f.sends = append(f.sends,
		// Batch 1 (m0..m9): m2 (group a) fails on SQS's side, m4 (a) and the
		// rest are accepted: m2 must not be retried behind m4.
		func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			record(in)
			out := &sqs.SendMessageBatchOutput{}
			for _, e := range in.Entries {
				if aws.ToString(e.MessageBody) == "m2" {
					out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
					continue
				}
				out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
			}
			return out, nil
		},
		// Batch 2 (m10..m19): only its group b messages are sent; the call
		// fails as a whole, so group b stops too and batch 3 sends nothing.
		func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
			record(in)
			return nil, errors.New("connection reset")
		})
	errs, err := b.Publish(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 || len(sent[0]) != 10 {
		t.Fatalf("batches sent = %v", sent)
	}
	for _, body := range sent[1] {
		var i int
		fmt.Sscanf(body, "m%d", &i)
		if i%2 == 0 {
			t.Errorf("group a message %s was sent after m2 of its group failed", body)
		}
	}
	if strings.Join(sent[1], " ") != "m11 m13 m15 m17 m19" {
		t.Errorf("second batch = %v, want the group b messages of m10..m19", sent[1])
	}
	for i, e := range errs {
		switch {
		case i == 2:
			if e == nil || !strings.Contains(e.Error(), "try again") {
				t.Errorf("m2: %v", e)
			}
		case i < 10:
			if e != nil {
				t.Errorf("m%d was accepted but reports %v", i, e)
			}
		case i%2 == 0:
			if e == nil || !strings.Contains(e.Error(), `message group "a"`) {
				t.Errorf("m%d of stopped group a: %v", i, e)
			}
		default:
			if e == nil {
				t.Errorf("m%d of group b reported sent after its batch call failed", i)
			}
		}
	}
}

// TestPublishFIFOConversionFailureStopsItsGroup: a message that cannot be
// converted (an attribute name SQS forbids) stops its group before
// anything is sent.
func TestPublishFIFOConversionFailureStopsItsGroup(t *testing.T) {
	f, b := newFake(t)
	f.attrs[attrFifo] = "true"
	msgs := fifoMsgs(4, func(i int) string { return []string{"a", "b", "a", "b"}[i] })
	msgs[0].Message.Attributes = map[string]broker.Attribute{"AWS.bad": {DataType: "String", StringValue: "x"}}
	f.sends = append(f.sends, func(in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			if g := aws.ToString(e.MessageGroupId); g != "b" {
				t.Errorf("sent %s of group %s after the group's first message failed", aws.ToString(e.MessageBody), g)
			}
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
		}
		return out, nil
	})
	errs, err := b.Publish(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] == nil || errs[2] == nil || errs[1] != nil || errs[3] != nil {
		t.Errorf("errs = %v, want m0 and m2 (group a) failed, m1 and m3 sent", errs)
	}
}
