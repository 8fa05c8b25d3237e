package redrive

import (
	"context"
	"errors"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// startOnlyMover is a broker whose server-side move starts (the broker
// answers with a handle) while the caller is being interrupted.
type startOnlyMover struct {
	*fakeBroker
	onStart  func()
	statuses int
}

func (m *startOnlyMover) StartMove(ctx context.Context, queue string, dest broker.Destination, opts broker.MoveOptions) (broker.MoveTask, error) {
	m.onStart()
	return broker.MoveTask{Handle: "task-1", Source: queue, State: broker.MoveRunning}, nil
}

func (m *startOnlyMover) MoveStatus(ctx context.Context, queue string) ([]broker.MoveTask, error) {
	m.statuses++
	return []broker.MoveTask{{Handle: "task-1", Source: queue, State: broker.MoveRunning}}, nil
}

func (m *startOnlyMover) CancelMove(ctx context.Context, queue, handle string) (broker.MoveTask, error) {
	return broker.MoveTask{}, errors.New("not wanted")
}

// An interrupt that arrives while the broker starts the move still names
// the running move, so that the user can follow or cancel it.
func TestServerSideInterruptedAtStartNamesTheMove(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &startOnlyMover{fakeBroker: newFake(t, broker.SQS), onStart: cancel}
	task, err := ServerSide(ctx, m, "orders-dlq", ServerSideOptions{Wait: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if task.Handle != "task-1" || task.State != broker.MoveRunning {
		t.Errorf("task = handle %q state %q, want the running move task-1", task.Handle, task.State)
	}
	if m.statuses != 0 {
		t.Errorf("followed an interrupted move %d times", m.statuses)
	}
}
