package redrive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The engine is a pipeline of stages, each in its own file with its own
// state: readers and windows (window.go), select (select.go), order
// (order.go), publish (publish.go), settle (settle.go), park (park.go) and
// tally (tally.go), with flow control (flow.go), progress (progress.go) and
// the holds of a holding source (hidden.go). How the source is read and
// how messages are parked follow the traits its adapter declares
// (broker.Traits).

// Run moves the messages of queue on src to opts.Dest on dst (dst may be src)
// and returns what it did. A message is acknowledged in the source only
// after dst confirmed it. On cancellation the work in flight is finished and
// settled, and the error is the context's.
func Run(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options) (Summary, error) {
	e, err := newEngine(src, queue, dst, opts, modeRedrive)
	if err != nil {
		return newSummary(queue, opts.Dest.String(), opts.DryRun), err
	}
	// A dry run gives the real run's verdict on a destination that routes
	// nowhere: the same refusal, the same exit code.
	if err := e.checkDest(ctx); err != nil {
		return e.tally.sum, err
	}
	if opts.DryRun {
		return e.dryRun(ctx)
	}
	return e.run(ctx)
}

type runMode int

const (
	modeRedrive runMode = iota
	modeDiscard         // archive (when any) as is, then ack
)

type engine struct {
	src, dst broker.Broker
	queue    string
	opts     Options
	mode     runMode
	runID    string
	destName string
	now      func() time.Time
	start    time.Time
	total    int64
	// totalSelected says total counts the selected messages, not the
	// queue's depth.
	totalSelected bool
	// traits are the source queue's (refined once it is inspected),
	// dstTraits the destination's.
	traits, dstTraits broker.Traits
	pub               broker.Publisher // nil in discard without archive
	subs              []broker.Subscription
	limiter           *limiter
	// sent are the IDs of messages this run moved, kept where the source's
	// IDs are stable (broker.Traits.StableIDs).
	sent     recentIDs
	selected atomic.Int64
	seq      atomic.Int64 // publishes: redrive record and deduplication IDs

	sel     *selector
	origins origins
	groups  groups
	set     settler
	park    parker
	tally   tally
	flow    flow
	rate    rate
	left    leftovers
}

func newEngine(src broker.Broker, queue string, dst broker.Broker, opts Options, mode runMode) (*engine, error) {
	if src == nil {
		return nil, errors.New("redrive: no source broker")
	}
	if opts.Dest.Kind == "" && mode == modeRedrive {
		opts.Dest.Kind = broker.ToOrigin
	}
	if dst == nil && mode == modeRedrive {
		dst = src
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Window <= 0 {
		opts.Window = 250
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.DiffLimit == 0 {
		opts.DiffLimit = 3
	}
	if opts.MaxIDs == 0 {
		opts.MaxIDs = 10000
	}
	if opts.Visibility <= 0 {
		opts.Visibility = 2 * time.Minute
	}
	if opts.SourceName == "" {
		opts.SourceName = queue
	}
	if opts.Limit < 0 {
		return nil, errors.New("redrive: negative limit")
	}
	e := &engine{src: src, dst: dst, queue: queue, opts: opts, mode: mode, now: opts.Now, sel: newSelector(opts)}
	var b [8]byte
	_, _ = rand.Read(b[:])
	e.runID = hex.EncodeToString(b[:])
	if opts.Journal != nil {
		e.runID = opts.Journal.RunID()
	}
	if e.sel.skipRuns != nil {
		// A message this run moved that comes back while it still reads
		// is not moved round again.
		e.sel.skipRuns[e.runID] = true
	}
	e.destName = opts.Dest.String()
	if mode == modeDiscard && dst == nil {
		e.destName = "discard"
	}
	e.tally = tally{maxIDs: opts.MaxIDs, onMoved: opts.Moved, notify: opts.Notice, words: opts.Words, sum: newSummary(queue, e.destName, opts.DryRun)}
	if !opts.DryRun {
		e.tally.sum.RunID = e.runID
	}
	e.flow.notice = e.tally.notice
	e.origins.m = map[string]originResult{}
	e.groups.stopped = map[string]groupStop{}
	if dst != nil {
		p, ok := dst.(broker.Publisher)
		if !ok && !opts.DryRun {
			return nil, broker.Errorf(broker.ErrUnsupported, "redrive", "%s cannot be published to", dst)
		}
		e.pub = p
		e.dstTraits = broker.TraitsOf(dst, broker.Queue{})
	}
	if opts.Dest.Kind == broker.ToOrigin {
		r, ok := src.(broker.OriginResolver)
		switch {
		case ok && dst != src && dst.System() != src.System():
			return nil, broker.Hintf("redrive: the origin of a message is on its own broker: use %s to name a destination on another broker", broker.OptTo)
		case !ok && dst != src:
			// A source that records no origin (an archive) still holds
			// messages that carry theirs (a death record, their DLQ's
			// source): the destination broker reads them as it reads its
			// own dead letters.
			r, ok = dst.(broker.OriginResolver)
		}
		if !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "redrive", "%s does not record where messages came from: choose a destination with %s, or a broker to send them home on with %s", src, broker.OptTo.With("queue:NAME"), broker.OptTo.With("BROKER#origin"))
		}
		e.origins.resolver = r
	}
	e.setTraits(broker.Queue{Name: queue})
	if opts.Rate > 0 {
		e.limiter = newLimiter(opts.Rate, opts.Ramp, e.now)
	}
	return e, nil
}

