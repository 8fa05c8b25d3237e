package broker

import (
	"context"
	"time"
)

// MoveState is where a server-side move stands.
type MoveState string

const (
	MoveRunning    MoveState = "running"
	MoveCompleted  MoveState = "completed"
	MoveCancelling MoveState = "cancelling"
	MoveCancelled  MoveState = "cancelled"
	MoveFailed     MoveState = "failed"
)

// Done reports whether the move has stopped for good.
func (s MoveState) Done() bool {
	return s == MoveCompleted || s == MoveCancelled || s == MoveFailed
}

// MoveOptions shape a server-side move.
type MoveOptions struct {
	// MaxPerSecond caps the broker's move rate (SQS
	// MaxNumberOfMessagesPerSecond, at most 500); 0 lets the broker choose.
	MaxPerSecond int
}

// MoveTask describes one server-side move: an SQS message move task or a
// RabbitMQ dynamic shovel. Numbers the broker does not report are nil.
type MoveTask struct {
	// Handle names the task for MoveStatus and CancelMove: the SQS task
	// handle or the shovel name.
	Handle      string    `json:"handle"`
	Source      string    `json:"source"`
	Destination string    `json:"destination"`
	State       MoveState `json:"state"`
	// Moved is how many messages the broker says it moved so far.
	Moved *int64 `json:"moved,omitempty"`
	// ToMove is how many it set out to move.
	ToMove *int64 `json:"to_move,omitempty"`
	// Remaining is the source's current depth, where that is the best
	// measure of progress (RabbitMQ shovels report no counts).
	Remaining    *int64    `json:"remaining,omitempty"`
	MaxPerSecond int       `json:"max_per_second,omitempty"`
	Started      time.Time `json:"started,omitzero"`
	Failure      string    `json:"failure,omitempty"`
	// Lingers is true when the broker keeps a finished move declared until
	// it is removed with CancelMove (a shovel without delete-after).
	Lingers bool `json:"lingers,omitempty"`
}

// ServerSideMover hands a whole-queue move to the broker's own engine (SQS
// StartMessageMoveTask, a RabbitMQ dynamic shovel). The broker moves every
// message of the source as it is: no filter, no transform, no per-message
// origin; the destination is fixed when the move starts (ToOrigin is allowed
// where the broker itself knows the origin, as SQS does).
type ServerSideMover interface {
	// StartMove starts moving every message of queue to dest.
	StartMove(ctx context.Context, queue string, dest Destination, opts MoveOptions) (MoveTask, error)
	// MoveStatus lists the moves of queue, most recent first; finished ones
	// are included where the broker still remembers them.
	MoveStatus(ctx context.Context, queue string) ([]MoveTask, error)
	// CancelMove stops a move (SQS) or removes a shovel (RabbitMQ). Messages
	// already moved stay moved.
	CancelMove(ctx context.Context, queue, handle string) (MoveTask, error)
}

// MoveSettler is a ServerSideMover whose moves report no counts (a RabbitMQ
// shovel ends after moving the queue's length, even when its destination
// refused messages and they went back to the source). Left waits until a
// finished move has let go of the source (its unacknowledged deliveries are
// back) and returns how many messages the source holds.
type MoveSettler interface {
	Left(ctx context.Context, queue string) (int64, error)
}

// RouteChecker tells whether a publish to dest would reach at least one
// queue, without publishing (RabbitMQ: the exchange's bindings). A dry run
// uses it to report messages that would be returned as unroutable.
type RouteChecker interface {
	Routable(ctx context.Context, dest Destination) (bool, error)
}

// UnreadableTaker moves or removes, by its position, one message that the
// adapter's client cannot decode (and that therefore stops every read of
// its queue), without decoding it (RabbitMQ: a shovel moves it).
type UnreadableTaker interface {
	// TakeUnreadable reads the message at opts.Position another way and
	// hands it to keep (nil: no evidence is kept), which returns only once
	// the evidence is durable; then it moves the message to opts.To, or
	// removes it when opts.To is nil, acknowledging it only after the
	// destination confirmed it. It refuses, changing nothing that loses a
	// message, when it cannot be sure the message it takes is the one
	// kept. It returns the message as read.
	TakeUnreadable(ctx context.Context, queue string, opts TakeOptions, keep func(*Message) error) (*Message, error)
}

// TakeOptions say which unreadable message to take and where.
type TakeOptions struct {
	// Position is the message's place in the queue, 1 for the head, as a
	// peek that stopped at it named it.
	Position int64
	// To is where to move it; nil removes it.
	To *Destination
}
