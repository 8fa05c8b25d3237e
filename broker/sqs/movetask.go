package sqs

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// maxMoveRate is SQS's cap on MaxNumberOfMessagesPerSecond.
const maxMoveRate = 500

// startTimeout bounds a request that starts a move task.
const startTimeout = 30 * time.Second

var _ broker.ServerSideMover = (*Broker)(nil)

// StartMove starts an SQS message move task from the DLQ queue to dest: a
// queue (by name, URL or ARN), or ToOrigin, which lets SQS send each
// message back to the queue it was dead-lettered from. SQS refuses a second
// running task on the same source.
func (b *Broker) StartMove(ctx context.Context, queue string, dest broker.Destination, opts broker.MoveOptions) (broker.MoveTask, error) {
	op := "start message move task from `" + queueName(queue) + "`"
	if opts.MaxPerSecond < 0 || opts.MaxPerSecond > maxMoveRate {
		return broker.MoveTask{}, broker.Errorf(broker.ErrUnsupported, op, "rate %d is out of range: SQS moves 1 to %d messages per second", opts.MaxPerSecond, maxMoveRate)
	}
	srcURL, err := b.queueURL(ctx, queue)
	if err != nil {
		return broker.MoveTask{}, err
	}
	srcARN, err := b.queueARN(ctx, srcURL)
	if err != nil {
		return broker.MoveTask{}, err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(srcARN)}
	task := broker.MoveTask{Source: srcARN, Destination: "origin", State: broker.MoveRunning, MaxPerSecond: opts.MaxPerSecond, Started: time.Now().UTC()}
	switch dest.Kind {
	case broker.ToOrigin, "":
	case broker.ToQueue:
		dURL, err := b.queueURL(ctx, dest.Queue)
		if err != nil {
			return broker.MoveTask{}, err
		}
		dARN, err := b.queueARN(ctx, dURL)
		if err != nil {
			return broker.MoveTask{}, err
		}
		in.DestinationArn = aws.String(dARN)
		task.Destination = dARN
	default:
		return broker.MoveTask{}, broker.Errorf(broker.ErrUnsupported, op, "an SQS move task moves to a queue or to the origin, not to %s", dest)
	}
	if opts.MaxPerSecond > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(opts.MaxPerSecond))
	}
	// Once asked, the task may run whether or not the answer arrives: an
	// interrupt must not cut the answer off, or dlq could not name the
	// task it started. The request runs to its end, bounded on its own.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	out, err := b.api.StartMessageMoveTask(sctx, in)
	if err != nil {
		return broker.MoveTask{}, translateErr(op, err)
	}
	task.Handle = aws.ToString(out.TaskHandle)
	return task, nil
}

// MoveStatus lists the move tasks of queue (SQS keeps the most recent ones,
// running or finished), most recent first.
func (b *Broker) MoveStatus(ctx context.Context, queue string) ([]broker.MoveTask, error) {
	srcURL, err := b.queueURL(ctx, queue)
	if err != nil {
		return nil, err
	}
	srcARN, err := b.queueARN(ctx, srcURL)
	if err != nil {
		return nil, err
	}
	out, err := b.api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(srcARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, translateErr("list message move tasks of `"+queueName(queue)+"`", err)
	}
	tasks := make([]broker.MoveTask, 0, len(out.Results))
	for _, r := range out.Results {
		tasks = append(tasks, moveTaskFrom(r))
	}
	return tasks, nil
}

func moveTaskFrom(r types.ListMessageMoveTasksResultEntry) broker.MoveTask {
	moved := r.ApproximateNumberOfMessagesMoved
	t := broker.MoveTask{
		Handle:      aws.ToString(r.TaskHandle),
		Source:      aws.ToString(r.SourceArn),
		Destination: aws.ToString(r.DestinationArn),
		State:       moveState(aws.ToString(r.Status)),
		Moved:       &moved,
		ToMove:      r.ApproximateNumberOfMessagesToMove,
		Failure:     aws.ToString(r.FailureReason),
	}
	if t.Destination == "" {
		t.Destination = "origin"
	}
	if r.MaxNumberOfMessagesPerSecond != nil {
		t.MaxPerSecond = int(*r.MaxNumberOfMessagesPerSecond)
	}
	if r.StartedTimestamp > 0 {
		t.Started = time.UnixMilli(r.StartedTimestamp).UTC()
	}
	return t
}

func moveState(s string) broker.MoveState {
	switch strings.ToUpper(s) {
	case "RUNNING":
		return broker.MoveRunning
	case "COMPLETED":
		return broker.MoveCompleted
	case "CANCELLING":
		return broker.MoveCancelling
	case "CANCELLED":
		return broker.MoveCancelled
	case "FAILED":
		return broker.MoveFailed
	}
	return broker.MoveState(strings.ToLower(s))
}

// CancelMove cancels a running move task; messages already moved stay
// moved. queue is used to report the task's state afterwards.
func (b *Broker) CancelMove(ctx context.Context, queue, handle string) (broker.MoveTask, error) {
	op := "cancel message move task of `" + queueName(queue) + "`"
	if handle == "" {
		return broker.MoveTask{}, broker.Hintf("%s: no task handle: see %s", op, broker.Cmd("redrive status"))
	}
	out, err := b.api.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		return broker.MoveTask{}, translateErr(op, err)
	}
	moved := out.ApproximateNumberOfMessagesMoved
	task := broker.MoveTask{Handle: handle, State: broker.MoveCancelling, Moved: &moved}
	if tasks, err := b.MoveStatus(ctx, queue); err == nil {
		for _, t := range tasks {
			if t.Handle == handle {
				return t, nil
			}
		}
	}
	return task, nil
}