// setTraits applies the source queue's traits: how to park, ordered groups
// (one worker), the receive batch the window rounds up to.
func (e *engine) setTraits(q broker.Queue) {
	t := broker.TraitsOf(e.src, q)
	e.traits = t
	e.park = parker{mode: t.Park, holdMax: t.HoldInPlace, queue: e.queue, set: &e.set, tally: &e.tally,
		rotated: map[string]int{}, open: map[string]item{}}
	if t.Park == broker.ParkRotate {
		if p, ok := e.src.(broker.Publisher); ok {
			e.park.pub = p
		} else {
			e.park.mode, e.park.holdMax = broker.ParkRelease, 0
		}
	}
	e.groups.ordered = t.Ordered
	if t.Ordered {
		e.opts.Concurrency = 1
	}
	if n := t.ReceiveBatch; n > 1 && e.opts.Window%n != 0 {
		e.opts.Window += n - e.opts.Window%n
	}
}

func (e *engine) run(ctx context.Context) (Summary, error) {
	cons, ok := e.src.(broker.Consumer)
	if !ok {
		return e.tally.sum, broker.Errorf(broker.ErrUnsupported, "redrive", "messages cannot be taken from %s", e.src)
	}
	e.start = e.now()
	e.rate.lastTick = e.start
	if err := e.open(ctx, cons); err != nil {
		return e.tally.sum, err
	}
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	deliveries, readErr := e.read(rctx)
	work := make(chan window)
	var wg sync.WaitGroup
	for i := 0; i < e.opts.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				e.process(ctx, w)
				if e.tally.failed() {
					stopReading()
				}
			}
		}()
	}
	stopExt := e.startExtender(ctx)
	stopProg := e.startProgress()

	e.batch(ctx, rctx, deliveries, work, stopReading)
	close(work)
	wg.Wait()
	stopReading()
	// Drain what the reader still had (after a stop): give it back.
	rest := e.left.take()
	for t := range deliveries {
		rest = append(rest, item{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true})
	}
	var rerr error
	select {
	case rerr = <-readErr:
	default:
	}
	e.park.finish(ctx, rest)
	stopExt()
	stopProg()
	e.flow.done.Store(true)
	return e.end(ctx, rerr)
}

// open inspects the source queue, applies its traits and subscribes: one
// subscription, or one a worker where the traits ask for parallel
// receivers. Then it starts the flow watch and the journal.
func (e *engine) open(ctx context.Context, cons broker.Consumer) error {
	q := broker.Queue{Name: e.queue}
	if qi, ok := e.src.(broker.QueueInspector); ok {
		if iq, err := qi.Queue(ctx, e.queue); err == nil {
			if broker.TraitsOf(e.src, iq).Retains {
				return broker.Errorf(broker.ErrUnsupported, "redrive `"+e.queue+"`", "a stream keeps its messages: export it with %s and redrive the archive", broker.Cmd("export"))
			}
			q, e.total = iq, iq.Depth
			q.Name = e.queue
		}
	}
	e.setTraits(q)
	switch {
	case e.opts.Selected > 0:
		e.total, e.totalSelected = e.opts.Selected, true
	case len(e.opts.IDs) > 0:
		// At most the messages listed (or the limit) can move.
		e.total, e.totalSelected = int64(len(e.opts.IDs)), true
		if e.opts.Limit > 0 && e.opts.Limit < e.total {
			e.total = e.opts.Limit
		}
	case e.opts.Limit > 0 && !e.sel.selective() && (e.total == 0 || e.opts.Limit < e.total):
		e.total, e.totalSelected = e.opts.Limit, true
	}
	co := broker.ConsumeOptions{
		Prefetch:   e.opts.Window*(e.opts.Concurrency+1) + e.park.holdMax,
		Visibility: e.opts.Visibility,
		Idle:       e.opts.Idle,
	}
	if e.opts.Limit > 0 && !e.sel.selective() && e.opts.Resume == nil && !e.wholeGroups() {
		co.Limit = e.opts.Limit
		if int64(co.Prefetch) > e.opts.Limit {
			co.Prefetch = int(e.opts.Limit)
		}
	}
	if e.park.mode != broker.ParkHold {
		co.Visibility = 0
	}
	nreaders := 1
	if e.traits.ParallelReceivers {
		nreaders = e.opts.Concurrency
		if co.Limit > 0 {
			// Each receive takes up to ten: more readers than a small
			// limit needs only hide messages the run will not move.
			nreaders = int(min(int64(nreaders), (co.Limit+9)/10))
		}
	}
	e.set.slots = map[broker.Subscription]chan struct{}{}
	for i := 0; i < nreaders; i++ {
		sub, err := cons.Consume(ctx, e.queue, co)
		if err != nil {
			e.closeSubs()
			if errors.Is(err, broker.ErrNotFound) {
				return err // it names the queue and the fix
			}
			return fmt.Errorf("consume `%s`: %w", e.queue, err)
		}
		e.subs = append(e.subs, sub)
		// Never hold more deliveries of a subscription unsettled than its
		// prefetch: a consumer that asks for more only stalls.
		if co.Prefetch > 0 {
			e.set.slots[sub] = make(chan struct{}, co.Prefetch)
		}
	}
	if fw, ok := e.dst.(broker.FlowWatcher); ok && e.pub != nil {
		fw.WatchFlow(e.flow.on)
	}
	if e.opts.Journal != nil {
		// A subscription may hold back as many acknowledgements as its
		// prefetch; a holding source deletes before Ack returns.
		hold := 0
		if e.park.mode != broker.ParkHold {
			hold = co.Prefetch
		}
		if err := e.opts.Journal.begin(hold); err != nil {
			e.closeSubs()
			return err
		}
	}
	if e.opts.Resume != nil {
		e.tally.sum.Resumed = e.opts.Resume.report()
	}
	return nil
}

