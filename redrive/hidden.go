package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// hiddenSlack is added to the visibility timeout when waiting for the
// messages an interrupted run had taken: it may have received some shortly
// after its last journal line.
const hiddenSlack = 5 * time.Second

// awaitHidden tells a reader that found an SQS source empty during a resumed
// run to look again. The interrupted run's messages stay hidden until their
// visibility timeout ends; finishing before they come back would leave them
// in the source — and the ones already confirmed at the destination would
// be sent again by a later run instead of being removed on sight. It waits
// while the source still hides more messages than this run holds, until
// the interrupted run's last journal write plus the visibility timeout.
func (e *engine) awaitHidden(ctx context.Context) bool {
	r := e.opts.Resume
	if r == nil || e.park.mode != broker.ParkHold || r.LastActive.IsZero() || e.limitReached() || ctx.Err() != nil {
		return false
	}
	left := r.LastActive.Add(e.opts.Visibility + hiddenSlack).Sub(e.now())
	if left <= 0 {
		return false
	}
	hidden := int64(-1) // unknown: wait until the deadline
	if qi, ok := e.src.(broker.QueueInspector); ok {
		if q, err := qi.Queue(ctx, e.queue); err == nil && q.InFlight != nil {
			if hidden = *q.InFlight - e.park.holding(); hidden <= 0 {
				return false
			}
		}
	}
	r.mu.Lock()
	first := !r.hiddenNotice
	r.hiddenNotice = true
	r.mu.Unlock()
	if first {
		what := "the messages"
		if hidden > 0 {
			what = fmt.Sprintf("%d messages", hidden)
		}
		e.tally.notice(fmt.Sprintf("waiting up to %s for %s the interrupted run had taken: SQS keeps them hidden until their visibility timeout ends", left.Round(time.Second), what))
	}
	return true
}

// hiddenSettle is how long hiddenAtEnd lets other consumers finish with
// what they hold (and SQS's approximate counters catch up) before it
// reports messages as left hidden.
var hiddenSettle = 10 * time.Second

// hiddenAtEnd counts the messages an SQS source still hides once a run
// that read it to the end is over. Such a run has settled everything it
// took, so a hidden message was taken by a receive whose answer was lost
// (the SDK retried through a restart or a cut connection) or is held by
// another consumer. It polls until none is hidden or hiddenSettle passes:
// another dlq process finishing its last windows is not a reason to report
// the run as partly done.
//
// A resumed run of a source that does not hide (RabbitMQ) checks the same:
// the interrupted run's deliveries stay unacknowledged, held by its
// connection, until the broker notices that connection is gone, which
// takes up to about a minute when a cluster node died with it.
func (e *engine) hiddenAtEnd(ctx context.Context) int64 {
	if e.limitReached() || ctx.Err() != nil || e.park.mode != broker.ParkHold && e.opts.Resume == nil {
		return 0
	}
	qi, ok := e.src.(broker.QueueInspector)
	if !ok {
		return 0
	}
	deadline := time.Now().Add(hiddenSettle)
	for {
		q, err := qi.Queue(ctx, e.queue)
		if err != nil || q.InFlight == nil || *q.InFlight <= 0 {
			return 0
		}
		if time.Now().After(deadline) {
			return *q.InFlight
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// startExtender keeps the deliveries of a holding source hidden while the
// run lasts.
func (e *engine) startExtender(ctx context.Context) func() {
	if e.park.mode != broker.ParkHold {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.opts.Visibility / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				e.extend(ctx, e.park.hidden())
			}
		}
	}()
	return func() { close(stop); <-done }
}

// extend extends the visibility of receipts, ten at a time.
func (e *engine) extend(ctx context.Context, bySub map[broker.Subscription][]broker.Receipt) {
	for sub, rs := range bySub {
		ext, ok := sub.(broker.Extender)
		if !ok {
			ext, ok = e.src.(broker.Extender)
		}
		if !ok {
			continue
		}
		for len(rs) > 0 {
			n := min(len(rs), 10)
			if err := ext.Extend(ctx, e.opts.Visibility, rs[:n]...); err != nil {
				e.tally.notice(fmt.Sprintf("could not extend the visibility of %d messages: %v", n, err))
			}
			rs = rs[n:]
		}
	}
}
