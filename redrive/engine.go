package redrive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// classicHoldMax is how many messages a run holds unacknowledged on a
// RabbitMQ classic queue to put them back in place at the end.
const classicHoldMax = 1000

// settleTimeout bounds the publishing and settling of work that was already
// in flight when the run was cancelled.
const settleTimeout = 30 * time.Second

// parkMode is how a message that is not moved is left in the source.
type parkMode int

const (
	// parkRelease hands it back at once (archives; RabbitMQ at the end).
	parkRelease parkMode = iota
	// parkRotate republishes it unchanged to the back of the same queue with
	// confirms, then acknowledges the original (RabbitMQ during a run: a
	// release would deliver it again at once, and on quorum queues raise
	// its delivery count).
	parkRotate
	// parkHold keeps it hidden until the run ends, then releases it (SQS:
	// each receive raises ApproximateReceiveCount, so it is taken once).
	parkHold
)

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
		return e.sum, err
	}
	if opts.DryRun {
		return e.dryRun(ctx)
	}
	return e.run(ctx)
}

// checkDest refuses, before a message is taken, a fixed destination that
// would route nowhere (a queue that does not exist, an exchange that is
// missing, has nothing bound to it, or nothing bound with the given key):
// every message would be refused one by one, and on RabbitMQ put back in
// the source. An exchange without a key, bound to something, is checked
// per message with each message's keys. A check that fails (no management
// API) leaves it to the publishes.
func (e *engine) checkDest(ctx context.Context) error {
	d := e.opts.Dest
	if d.Kind != broker.ToQueue && d.Kind != broker.ToExchange {
		return nil
	}
	rc, ok := e.dst.(broker.RouteChecker)
	if !ok {
		return nil
	}
	routable, err := rc.Routable(ctx, d)
	if err != nil || routable {
		return nil
	}
	why := "does not exist on %s: check the name, or list queues with `dlq queues`"
	switch {
	case d.Kind == broker.ToExchange && len(d.RoutingKeys) == 0:
		why = "routes to no queue on %s (the exchange is missing, or nothing is bound to it): check the exchange, or bind a queue"
	case d.Kind == broker.ToExchange:
		why = "routes to no queue on %s (the exchange is missing, or no queue is bound with that key): check the exchange and key, or bind a queue"
	}
	return broker.Errorf(broker.ErrNotFound, "redrive", "destination `%s` "+why+"; "+e.nothingDone(), d, e.dst)
}

// nothingDone ends a refusal: a dry run changes nothing anyway.
func (e *engine) nothingDone() string {
	if e.opts.DryRun {
		return "a real run would move nothing"
	}
	return "nothing was moved"
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
	now      func() time.Time
	start    time.Time

	pub    broker.Publisher // nil in discard without archive
	srcPub broker.Publisher // for rotation
	subs   []broker.Subscription
	slots  map[broker.Subscription]chan struct{}
	park   parkMode
	// holdMax is how many parked RabbitMQ classic messages are held
	// unacknowledged and released together at the end (a classic queue
	// puts them back in their places, order kept) before rotation takes
	// over.
	holdMax  int
	fifo     bool
	ids      map[string]bool
	excluded map[string]bool // --exclude-id
	dedupeMu sync.Mutex
	dedupe   map[string]bool // --dedupe-by keys selected in this run
	limiter  *limiter
	total    int64
	selected atomic.Int64
	seq      atomic.Int64
	pos      atomic.Int64

	mu        sync.Mutex
	sum       Summary
	origins   map[string]originResult
	rotated   map[string]int // fingerprints rotated in this run
	held      []item
	open      map[string]item // unsettled SQS deliveries, for extension
	fatal     error
	leftover  []item
	blocked   bool
	unblocked chan struct{}
	rateEWMA  float64
	lastMoved int64
	lastTick  time.Time
	done      atomic.Bool
	// stopped are the FIFO groups in which a message stays in the source:
	// no later message of the group (by pos) may move in this run.
	stopped map[string]groupStop
}

// groupStop is where a FIFO group stopped, and whether a failure (rather
// than a selection) stopped it.
type groupStop struct {
	pos    int64
	failed bool
}

