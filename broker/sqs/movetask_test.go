package sqs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// local-aws-sqs has message move tasks; fauxqs does not.
func TestMoveTaskToOriginAndStatus(t *testing.T) {
	env := brokertest.SQS(t)
	b := openAt(t, env.MoveEndpoint)
	ctx := context.Background()
	srcURL, dlqURL := createPair(t, b, 1, false)
	sendBodies(t, b, dlqURL, "", bodies("m", 25)...)

	task, err := b.StartMove(ctx, dlqURL, broker.Destination{Kind: broker.ToQueue, Queue: srcURL}, broker.MoveOptions{MaxPerSecond: 100})
	if err != nil {
		t.Fatal(err)
	}
	if task.Handle == "" || task.State != broker.MoveRunning {
		t.Fatalf("task handle %q, state %v; want set, %v", task.Handle, task.State, broker.MoveRunning)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		tasks, err := b.MoveStatus(ctx, dlqURL)
		if err != nil {
			t.Fatal(err)
		}
		// SQS names only running tasks; a finished one has no handle.
		if len(tasks) == 0 || (tasks[0].Handle != task.Handle && tasks[0].Handle != "") {
			t.Fatalf("status lists %q, want the started task %s first", testdiff.Pick(tasks, func(m broker.MoveTask) string { return m.Handle + " " + string(m.State) }), task.Handle)
		}
		if tasks[0].State == broker.MoveCompleted {
			if tasks[0].Moved == nil || *tasks[0].Moved != 25 {
				t.Fatalf("moved %v", tasks[0].Moved)
			}
			break
		}
		if tasks[0].State.Done() {
			t.Fatalf("task ended %s: %s", tasks[0].State, tasks[0].Failure)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s", tasks[0].State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitDepth(t, b, srcURL, 25)
	waitDepth(t, b, dlqURL, 0)
}

func TestMoveTaskCancelAndRefusals(t *testing.T) {
	env := brokertest.SQS(t)
	b := openAt(t, env.MoveEndpoint)
	ctx := context.Background()
	srcURL, dlqURL := createPair(t, b, 1, false)
	sendBodies(t, b, dlqURL, "", bodies("m", 40)...)

	if _, err := b.StartMove(ctx, dlqURL, broker.Destination{Kind: broker.ToQueue, Queue: srcURL}, broker.MoveOptions{MaxPerSecond: 501}); !errors.Is(err, broker.ErrUnsupported) {
		t.Fatalf("rate 501: %v", err)
	}
	if _, err := b.StartMove(ctx, dlqURL, broker.Destination{Kind: broker.ToExchange, Exchange: "x"}, broker.MoveOptions{}); !errors.Is(err, broker.ErrUnsupported) {
		t.Fatalf("exchange destination: %v", err)
	}
	task, err := b.StartMove(ctx, dlqURL, broker.Destination{Kind: broker.ToQueue, Queue: srcURL}, broker.MoveOptions{MaxPerSecond: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.CancelMove(ctx, dlqURL, task.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != broker.MoveCancelling && got.State != broker.MoveCancelled {
		t.Fatalf("after cancel: state %v, want %v or %v", got.State, broker.MoveCancelling, broker.MoveCancelled)
	}
	moved := int64(0)
	if got.Moved != nil {
		moved = *got.Moved
	}
	if moved >= 40 {
		t.Fatalf("cancel came too late to test: moved %d", moved)
	}
	// Nothing is lost: every message is in one of the two queues.
	deadline := time.Now().Add(time.Minute)
	for {
		v1, f1 := depth(t, b, srcURL)
		v2, f2 := depth(t, b, dlqURL)
		if v1+v2 == 40 && f1+f2 == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("src %d+%d, dlq %d+%d; want 40 in all", v1, f1, v2, f2)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := b.CancelMove(ctx, dlqURL, "no-such-handle"); err == nil {
		t.Fatal("cancel of an unknown handle succeeded")
	}
}
