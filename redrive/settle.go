package redrive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// settleTimeout bounds the publishing and settling of work that was already
// in flight when the run was cancelled.
const settleTimeout = 30 * time.Second

func settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// settler is the settle stage: it acknowledges or releases deliveries on
// their subscriptions and frees their prefetch slots, which the readers
// take before each delivery. slots is filled before the readers start and
// only read after.
type settler struct {
	slots map[broker.Subscription]chan struct{}
}

// take waits for a free prefetch slot of sub; false when ctx ended first.
func (s *settler) take(ctx context.Context, sub broker.Subscription) bool {
	ch := s.slots[sub]
	if ch == nil {
		return true
	}
	select {
	case ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// free gives back a slot of sub taken for a delivery that never came.
func (s *settler) free(sub broker.Subscription) {
	if ch := s.slots[sub]; ch != nil {
		<-ch
	}
}

// settle acknowledges (ack) or releases items, each on its own
// subscription, and frees their prefetch slots.
func (s *settler) settle(ctx context.Context, items []item, ack bool) error {
	defer func() {
		for _, it := range items {
			if ch := s.slots[it.sub]; ch != nil {
				select {
				case <-ch:
				default:
				}
			}
		}
	}()
	// One call per subscription, all at once (SQS readers each have their
	// own).
	var subs []broker.Subscription
	bySub := map[broker.Subscription][]broker.Receipt{}
	for _, it := range items {
		if _, ok := bySub[it.sub]; !ok {
			subs = append(subs, it.sub)
		}
		bySub[it.sub] = append(bySub[it.sub], it.d.Receipt)
	}
	errs := make([]error, len(subs))
	call := func(i int) {
		if ack {
			errs[i] = subs[i].Ack(ctx, bySub[subs[i]]...)
		} else {
			errs[i] = subs[i].Release(ctx, bySub[subs[i]]...)
		}
	}
	if len(subs) == 1 {
		call(0)
		return errs[0]
	}
	var wg sync.WaitGroup
	for i := range subs {
		wg.Add(1)
		go func() { defer wg.Done(); call(i) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ack acknowledges what the destination confirmed (or an interrupted run
// did) and counts it moved. A failed acknowledgement stops the run: the
// messages are at the destination and still in the source, and a re-run
// with --resume acknowledges them without publishing them again.
func (e *engine) ack(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	if err := e.set.settle(ctx, items, true); err != nil {
		e.tally.setFatal(fmt.Errorf("acknowledge in `%s`: %w", e.queue, err))
		e.tally.failN(ReasonNotSettled, int64(len(items)))
		return
	}
	if e.opts.Journal != nil {
		if err := e.opts.Journal.record('A', ids(items)); err != nil {
			e.tally.setFatal(err)
		}
	}
	e.tally.moved(items, e.mode == modeDiscard)
	e.park.untrack(items)
}

func ids(items []item) []string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.id
	}
	return s
}