type originResult struct {
	dest broker.Destination
	err  error
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
	e := &engine{src: src, dst: dst, queue: queue, opts: opts, mode: mode, now: opts.Now,
		origins: map[string]originResult{}, rotated: map[string]int{}, open: map[string]item{}, slots: map[broker.Subscription]chan struct{}{},
		stopped: map[string]groupStop{}}
	var b [8]byte
	_, _ = rand.Read(b[:])
	e.runID = hex.EncodeToString(b[:])
	if opts.Journal != nil {
		e.runID = opts.Journal.RunID()
	}
	destName := opts.Dest.String()
	if mode == modeDiscard && dst == nil {
		destName = "discard"
	}
	e.sum = newSummary(queue, destName, opts.DryRun)
	if len(opts.IDs) > 0 {
		e.ids = make(map[string]bool, len(opts.IDs))
		for _, id := range opts.IDs {
			e.ids[id] = true
		}
	}
	if len(opts.ExcludeIDs) > 0 {
		e.excluded = make(map[string]bool, len(opts.ExcludeIDs))
		for _, id := range opts.ExcludeIDs {
			e.excluded[id] = true
		}
	}
	if dst != nil {
		p, ok := dst.(broker.Publisher)
		if !ok && !opts.DryRun {
			return nil, broker.Errorf(broker.ErrUnsupported, "redrive", "%s cannot be published to", dst)
		}
		e.pub = p
	}
	if opts.Dest.Kind == broker.ToOrigin {
		if _, ok := src.(broker.OriginResolver); !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "redrive", "%s does not record where messages came from: choose a destination with `--to queue:NAME`", src)
		}
		if dst != src && dst.System() != src.System() {
			return nil, errors.New("redrive: the origin of a message is on its own broker: use `--to` to name a destination on another broker")
		}
	}
	e.fifo = strings.HasSuffix(queue, ".fifo") && src.System() == broker.SQS
	if e.fifo {
		e.opts.Concurrency = 1
	}
	switch src.System() {
	case broker.RabbitMQ:
		e.park = parkRotate
		if p, ok := src.(broker.Publisher); ok {
			e.srcPub = p
		} else {
			e.park = parkRelease
		}
	case broker.SQS:
		e.park = parkHold
		if e.opts.Window%10 != 0 {
			e.opts.Window += 10 - e.opts.Window%10
		}
	default:
		e.park = parkRelease
	}
	if opts.Rate > 0 {
		e.limiter = newLimiter(opts.Rate, opts.Ramp, e.now)
	}
	return e, nil
}

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
	// pos is the delivery order within the run and group the SQS FIFO
	// message group ("" outside FIFO), for keeping group order.
	pos   int64
	group string
}

// window is a batch of deliveries. prev is closed when the window before
// it has parked its messages, done when this one has: rotations happen in
// delivery order, so a rotation keeps the order of the messages it leaves.
type window struct {
	items      []item
	prev, done chan struct{}
}