func (e *engine) closeSubs() {
	for _, s := range e.subs {
		s.Close()
	}
}

// end closes the subscriptions, sends the final progress, and decides the
// run's error: the first fatal one, a read error, the cancellation, a
// failed close, or messages still hidden in the source.
func (e *engine) end(ctx context.Context, rerr error) (Summary, error) {
	s := &e.tally.sum
	s.Elapsed = e.now().Sub(e.start)
	var err2 error
	for _, sub := range e.subs {
		if cerr := sub.Close(); cerr != nil && e.tally.fatal == nil && ctx.Err() == nil && err2 == nil {
			err2 = fmt.Errorf("close `%s`: %w", e.queue, cerr)
		}
	}
	e.report(true)
	var err error
	switch {
	case e.tally.fatal != nil:
		err = e.tally.fatal
	case rerr != nil:
		err = rerr
	case ctx.Err() != nil:
		s.Cancelled = true
		err = ctx.Err()
	default:
		err = err2
	}
	if err == nil {
		err = e.sel.filterError()
	}
	if s.DeliveredAgain > 0 {
		e.tally.notice(fmt.Sprintf("`%s` delivered %d already moved messages again (SQS may deliver a deleted message again, and a restarted server may forget a delete): each was deleted again, not sent twice", e.queue, s.DeliveredAgain))
	}
	if err == nil {
		if n := e.hiddenAtEnd(ctx); n > 0 {
			s.Hidden = n
			if e.park.mode == broker.ParkHold {
				err = broker.Hintf("%d messages of `%s` are still hidden (in flight): a receive was cut off, or another consumer holds them; they reappear after the queue's visibility timeout, and %v", n, e.queue, broker.OptResume.Or("%s waits for them and moves them", "a run started then takes them"))
			} else {
				err = broker.Hintf("%d messages of `%s` are still held unacknowledged by another connection, most likely the interrupted run's: the broker returns them once it notices that connection is gone (up to about a minute when a cluster node died with it); then %v", n, e.queue, broker.OptResume.Or("%s moves them", "a run started then takes them"))
			}
		}
	}
	if e.opts.Journal != nil {
		if jerr := e.opts.Journal.end(*s, err); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err == nil && e.opts.Resume != nil {
		if rerr := e.opts.Resume.finish(); rerr != nil {
			e.tally.notice(fmt.Sprintf("could not mark the resumed journals finished: %v", rerr))
		}
	}
	return *s, err
}

// process runs one window through the publish, settle and park stages:
// publishes it, acknowledges what was confirmed and, once the window before
// it has parked its messages, parks the rest. Work handed to a worker is
// finished even after a cancel.
func (e *engine) process(ctx context.Context, w window) {
	pub, ackOnly, park := e.sort(w.items)
	wctx, cancel := settleCtx(ctx)
	defer cancel()
	confirmed, back := e.publish(ctx, wctx, pub)
	park = append(park, back...)
	e.ack(wctx, append(confirmed, ackOnly...))
	if w.prev != nil {
		select {
		case <-w.prev:
		case <-wctx.Done():
		}
	}
	e.park.park(wctx, park)
	if w.done != nil {
		close(w.done)
	}
}
