package redrive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// item is one delivery and what the engine decided for it.
type item struct {
	d      *broker.Delivery
	sub    broker.Subscription
	id     string
	out    *broker.Outgoing // nil: park it
	dest   string
	reason string // why parked (counted already)
	again  bool   // seen again after rotation: park without counting
	ackNow bool   // confirmed by an interrupted run: ack without publishing
	failed bool   // reason is a failure, not a skip
	// pos is the delivery order within the run and group the message
	// group of an ordered source ("" otherwise), for keeping group order.
	pos   int64
	group string
}

// taken is a delivery and the subscription it came from.
type taken struct {
	d   *broker.Delivery
	sub broker.Subscription
}

// window is a batch of deliveries. prev is closed when the window before
// it has parked its messages, done when this one has: rotations happen in
// delivery order, so a rotation keeps the order of the messages it leaves.
type window struct {
	items      []item
	prev, done chan struct{}
}

// leftovers are deliveries a reader took but could not hand on after a
// stop: they are settled with the rest at the end.
type leftovers struct {
	mu    sync.Mutex
	items []item
}

func (l *leftovers) add(t taken) {
	l.mu.Lock()
	l.items = append(l.items, item{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true})
	l.mu.Unlock()
}

func (l *leftovers) take() []item {
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := l.items
	l.items = nil
	return rest
}

// read starts one reader a subscription. Each takes a prefetch slot before
// each delivery, so that no more deliveries of a subscription are held
// unsettled than its prefetch. deliveries is closed when every reader has
// stopped; a read error goes to errs.
func (e *engine) read(rctx context.Context) (deliveries chan taken, errs chan error) {
	deliveries = make(chan taken, e.opts.Window)
	errs = make(chan error, len(e.subs))
	var readers sync.WaitGroup
	for _, sub := range e.subs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				if !e.set.take(rctx, sub) {
					return
				}
				d, err := sub.Next(rctx)
				if err != nil {
					e.set.free(sub)
					if errors.Is(err, io.EOF) && e.awaitHidden(rctx) {
						continue
					}
					if !errors.Is(err, io.EOF) && rctx.Err() == nil {
						errs <- fmt.Errorf("read `%s`: %w", e.queue, err)
					}
					return
				}
				select {
				case deliveries <- taken{d, sub}:
				case <-rctx.Done():
					e.left.add(taken{d, sub})
					return
				}
			}
		}()
	}
	go func() { readers.Wait(); close(deliveries) }()
	return deliveries, errs
}

// batch decides each delivery (select, order) and hands windows to the
// workers.
func (e *engine) batch(ctx, rctx context.Context, deliveries <-chan taken, work chan<- window, stop func()) {
	// Several receivers of a holding source: each window holds the
	// deliveries of one, so that it is settled with one Ack of whole
	// receive batches.
	split := e.park.mode == broker.ParkHold && len(e.subs) > 1
	var keys []broker.Subscription // pending windows, oldest first
	pending := map[broker.Subscription][]item{}
	keyOf := func(s broker.Subscription) broker.Subscription {
		if split {
			return s
		}
		return nil
	}
	add := func(it item) (full bool) {
		k := keyOf(it.sub)
		if _, ok := pending[k]; !ok {
			keys = append(keys, k)
			pending[k] = make([]item, 0, e.opts.Window)
		}
		pending[k] = append(pending[k], it)
		return len(pending[k]) >= e.opts.Window
	}
	// dropAll settles what was never handed to a worker.
	dropAll := func() {
		for _, k := range keys {
			e.park.finish(ctx, pending[k])
		}
		keys, pending = nil, map[broker.Subscription][]item{}
	}
	var timer <-chan time.Time
	lastDone := make(chan struct{})
	close(lastDone)
	// send hands the pending window of k to a worker.
	send := func(k broker.Subscription) bool {
		items := pending[k]
		delete(pending, k)
		for i, x := range keys {
			if x == k {
				keys = append(keys[:i:i], keys[i+1:]...)
				break
			}
		}
		if len(items) == 0 {
			return true
		}
		w := window{items: items, prev: lastDone, done: make(chan struct{})}
		lastDone = w.done
		select {
		case work <- w:
			return true
		case <-ctx.Done():
			e.park.finish(ctx, w.items)
			close(w.done)
			dropAll()
			return false
		}
	}
	flush := func() bool {
		timer = nil
		for len(keys) > 0 {
			if !send(keys[0]) {
				return false
			}
		}
		return true
	}
	wrapped := false
	for {
		select {
		case t, ok := <-deliveries:
			if !ok {
				flush()
				return
			}
			if wrapped || e.limitReached() || rctx.Err() != nil {
				add(item{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true})
				break
			}
			it := e.take(ctx, t)
			if it.again {
				// A message this run rotated came round again: every message
				// that was in the queue at the start has been seen.
				wrapped = true
				stop()
			}
			if it.out != nil && e.limiter != nil {
				if err := e.limiter.wait(ctx, 1); err != nil {
					it.out, it.reason = nil, ""
					it.again = true
				}
			}
			full := add(it)
			if e.limitReached() {
				stop()
			}
			if full {
				if !send(keyOf(it.sub)) {
					return
				}
			} else if timer == nil {
				timer = time.After(5 * time.Millisecond)
			}
		case <-timer:
			if !flush() {
				return
			}
		case <-ctx.Done():
			// Not yet handed to a worker: nothing was published for these.
			dropAll()
			for t := range deliveries {
				e.park.finish(ctx, []item{{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true}})
			}
			return
		}
	}
}

// take runs one delivery through the select and order stages.
func (e *engine) take(ctx context.Context, t taken) item {
	it := e.decide(ctx, t.d)
	it.sub = t.sub
	e.order(&it)
	e.park.track(it)
	return it
}
