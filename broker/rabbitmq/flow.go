package rabbitmq

import (
	"context"
	"fmt"
)

// WatchFlow registers fn to be called when the broker blocks publishing on
// this connection (connection.blocked: a memory or disk alarm) with
// blocked=true and the broker's reason, and when it unblocks. When the
// connection is blocked already, fn is called at once. fn must not block.
func (b *Broker) WatchFlow(fn func(blocked bool, reason string)) {
	b.mu.Lock()
	b.flowFns = append(b.flowFns, fn)
	blocked, reason := b.blocked, b.reason
	b.mu.Unlock()
	if blocked {
		fn(true, reason)
	}
}

// waitUnblocked returns at once when publishing is allowed, otherwise it
// waits until the broker unblocks the connection or ctx ends.
func (b *Broker) waitUnblocked(ctx context.Context) error {
	b.mu.Lock()
	ch := b.unblocked
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the broker to unblock publishing: %w", ctx.Err())
	}
}

// Blocked reports whether the broker currently blocks publishing, and why.
func (b *Broker) Blocked() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blocked, b.reason
}