func (e *engine) run(ctx context.Context) (Summary, error) {
	cons, ok := e.src.(broker.Consumer)
	if !ok {
		return e.sum, broker.Errorf(broker.ErrUnsupported, "redrive", "messages cannot be taken from %s", e.src)
	}
	e.start = e.now()
	e.lastTick = e.start
	if qi, ok := e.src.(broker.QueueInspector); ok {
		if q, err := qi.Queue(ctx, e.queue); err == nil {
			e.total = q.Depth
			if q.Kind == broker.KindStream {
				return e.sum, broker.Errorf(broker.ErrUnsupported, "redrive `"+e.queue+"`", "a stream keeps its messages: export it with `dlq export` and redrive the archive")
			}
			if q.Kind == broker.KindSQSFIFO {
				e.fifo, e.opts.Concurrency = true, 1
			}
			if q.Kind == broker.KindClassic && e.park == parkRotate {
				e.holdMax = classicHoldMax
			}
		}
	}
	if e.opts.Limit > 0 && (e.total == 0 || e.opts.Limit < e.total) {
		e.total = e.opts.Limit
	}
	co := broker.ConsumeOptions{
		Prefetch:   e.opts.Window*(e.opts.Concurrency+1) + e.holdMax,
		Visibility: e.opts.Visibility,
		Idle:       e.opts.Idle,
	}
	if e.opts.Limit > 0 && !e.selective() && e.opts.Resume == nil {
		co.Limit = e.opts.Limit
		if int64(co.Prefetch) > e.opts.Limit {
			co.Prefetch = int(e.opts.Limit)
		}
	}
	if e.park != parkHold {
		co.Visibility = 0
	}
	// SQS hands out at most 10 messages per receive: several readers
	// (competing consumers of the same queue) keep the pipeline full. FIFO
	// queues and RabbitMQ (whose prefetch already pipelines) use one.
	nreaders := 1
	if e.src.System() == broker.SQS && !e.fifo {
		nreaders = e.opts.Concurrency
	}
	for i := 0; i < nreaders; i++ {
		sub, err := cons.Consume(ctx, e.queue, co)
		if err != nil {
			for _, s := range e.subs {
				s.Close()
			}
			if errors.Is(err, broker.ErrNotFound) {
				return e.sum, err // it names the queue and the fix
			}
			return e.sum, fmt.Errorf("consume `%s`: %w", e.queue, err)
		}
		e.subs = append(e.subs, sub)
		// Never hold more deliveries of a subscription unsettled than its
		// prefetch: a consumer that asks for more only stalls.
		if co.Prefetch > 0 {
			e.slots[sub] = make(chan struct{}, co.Prefetch)
		}
	}
	if fw, ok := e.dst.(broker.FlowWatcher); ok && e.pub != nil {
		fw.WatchFlow(e.onFlow)
	}
	if e.opts.Journal != nil {
		// A RabbitMQ subscription may hold back as many acknowledgements
		// as its prefetch; SQS deletes before Ack returns.
		hold := 0
		if e.park != parkHold {
			hold = co.Prefetch
		}
		if err := e.opts.Journal.begin(hold); err != nil {
			for _, s := range e.subs {
				s.Close()
			}
			return e.sum, err
		}
	}
	if e.opts.Resume != nil {
		e.sum.Resumed = e.opts.Resume.report()
	}

	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	deliveries := make(chan taken, e.opts.Window)
	readErr := make(chan error, len(e.subs))
	var readers sync.WaitGroup
	for _, sub := range e.subs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			slots := e.slots[sub]
			for {
				if slots != nil {
					select {
					case slots <- struct{}{}:
					case <-rctx.Done():
						return
					}
				}
				d, err := sub.Next(rctx)
				if err != nil {
					if slots != nil {
						<-slots
					}
					if errors.Is(err, io.EOF) && e.awaitHidden(rctx) {
						continue
					}
					if !errors.Is(err, io.EOF) && rctx.Err() == nil {
						readErr <- fmt.Errorf("read `%s`: %w", e.queue, err)
					}
					return
				}
				select {
				case deliveries <- taken{d, sub}:
				case <-rctx.Done():
					// Taken but not handed on: settled with the rest at the end.
					e.mu.Lock()
					e.leftover = append(e.leftover, item{d: d, sub: sub, id: d.Message.ID, again: true})
					e.mu.Unlock()
					return
				}
			}
		}()
	}
	go func() { readers.Wait(); close(deliveries) }()

	work := make(chan window)
	var wg sync.WaitGroup
	for i := 0; i < e.opts.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				e.process(ctx, w)
				if e.failed() {
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
	e.mu.Lock()
	rest := e.leftover
	e.leftover = nil
	e.mu.Unlock()
	for t := range deliveries {
		rest = append(rest, item{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true})
	}
	var rerr error
	select {
	case rerr = <-readErr:
	default:
	}
	e.finish(ctx, rest)
	stopExt()
	stopProg()
	e.done.Store(true)

	e.sum.Elapsed = e.now().Sub(e.start)
	var err2 error
	for _, sub := range e.subs {
		if cerr := sub.Close(); cerr != nil && e.fatal == nil && ctx.Err() == nil && err2 == nil {
			err2 = fmt.Errorf("close `%s`: %w", e.queue, cerr)
		}
	}
	e.report(true)
	var err error
	switch {
	case e.fatal != nil:
		err = e.fatal
	case rerr != nil:
		err = rerr
	case ctx.Err() != nil:
		e.sum.Cancelled = true
		err = ctx.Err()
	default:
		err = err2
	}
	if err == nil {
		if n := e.hiddenAtEnd(ctx); n > 0 {
			e.sum.Hidden = n
			err = fmt.Errorf("%d messages of `%s` are still hidden (in flight): a receive was cut off, or another consumer holds them; they reappear after the queue's visibility timeout, and `--resume` waits for them and moves them", n, e.queue)
		}
	}
	if e.opts.Journal != nil {
		if jerr := e.opts.Journal.end(e.sum, err); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err == nil && e.opts.Resume != nil {
		if rerr := e.opts.Resume.finish(); rerr != nil {
			e.notice(fmt.Sprintf("could not mark the resumed journals finished: %v", rerr))
		}
	}
	return e.sum, err
}

// selective reports whether some deliveries may be left in the source.
func (e *engine) selective() bool {
	return e.opts.Filter != nil || e.ids != nil || e.excluded != nil || e.opts.DedupeBy != nil || e.opts.OlderThan > 0 || e.opts.NewerThan > 0 ||
		e.opts.MaxRedrives > 0
}

func (e *engine) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fatal != nil
}

func (e *engine) setFatal(err error) {
	e.mu.Lock()
	if e.fatal == nil {
		e.fatal = err
	}
	e.mu.Unlock()
}

