package redrive

import (
	"context"
	"fmt"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// parker is the park stage: it leaves the messages a run does not move in
// the source, as the source's traits say (broker.Park): rotated to the back
// of the queue, held until the run ends (after up to holdMax held in place,
// for rotation), or released at once.
type parker struct {
	mode    broker.Park
	holdMax int
	queue   string
	pub     broker.Publisher // the source, for rotation
	set     *settler
	tally   *tally

	mu sync.Mutex
	// rotated counts the fingerprints rotated in this run: a message seen
	// again is one of them come round.
	rotated map[string]int
	held    []item
	// open are the unsettled deliveries of a holding source, by receipt
	// handle, kept hidden with held ones while the run lasts.
	open map[string]item
}

// again reports whether id is a message this run rotated, come round again.
func (p *parker) again(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.rotated[id]
	if n > 0 {
		p.rotated[id] = n - 1
	}
	return n > 0
}

// track remembers an unsettled delivery of a holding source, to keep it
// hidden.
func (p *parker) track(it item) {
	if p.mode != broker.ParkHold || it.d.Receipt.Handle == "" {
		return
	}
	p.mu.Lock()
	p.open[it.d.Receipt.Handle] = it
	p.mu.Unlock()
}

// untrack forgets settled deliveries.
func (p *parker) untrack(items []item) {
	p.mu.Lock()
	for _, it := range items {
		delete(p.open, it.d.Receipt.Handle)
	}
	p.mu.Unlock()
}

// park leaves items in the source.
func (p *parker) park(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	switch p.mode {
	case broker.ParkHold:
		p.mu.Lock()
		for _, it := range items {
			p.held = append(p.held, it)
			delete(p.open, it.d.Receipt.Handle)
		}
		p.mu.Unlock()
	case broker.ParkRotate:
		p.mu.Lock()
		hold := len(p.held)+len(items) <= p.holdMax
		if hold {
			p.held = append(p.held, items...)
		}
		p.mu.Unlock()
		if !hold {
			p.rotate(ctx, items)
		}
	default:
		p.release(ctx, items)
	}
}

// rotate republishes messages unchanged to the back of the source queue and
// acknowledges the originals once the copies are confirmed. What cannot be
// rotated is released.
func (p *parker) rotate(ctx context.Context, items []item) {
	if p.tally.failed() {
		p.release(ctx, items)
		return
	}
	outs := make([]broker.Outgoing, len(items))
	p.mu.Lock()
	for i, it := range items {
		m := it.d.Message.Clone()
		delete(m.Headers, "x-delivery-count") // the broker's own counter
		outs[i] = broker.Outgoing{Message: m, Dest: broker.Destination{Kind: broker.ToQueue, Queue: p.queue}, Requeue: true}
		p.rotated[it.id]++
	}
	p.mu.Unlock()
	errs, err := p.pub.Publish(ctx, outs)
	var ack, back []item
	for i, it := range items {
		if err == nil && (i >= len(errs) || errs[i] == nil) {
			ack = append(ack, it)
		} else {
			back = append(back, it)
		}
	}
	p.mu.Lock()
	for _, it := range back {
		if p.rotated[it.id] > 0 {
			p.rotated[it.id]--
		}
	}
	p.mu.Unlock()
	if len(ack) > 0 {
		if aerr := p.set.settle(ctx, ack, true); aerr != nil {
			// The copy is in the queue and so is the original: a duplicate,
			// never a loss.
			p.tally.setFatal(fmt.Errorf("acknowledge rotated messages in `%s`: %w", p.queue, aerr))
		} else {
			p.tally.rotated(len(ack))
		}
	}
	if err != nil {
		p.tally.setFatal(fmt.Errorf("rotate messages in `%s`: %w", p.queue, err))
	}
	p.release(ctx, back)
}

// release hands items back to the source at once.
func (p *parker) release(ctx context.Context, items []item) {
	if len(items) == 0 {
		return
	}
	if err := p.set.settle(ctx, items, false); err != nil {
		p.giveBackFailed(len(items), err)
		return
	}
	p.tally.returned(len(items))
	p.untrack(items)
}

// giveBackFailed counts and reports n messages that could not be handed
// back to the source: they are still the source's, but taken until the
// run's hold on them ends.
func (p *parker) giveBackFailed(n int, err error) {
	p.tally.notReturned(n)
	p.tally.notice(fmt.Sprintf("could not give %d messages back to `%s`: %v; they are not lost: the source takes them back when this run's hold ends (a visibility timeout, a closed channel)", n, p.queue, err))
}

// finish settles deliveries that will not be published: at the end of a run
// and after a cancel. A rotating source without messages held in place gets
// a rotation while the connection works (a release would raise a quorum
// delivery count); held messages are released together.
func (p *parker) finish(ctx context.Context, items []item) {
	sctx, cancel := settleCtx(ctx)
	defer cancel()
	if len(items) > 0 {
		if p.mode == broker.ParkRotate && p.holdMax == 0 && !p.tally.failed() && ctx.Err() == nil {
			p.rotate(sctx, items)
		} else {
			p.release(sctx, items)
		}
	}
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for len(held) > 0 {
		n := min(len(held), 100)
		if err := p.set.settle(sctx, held[:n], false); err != nil {
			p.giveBackFailed(n, err)
		} else {
			p.tally.returned(n)
		}
		held = held[n:]
	}
}

// hidden returns the receipts of the deliveries a holding source keeps
// hidden for this run, by subscription.
func (p *parker) hidden() map[broker.Subscription][]broker.Receipt {
	p.mu.Lock()
	defer p.mu.Unlock()
	bySub := map[broker.Subscription][]broker.Receipt{}
	for _, it := range p.open {
		bySub[it.sub] = append(bySub[it.sub], it.d.Receipt)
	}
	for _, it := range p.held {
		bySub[it.sub] = append(bySub[it.sub], it.d.Receipt)
	}
	return bySub
}

// holding is how many deliveries this run holds taken.
func (p *parker) holding() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.open) + len(p.held))
}
