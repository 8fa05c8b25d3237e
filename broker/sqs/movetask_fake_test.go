package sqs

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// moveFake answers the move task calls of a fakeSQS.
type moveFake struct {
	*fakeSQS
	started  *sqs.StartMessageMoveTaskInput
	listed   int
	canceled string
}

func (m *moveFake) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	m.started = in
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String("h1")}, nil
}

func (m *moveFake) ListMessageMoveTasks(_ context.Context, in *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	m.listed++
	return &sqs.ListMessageMoveTasksOutput{Results: []types.ListMessageMoveTasksResultEntry{
		{TaskHandle: aws.String("h1"), SourceArn: in.SourceArn, Status: aws.String("CANCELLING"), ApproximateNumberOfMessagesMoved: 3},
	}}, nil
}

func (m *moveFake) CancelMessageMoveTask(_ context.Context, in *sqs.CancelMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	m.canceled = aws.ToString(in.TaskHandle)
	return &sqs.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: 3}, nil
}

// Move tasks go through the adapter's small interface, so that a fake
// answers them: start, status and cancel, with no SQS at all.
func TestMoveTaskThroughAPI(t *testing.T) {
	f, _ := newFake(t)
	f.attrs["QueueArn"] = "arn:aws:sqs:us-east-1:1:orders-dlq"
	m := &moveFake{fakeSQS: f}
	b := newBroker(m, "us-east-1", nil)
	ctx := context.Background()
	const dlq = "https://sqs.us-east-1.amazonaws.com/1/orders-dlq"
	task, err := b.StartMove(ctx, dlq, broker.Destination{Kind: broker.ToOrigin}, broker.MoveOptions{MaxPerSecond: 5})
	if err != nil || task.Handle != "h1" || m.started == nil || aws.ToString(m.started.SourceArn) != f.attrs["QueueArn"] || aws.ToInt32(m.started.MaxNumberOfMessagesPerSecond) != 5 {
		t.Fatalf("StartMove: task %+v, err %v, request %+v; want handle h1 from the fake, source the DLQ's ARN, rate 5", task, err, m.started)
	}
	got, err := b.CancelMove(ctx, dlq, "h1")
	if err != nil || m.canceled != "h1" || m.listed != 1 || got.State != broker.MoveCancelling || got.Moved == nil || *got.Moved != 3 {
		t.Errorf("CancelMove: task %+v, err %v, cancelled %q, listed %d times; want h1 cancelling with 3 moved, listed once", got, err, m.canceled, m.listed)
	}
}

// topologyFake answers the queue calls of a topology change.
type topologyFake struct {
	*fakeSQS
	deleted []string
}

func (m *topologyFake) DeleteQueue(_ context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	m.deleted = append(m.deleted, aws.ToString(in.QueueUrl))
	return &sqs.DeleteQueueOutput{}, nil
}

// Topology changes go through the small interface too.
func TestTopologyChangeThroughAPI(t *testing.T) {
	f, _ := newFake(t)
	m := &topologyFake{fakeSQS: f}
	b := newBroker(m, "us-east-1", nil)
	const u = "https://sqs.us-east-1.amazonaws.com/1/old-q"
	if _, err := b.ApplySQSChange(context.Background(), broker.SQSChange{Action: broker.Delete, Name: u}); err != nil {
		t.Fatal(err)
	}
	if len(m.deleted) != 1 || m.deleted[0] != u {
		t.Errorf("deleted %q, want [%s]", m.deleted, u)
	}
}