// batch reads deliveries, decides each, and hands windows to the workers.
func (e *engine) batch(ctx, rctx context.Context, deliveries <-chan taken, work chan<- window, stop func()) {
	// Several SQS readers: each window holds the deliveries of one reader,
	// so that it is settled with one Ack of whole batches of 10.
	split := e.park == parkHold && len(e.subs) > 1
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
			e.finish(ctx, pending[k])
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
			e.finish(ctx, w.items)
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
			it := e.decide(ctx, t.d)
			it.sub = t.sub
			e.order(&it)
			e.track(it, true)
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
				e.finish(ctx, []item{{d: t.d, sub: t.sub, id: t.d.Message.ID, again: true}})
			}
			return
		}
	}
}

func (e *engine) limitReached() bool {
	return e.opts.Limit > 0 && e.selected.Load() >= e.opts.Limit
}

// decide selects, transforms and addresses one delivery.
func (e *engine) decide(ctx context.Context, d *broker.Delivery) item {
	m := d.Message
	if m.ID == "" {
		m.ID = broker.Fingerprint(m)
	}
	it := item{d: d, id: m.ID}
	e.mu.Lock()
	if n := e.rotated[m.ID]; n > 0 {
		e.rotated[m.ID] = n - 1
		e.mu.Unlock()
		it.again = true
		return it
	}
	e.sum.Examined++
	e.mu.Unlock()
	if e.opts.Resume != nil && e.opts.Resume.takeConfirmed(m.ID) {
		it.ackNow = true
		return it
	}
	if reason := e.selectReason(ctx, m); reason != "" {
		e.countSkip(reason, m.ID, nil)
		it.reason = reason
		return it
	}
	if e.mode == modeDiscard {
		e.selected.Add(1)
		if e.pub != nil {
			it.out = &broker.Outgoing{Message: m, Dest: e.opts.Dest}
			it.dest = e.opts.Dest.String()
		} else {
			it.ackNow = true
			it.dest = "discard"
		}
		return it
	}
	out, dest, reason, err := e.prepare(ctx, m)
	if reason != "" {
		e.countFail(reason, m.ID, err)
		it.reason, it.failed = reason, true
		return it
	}
	e.selected.Add(1)
	it.out, it.dest = out, dest
	return it
}

// order numbers a decided item and, on SQS FIFO, keeps its group's order:
// a message that stays in the source stops its group, and a later message
// of a stopped group stays too (SQS itself delivers no more of a group
// while one of its messages is held, so this only concerns messages that
// came in the same receive).
func (e *engine) order(it *item) {
	it.pos = e.pos.Add(1)
	if !e.fifo && (it.out == nil || it.out.GroupID == "") {
		return
	}
	it.group = it.d.Message.SystemAttributes["MessageGroupId"]
	if it.group == "" && it.out != nil {
		it.group = it.out.GroupID
	}
	if it.group == "" || it.ackNow {
		return
	}
	if it.out == nil {
		if !it.again {
			e.stopGroup(it.group, it.pos, it.failed)
		}
		return
	}
	if st, ok := e.stoppedBefore(it.group, it.pos); ok {
		e.holdForGroup(it, st)
	}
}

// stopGroup records that the message at pos of group stays in the source.
func (e *engine) stopGroup(group string, pos int64, failed bool) {
	e.mu.Lock()
	if st, ok := e.stopped[group]; !ok || pos < st.pos {
		e.stopped[group] = groupStop{pos: pos, failed: failed}
	}
	e.mu.Unlock()
}

