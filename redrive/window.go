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
	// sentBefore: this run already moved the message and was given it
	// again (broker.Traits.StableIDs): ack without publishing or counting.
	sentBefore bool
	failed     bool // reason is a failure, not a skip
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

// windows collects decided items into windows and hands them to the
// workers, each window chained to the one before it. With several
// receivers of a holding source (split), each window holds the deliveries
// of one, so that it is settled with one Ack of whole receive batches.
type windows struct {
	e        *engine
	ctx      context.Context
	work     chan<- window
	split    bool
	keys     []broker.Subscription // pending windows, oldest first
	pending  map[broker.Subscription][]item
	timer    <-chan time.Time // flushes a window that is not full
	lastDone chan struct{}
}

func (e *engine) newWindows(ctx context.Context, work chan<- window) *windows {
	w := &windows{e: e, ctx: ctx, work: work, split: e.park.mode == broker.ParkHold && len(e.subs) > 1,
		pending: map[broker.Subscription][]item{}, lastDone: make(chan struct{})}
	close(w.lastDone)
	return w
}

func (w *windows) keyOf(s broker.Subscription) broker.Subscription {
	if w.split {
		return s
	}
	return nil
}

// add adds it to its pending window and reports whether that is full.
func (w *windows) add(it item) (full bool) {
	k := w.keyOf(it.sub)
	if _, ok := w.pending[k]; !ok {
		w.keys = append(w.keys, k)
		w.pending[k] = make([]item, 0, w.e.opts.Window)
	}
	w.pending[k] = append(w.pending[k], it)
	return len(w.pending[k]) >= w.e.opts.Window
}

// dropAll settles what was never handed to a worker.
func (w *windows) dropAll() {
	for _, k := range w.keys {
		w.e.park.finish(w.ctx, w.pending[k])
	}
	w.keys, w.pending = nil, map[broker.Subscription][]item{}
}

// send hands the pending window of k to a worker; false when the run was
// cancelled first (everything pending is settled then).
func (w *windows) send(k broker.Subscription) bool {
	items := w.pending[k]
	delete(w.pending, k)
	for i, x := range w.keys {
		if x == k {
			w.keys = append(w.keys[:i:i], w.keys[i+1:]...)
			break
		}
	}
	if len(items) == 0 {
		return true
	}
	win := window{items: items, prev: w.lastDone, done: make(chan struct{})}
	w.lastDone = win.done
	select {
	case w.work <- win:
		return true
	case <-w.ctx.Done():
		w.e.park.finish(w.ctx, win.items)
		close(win.done)
		w.dropAll()
		return false
	}
}

// flush sends every pending window.
func (w *windows) flush() bool {
	w.timer = nil
	for len(w.keys) > 0 {
		if !w.send(w.keys[0]) {
			return false
		}
	}
	return true
}

// batch decides each delivery (select, order) and hands windows to the
// workers.
func (e *engine) batch(ctx, rctx context.Context, deliveries <-chan taken, work chan<- window, stop func()) {
	ws := e.newWindows(ctx, work)
	wrapped := false
	for {
		select {
		case t, ok := <-deliveries:
			if !ok {
				ws.flush()
				return
			}
			if wrapped || e.limitReached() || rctx.Err() != nil {
				ws.add(item{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true})
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
			full := ws.add(it)
			if e.limitReached() {
				stop()
			}
			if full {
				if !ws.send(ws.keyOf(it.sub)) {
					return
				}
			} else if ws.timer == nil {
				ws.timer = time.After(5 * time.Millisecond)
			}
		case <-ws.timer:
			if !ws.flush() {
				return
			}
		case <-ctx.Done():
			// Not yet handed to a worker: nothing was published for these.
			ws.dropAll()
			for t := range deliveries {
				e.park.finish(ctx, []item{{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true}})
			}
			return
		}
	}
}

// take runs one delivery through the select and order stages.
func (e *engine) take(ctx context.Context, t taken) item {
	it := e.decideSafely(ctx, t.d)
	it.sub = t.sub
	e.order(&it)
	e.park.track(it)
	return it
}

// decideSafely is decide, where a panic over the message's values (a
// filter, a transform, a count) stops the run with a *broker.PanicError
// and leaves the message to be given back, so that every delivery taken is
// still settled.
func (e *engine) decideSafely(ctx context.Context, d *broker.Delivery) (it item) {
	var err error
	defer func() {
		if err != nil {
			e.tally.setFatal(err)
			it = item{d: d, id: d.Message.ID}
		}
	}()
	defer broker.Recover(d.Message.ID, &err)
	return e.decide(ctx, d)
}
