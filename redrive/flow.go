package redrive

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// flow is flow control: it follows the destination's blocked/unblocked
// callbacks (broker.FlowWatcher) and makes publishers wait while it blocks.
type flow struct {
	notice    func(string)
	done      atomic.Bool // the run is over: callbacks are ignored
	mu        sync.Mutex
	blocked   bool
	unblocked chan struct{} // closed when a block ends
}

// on is the destination's flow-control callback.
func (f *flow) on(blocked bool, reason string) {
	if f.done.Load() {
		return
	}
	f.mu.Lock()
	was := f.blocked
	f.blocked = blocked
	var wake chan struct{}
	if blocked && !was {
		f.unblocked = make(chan struct{})
	}
	if !blocked && was {
		wake, f.unblocked = f.unblocked, nil
	}
	f.mu.Unlock()
	switch {
	case blocked && !was:
		f.notice(fmt.Sprintf("paused: the destination broker is blocking publishers (%s); waiting for it to resume", reason))
	case !blocked && was:
		f.notice("resumed: the destination broker accepts publishes again")
	}
	if wake != nil {
		close(wake)
	}
}

// wait waits while the destination blocks publishers.
func (f *flow) wait(ctx context.Context) {
	f.mu.Lock()
	ch := f.unblocked
	f.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (f *flow) isBlocked() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked
}