// stoppedBefore reports whether group stopped at a message before pos.
func (e *engine) stoppedBefore(group string, pos int64) (groupStop, bool) {
	if group == "" {
		return groupStop{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.stopped[group]
	return st, ok && st.pos < pos
}

// holdForGroup leaves a selected message in the source because an earlier
// message of its FIFO group stays there.
func (e *engine) holdForGroup(it *item, st groupStop) {
	it.out, it.dest = nil, ""
	it.reason, it.failed = ReasonGroupHeld, st.failed
	e.selected.Add(-1)
	e.mu.Lock()
	if st.failed {
		e.sum.fail(ReasonGroupHeld, 1)
	} else {
		e.sum.skip(ReasonGroupHeld)
	}
	e.mu.Unlock()
}

// selectReason returns why m is not selected, or "".
func (e *engine) selectReason(ctx context.Context, m *broker.Message) string {
	if e.ids != nil && !e.ids[m.ID] {
		return ReasonNotSelected
	}
	if e.excluded[m.ID] {
		return ReasonExcluded
	}
	if e.opts.OlderThan > 0 || e.opts.NewerThan > 0 {
		age := m.Age(e.now())
		if e.opts.OlderThan > 0 && age < e.opts.OlderThan {
			return ReasonTooNew
		}
		if e.opts.NewerThan > 0 && (age == 0 || age > e.opts.NewerThan) {
			return ReasonTooOld
		}
	}
	if e.opts.Filter != nil {
		ok, err := e.opts.Filter.Match(ctx, m)
		if err != nil {
			return ReasonFilterError
		}
		if !ok {
			return ReasonFiltered
		}
	}
	// After the filter, so that the count names the messages the
	// selection chose and the limit kept; before the dedupe key, so that
	// a message kept here does not stand for its key.
	if e.opts.MaxRedrives > 0 && previousRedrives(m) >= e.opts.MaxRedrives {
		return ReasonRedriveLimit
	}
	if e.opts.DedupeBy != nil {
		k, err := e.opts.DedupeBy(ctx, m)
		if err != nil {
			return ReasonFilterError
		}
		e.dedupeMu.Lock()
		defer e.dedupeMu.Unlock()
		if e.dedupe == nil {
			e.dedupe = map[string]bool{}
		}
		if e.dedupe[k] {
			return ReasonDuplicate
		}
		e.dedupe[k] = true
	}
	return ""
}

// prepare builds the outgoing message: transform, headers, destination.
func (e *engine) prepare(ctx context.Context, m *broker.Message) (*broker.Outgoing, string, string, error) {
	dest, reason, err := e.resolve(ctx, m)
	if reason != "" {
		return nil, "", reason, err
	}
	nm := m
	if e.opts.Transform != nil {
		t, err := e.opts.Transform(ctx, m)
		if err != nil {
			return nil, "", ReasonInvalidTransform, err
		}
		nm = t
	} else {
		nm = shallowCopy(m)
	}
	dsys := broker.Archive
	if e.dst != nil {
		dsys = e.dst.System()
	}
	if err := e.shape(nm, m, dsys); err != nil {
		if errors.Is(err, errAttributeLimit) {
			return nil, "", ReasonAttributeLimit, err
		}
		return nil, "", ReasonRejected, err
	}
	out := &broker.Outgoing{Message: nm, Dest: dest}
	if dsys == broker.SQS && strings.HasSuffix(dest.Queue, ".fifo") {
		out.GroupID = m.SystemAttributes["MessageGroupId"]
		if out.GroupID == "" {
			out.GroupID = nm.SystemAttributes["MessageGroupId"]
		}
		out.DeduplicationID = fmt.Sprintf("dlq-%s-%d", e.runID, e.seq.Add(1))
	}
	return out, dest.String(), "", nil
}

// shallowCopy copies m so that shape may add, replace and delete its
// headers and attributes: the maps are new, the body and the values in
// them are shared (shape never changes them in place).
func shallowCopy(m *broker.Message) *broker.Message {
	c := *m
	c.Headers = maps.Clone(m.Headers)
	c.Attributes = maps.Clone(m.Attributes)
	c.SystemAttributes = maps.Clone(m.SystemAttributes)
	return &c
}

// resolve returns the concrete destination of m.
func (e *engine) resolve(ctx context.Context, m *broker.Message) (broker.Destination, string, error) {
	if d := e.opts.Dest; d.Kind == broker.ToExchange && len(d.RoutingKeys) == 0 {
		d.RoutingKeys = messageKeys(m)
		return d, "", nil
	}
	if e.opts.Dest.Kind != broker.ToOrigin {
		return e.opts.Dest, "", nil
	}
	key := originKey(m)
	e.mu.Lock()
	r, ok := e.origins[key]
	e.mu.Unlock()
	if !ok {
		d, err := e.src.(broker.OriginResolver).Origin(ctx, e.queue, m)
		r = originResult{d, err}
		if err == nil || errors.Is(err, broker.ErrConflict) || errors.Is(err, broker.ErrNotFound) {
			e.mu.Lock()
			e.origins[key] = r
			e.mu.Unlock()
		}
	}
	switch {
	case r.err == nil && r.dest.Kind != "" && r.dest.Kind != broker.ToOrigin:
		return r.dest, "", nil
	case errors.Is(r.err, broker.ErrConflict):
		return broker.Destination{}, ReasonAmbiguousOrigin, r.err
	default:
		if r.err == nil {
			r.err = errors.New("no origin recorded")
		}
		return broker.Destination{}, ReasonNoOrigin, r.err
	}
}

// messageKeys are the routing keys an exchange destination given without
// one uses: those the message was routed with before it was dead-lettered
// (its most recent death record), else the key it was delivered with.
func messageKeys(m *broker.Message) []string {
	if m.Death != nil && len(m.Death.RoutingKeys) > 0 {
		return m.Death.RoutingKeys
	}
	return []string{m.RoutingKey}
}

// originKey groups messages whose origin is the same.
func originKey(m *broker.Message) string {
	if m.Death == nil {
		return "|" + m.SystemAttributes["DeadLetterQueueSourceArn"]
	}
	d := m.Death
	return d.Queue + "|" + d.QueueARN + "|" + d.Exchange + "|" + strings.Join(d.RoutingKeys, ",") + "|" + m.SystemAttributes["DeadLetterQueueSourceArn"]
}

func (e *engine) countSkip(reason, id string, err error) {
	e.mu.Lock()
	e.sum.skip(reason)
	e.example(reason, id, err)
	e.mu.Unlock()
}

func (e *engine) countFail(reason, id string, err error) {
	e.mu.Lock()
	e.sum.fail(reason, 1)
	e.example(reason, id, err)
	e.mu.Unlock()
}

// example keeps a few error lines per reason; mu held.
func (e *engine) example(reason, id string, err error) {
	if err == nil {
		return
	}
	n := 0
	prefix := reason + ": "
	for _, s := range e.sum.Errors {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	if n < 3 {
		e.sum.Errors = append(e.sum.Errors, prefix+id+": "+err.Error())
	}
}

// process publishes one window, acknowledges what was confirmed and parks
// the rest.
func (e *engine) process(ctx context.Context, w window) {
	outs := make([]broker.Outgoing, 0, len(w.items))
	pubItems := make([]item, 0, len(w.items))
	var ackOnly, park []item
	for _, it := range w.items {
		switch {
		case it.ackNow:
			ackOnly = append(ackOnly, it)
		case it.out != nil:
			// A failure in an earlier window may have stopped its group.
			if st, ok := e.stoppedBefore(it.group, it.pos); ok {
				e.holdForGroup(&it, st)
				park = append(park, it)
				continue
			}
			outs = append(outs, *it.out)
			pubItems = append(pubItems, it)
		default:
			park = append(park, it)
		}
	}
	// Work handed to a worker is finished even after a cancel.
	wctx, cancel := settleCtx(ctx)
	defer cancel()
	confirmed := make([]item, 0, len(pubItems))
	if len(outs) > 0 {
		e.waitFlow(ctx)
		if j := e.opts.Journal; j != nil {
			if err := j.record('P', ids(pubItems)); err != nil {
				e.setFatal(err)
				park = append(park, pubItems...)
				pubItems = nil
				outs = nil
			}
		}
	}
	if len(outs) > 0 {
		errs, err := e.pub.Publish(wctx, outs)
		if err != nil {
			e.setFatal(fmt.Errorf("publish to %s: %w", e.sum.Destination, err))
			e.mu.Lock()
			e.sum.fail(ReasonPublishError, int64(len(pubItems)))
			e.mu.Unlock()
			for _, it := range pubItems {
				it.reason, it.failed = ReasonPublishError, true
				if it.group != "" {
					e.stopGroup(it.group, it.pos, true)
				}
				park = append(park, it)
			}
		} else {
			for i, it := range pubItems {
				var perr error
				if i < len(errs) {
					perr = errs[i]
				}
				if perr == nil {
					if st, ok := e.stoppedBefore(it.group, it.pos); ok && st.failed {
						// The destination took it although an earlier
						// message of its group failed: it is there now
						// (acknowledging it avoids a duplicate), but the
						// group's order is not.
						e.notice(fmt.Sprintf("message %s of FIFO group %q reached the destination after an earlier message of its group failed: that group's order is broken there", it.id, it.group))
					}
					if outs[i].Resent {
						e.mu.Lock()
						e.sum.Resent++
						if len(e.sum.ResentIDs) < e.opts.MaxIDs {
							e.sum.ResentIDs = append(e.sum.ResentIDs, it.id)
						}
						e.mu.Unlock()
					}
					confirmed = append(confirmed, it)
					continue
				}
				reason := ReasonRejected
				if errors.Is(perr, broker.ErrUnroutable) {
					reason = ReasonUnroutable
				}
				if _, ok := e.stoppedBefore(it.group, it.pos); ok {
					// Not sent because an earlier message of its group failed.
					reason = ReasonGroupHeld
				}
				e.countFail(reason, it.id, perr)
				it.reason, it.failed = reason, true
				if it.group != "" {
					e.stopGroup(it.group, it.pos, true)
				}
				park = append(park, it)
			}
		}
	}
	if len(confirmed) > 0 && e.opts.Journal != nil {
		if err := e.opts.Journal.record('C', ids(confirmed)); err != nil {
			e.setFatal(err)
		}
	}
	toAck := append(confirmed, ackOnly...)
	if len(toAck) > 0 {
		if err := e.settle(wctx, toAck, true); err != nil {
			// Published and confirmed, but still in the source: a re-run with
			// --resume acknowledges them without publishing them again.
			e.setFatal(fmt.Errorf("acknowledge in `%s`: %w", e.queue, err))
			e.mu.Lock()
			e.sum.fail(ReasonNotSettled, int64(len(toAck)))
			e.mu.Unlock()
		} else {
			if e.opts.Journal != nil {
				if err := e.opts.Journal.record('A', ids(toAck)); err != nil {
					e.setFatal(err)
				}
			}
			e.mu.Lock()
			for _, it := range toAck {
				e.sum.Moved++
				if it.ackNow && it.dest == "" {
					if e.sum.Resumed != nil {
						e.sum.Resumed.AckedOnSight++
					}
					e.sum.dest("(moved by the interrupted run)", 1)
				} else {
					if it.out != nil {
						e.sum.Archived += boolInt(e.mode == modeDiscard)
					}
					e.sum.dest(it.dest, 1)
				}
				if len(e.sum.IDs) < e.opts.MaxIDs {
					e.sum.IDs = append(e.sum.IDs, it.id)
				} else {
					e.sum.IDsTruncated = true
				}
				delete(e.open, it.d.Receipt.Handle)
			}
			e.mu.Unlock()
		}
	}
	if w.prev != nil {
		select {
		case <-w.prev:
		case <-wctx.Done():
		}
	}
	e.parkItems(wctx, park)
	if w.done != nil {
		close(w.done)
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// parkItems leaves messages that were not moved in the source.
func (e *engine) parkItems(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	switch e.park {
	case parkHold:
		e.mu.Lock()
		for _, it := range items {
			e.held = append(e.held, it)
			delete(e.open, it.d.Receipt.Handle)
		}
		e.mu.Unlock()
	case parkRotate:
		e.mu.Lock()
		hold := len(e.held)+len(items) <= e.holdMax
		if hold {
			e.held = append(e.held, items...)
		}
		e.mu.Unlock()
		if !hold {
			e.rotate(ctx, items)
		}
	default:
		e.release(ctx, items)
	}
}

// rotate republishes messages unchanged to the back of the source queue and
// acknowledges the originals once the copies are confirmed. What cannot be
// rotated is released.
func (e *engine) rotate(ctx context.Context, items []item) {
	if e.failed() {
		e.release(ctx, items)
		return
	}
	outs := make([]broker.Outgoing, len(items))
	e.mu.Lock()
	for i, it := range items {
		m := it.d.Message.Clone()
		delete(m.Headers, "x-delivery-count") // the broker's own counter
		outs[i] = broker.Outgoing{Message: m, Dest: broker.Destination{Kind: broker.ToQueue, Queue: e.queue}, Requeue: true}
		e.rotated[it.id]++
	}
	e.mu.Unlock()
	errs, err := e.srcPub.Publish(ctx, outs)
	var ack, back []item
	for i, it := range items {
		if err == nil && (i >= len(errs) || errs[i] == nil) {
			ack = append(ack, it)
		} else {
			back = append(back, it)
		}
	}
	e.mu.Lock()
	for _, it := range back {
		if e.rotated[it.id] > 0 {
			e.rotated[it.id]--
		}
	}
	e.mu.Unlock()
	if len(ack) > 0 {
		if aerr := e.settle(ctx, ack, true); aerr != nil {
			// The copy is in the queue and so is the original: a duplicate,
			// never a loss.
			e.setFatal(fmt.Errorf("acknowledge rotated messages in `%s`: %w", e.queue, aerr))
		} else {
			e.mu.Lock()
			e.sum.Rotated += int64(len(ack))
			e.mu.Unlock()
		}
	}
	if err != nil {
		e.setFatal(fmt.Errorf("rotate messages in `%s`: %w", e.queue, err))
	}
	e.release(ctx, back)
}

func (e *engine) release(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	err := e.settle(ctx, items, false)
	if err != nil {
		e.giveBackFailed(len(items), err)
		return
	}
	e.mu.Lock()
	e.sum.Returned += int64(len(items))
	for _, it := range items {
		delete(e.open, it.d.Receipt.Handle)
	}
	e.mu.Unlock()
}

// giveBackFailed counts and reports n messages that could not be handed
// back to the source: they are still the source's, but taken until the
// run's hold on them ends.
func (e *engine) giveBackFailed(n int, err error) {
	e.mu.Lock()
	e.sum.NotReturned += int64(n)
	e.mu.Unlock()
	e.notice(fmt.Sprintf("could not give %d messages back to `%s`: %v; they are not lost: the source takes them back when this run's hold ends (a visibility timeout, a closed channel)", n, e.queue, err))
}

// finish settles deliveries that will not be published: at the end of a run
// and after a cancel. Quorum and classic RabbitMQ queues get a rotation while
// the connection works (a release would raise a quorum delivery count);
// held SQS messages are released together.
func (e *engine) finish(ctx context.Context, items []item) {
	sctx, cancel := settleCtx(ctx)
	defer cancel()
	if len(items) > 0 {
		if e.park == parkRotate && e.holdMax == 0 && !e.failed() && ctx.Err() == nil {
			e.rotate(sctx, items)
		} else {
			e.release(sctx, items)
		}
	}
	e.mu.Lock()
	held := e.held
	e.held = nil
	e.mu.Unlock()
	for len(held) > 0 {
		n := min(len(held), 100)
		if err := e.settle(sctx, held[:n], false); err != nil {
			e.giveBackFailed(n, err)
		} else {
			e.mu.Lock()
			e.sum.Returned += int64(n)
			e.mu.Unlock()
		}
		held = held[n:]
	}
}

func ids(items []item) []string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.id
	}
	return s
}

func receipts(items []item) []broker.Receipt {
	r := make([]broker.Receipt, len(items))
	for i, it := range items {
		r[i] = it.d.Receipt
	}
	return r
}

func settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// track remembers an unsettled SQS delivery for visibility extension.
func (e *engine) track(it item, on bool) {
	if e.park != parkHold || it.d.Receipt.Handle == "" {
		return
	}
	e.mu.Lock()
	if on {
		e.open[it.d.Receipt.Handle] = it
	} else {
		delete(e.open, it.d.Receipt.Handle)
	}
	e.mu.Unlock()
}

// taken is a delivery and the subscription it came from.
type taken struct {
	d   *broker.Delivery
	sub broker.Subscription
}

// settle acknowledges (ack) or releases items, each on its own
// subscription, and frees their prefetch slots.
func (e *engine) settle(ctx context.Context, items []item, ack bool) error {
	all := items
	defer func() {
		for _, it := range all {
			if ch := e.slots[it.sub]; ch != nil {
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

// startExtender keeps unsettled SQS messages hidden while the run lasts.
func (e *engine) startExtender(ctx context.Context) func() {
	if e.park != parkHold {
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
				e.mu.Lock()
				bySub := map[broker.Subscription][]broker.Receipt{}
				for _, it := range e.open {
					bySub[it.sub] = append(bySub[it.sub], it.d.Receipt)
				}
				for _, it := range e.held {
					bySub[it.sub] = append(bySub[it.sub], it.d.Receipt)
				}
				e.mu.Unlock()
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
							e.notice(fmt.Sprintf("could not extend the visibility of %d messages: %v", n, err))
						}
						rs = rs[n:]
					}
				}
			}
		}
	}()
	return func() { close(stop); <-done }
}

// onFlow is the destination's flow-control callback.
func (e *engine) onFlow(blocked bool, reason string) {
	if e.done.Load() {
		return
	}
	e.mu.Lock()
	was := e.blocked
	e.blocked = blocked
	var wake chan struct{}
	if blocked && !was {
		e.unblocked = make(chan struct{})
	}
	if !blocked && was {
		wake, e.unblocked = e.unblocked, nil
	}
	e.mu.Unlock()
	switch {
	case blocked && !was:
		e.notice(fmt.Sprintf("paused: the destination broker is blocking publishers (%s); waiting for it to resume", reason))
	case !blocked && was:
		e.notice("resumed: the destination broker accepts publishes again")
	}
	if wake != nil {
		close(wake)
	}
}

// waitFlow waits while the destination blocks publishers.
func (e *engine) waitFlow(ctx context.Context) {
	e.mu.Lock()
	ch := e.unblocked
	e.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (e *engine) notice(s string) {
	e.mu.Lock()
	e.sum.Notices = append(e.sum.Notices, s)
	e.mu.Unlock()
	if e.opts.Notice != nil {
		e.opts.Notice(s)
	}
}

func (e *engine) startProgress() func() {
	if e.opts.Progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				e.report(false)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// report sends a progress snapshot.
func (e *engine) report(final bool) {
	if e.opts.Progress == nil {
		return
	}
	now := e.now()
	e.mu.Lock()
	p := Progress{Examined: e.sum.Examined, Moved: e.sum.Moved, Skipped: e.sum.TotalSkipped(),
		Failed: e.sum.TotalFailed(), Total: e.total, Elapsed: now.Sub(e.start), Blocked: e.blocked, Done: final}
	if dt := now.Sub(e.lastTick).Seconds(); dt > 0 {
		inst := float64(p.Moved-e.lastMoved) / dt
		if e.rateEWMA == 0 {
			e.rateEWMA = inst
		} else {
			e.rateEWMA = 0.7*e.rateEWMA + 0.3*inst
		}
		e.lastMoved, e.lastTick = p.Moved, now
	}
	p.Rate = e.rateEWMA
	if final && p.Elapsed > 0 {
		p.Rate = float64(p.Moved) / p.Elapsed.Seconds()
	}
	e.mu.Unlock()
	e.opts.Progress(p)
}
