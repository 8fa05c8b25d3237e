package sqs

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Peeker = (*Broker)(nil)

// Peek tuning.
const (
	// peekVisibility hides a received message only until Peek returns it;
	// should dlq die in between, the message reappears on its own after this.
	peekVisibility = 20 * time.Second
	// peekEmptyPolls is how many consecutive long polls must come back
	// empty before the queue counts as exhausted.
	peekEmptyPolls = 2
	// peekStaleBatches is how many consecutive batches of only already-seen
	// messages end a standard-queue walk.
	peekStaleBatches = 3
	// peekFIFOHold is the default bound on FIFO messages held in flight.
	peekFIFOHold = 10000
	// peekFIFOHoldMax stays below SQS's 120,000 in-flight messages per queue.
	peekFIFOHoldMax = 100000
)

// Peek reads messages without removing them (PeekReceive; PeekAuto picks it).
//
// Safety, per queue kind:
//
//   - Every receive raises a message's ApproximateReceiveCount by one, and
//     SQS moves a message to the dead-letter queue of the queue's
//     RedrivePolicy when a receive would take it past maxReceiveCount. A
//     message's count is unknown until it has been received, so Peek
//     refuses (broker.ErrUnsafe) whenever the queue being peeked has a
//     RedrivePolicy, whatever its maxReceiveCount: any message might be one
//     receive from its limit. Peeking the dead-letter queue itself (which
//     usually has no policy) is safe. opts.Force accepts the risk; the report
//     then counts the messages the peek brought to their limit.
//   - Standard queues: each batch of up to 10 is made visible again
//     (ChangeMessageVisibilityBatch 0) as soon as it arrives, before it is
//     visited, so consumers never wait on a peek. A message received twice
//     in one peek is visited once (and counted in the report). The walk ends
//     at opts.Limit; once as many distinct messages were received as the
//     queue's ApproximateNumberOfMessages when the peek began (so a full walk
//     receives each message once, not again to find out that it is done);
//     after consecutive empty long polls; or after consecutive batches of
//     only already-seen messages. Standard queues have no order to keep; a
//     returned message may be delivered later than before. A server that
//     hands the returned messages out again first (a batch of only
//     already-seen messages while fewer were seen than the queue held)
//     would hide the rest from the walk: from there on, the walk holds what
//     it reads, as on a FIFO queue.
//   - FIFO queues: SQS locks a message group while any of its messages is in
//     flight, and a message made visible again goes back to the head of its
//     group, so returning each batch at once would show the same heads
//     forever. A FIFO peek therefore holds what it read (at most
//     opts.MaxUnacked, default 10,000) until the walk ends — normally well
//     under a second — and then returns everything, newest first, so every
//     group keeps its order. Only the messages at the head of each group can
//     be seen without removing anything; the report says how many were out
//     of reach.
//
// The report's Changed line states how many receive counts went up.
func (b *Broker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	rep := broker.PeekReport{Mode: broker.PeekReceive}
	if opts.Mode != broker.PeekAuto && opts.Mode != broker.PeekReceive {
		return rep, broker.Errorf(broker.ErrUnsupported, "peek `"+queueName(queue)+"`",
			"sqs queues can only be peeked by receiving (mode %q), not %q: drop %s", broker.PeekReceive, opts.Mode, broker.OptMode)
	}
	url, err := b.queueURL(ctx, queue)
	if err != nil {
		return rep, err
	}
	name := nameFromURL(url)
	attrs, err := b.attributes(ctx, url)
	if err != nil {
		return rep, err
	}
	target, maxReceives, hasPolicy := parseRedrivePolicy(attrs[attrRedrivePolicy])
	if hasPolicy && !opts.Force {
		limit := "maxReceiveCount " + strconv.FormatInt(maxReceives, 10)
		return rep, broker.Errorf(broker.ErrUnsafe, "peek `"+name+"`",
			"queue `%s` has a redrive policy (%s, dead letters to `%s`): every message a peek shows is received, which raises its receive count, and a message one receive short of the limit would then be dead-lettered on its next delivery; peek the dead-letter queue `%s` instead, or pass %s to accept that risk",
			name, limit, nameFromARN(target), nameFromARN(target), broker.OptForce)
	}
	p := &peeker{b: b, url: url, name: name, opts: opts, visit: visit, maxReceives: maxReceives,
		fifo: attrs[attrFifo] == "true" || strings.HasSuffix(name, ".fifo"), seen: map[uint64]uint8{}}
	p.depth, _ = strconv.ParseInt(attrs[attrDepth], 10, 64)
	p.inFlight, _ = strconv.ParseInt(attrs[attrNotVisible], 10, 64)
	if p.fifo {
		err = p.walkHolding(ctx)
	} else {
		err = p.walkStandard(ctx)
	}
	rep.Read = p.read
	rep.OutOfReach = p.outOfReach()
	rep.Changed = p.changed()
	if errors.Is(err, broker.ErrStop) {
		err = nil
	}
	return rep, err
}

type peeker struct {
	b           *Broker
	url, name   string
	opts        broker.PeekOptions
	visit       func(*broker.Message) error
	fifo        bool
	depth       int64 // visible messages when the peek began
	inFlight    int64 // messages in flight elsewhere when the peek began
	maxReceives int64 // 0 without a redrive policy

	seed     maphash.Seed
	seen     map[uint64]uint8 // MessageId hash → receives in this peek
	read     int64            // messages visited
	received int64            // distinct messages received
	repeats  int64            // messages received more than once
	atLimit  int64            // messages whose count reached maxReceiveCount
	hidden   int              // messages whose visibility could not be returned
	heldMax  bool             // a FIFO walk stopped at its hold bound
	drained  bool             // the walk ended because nothing more came
}

// remaining is how many more messages the limit allows (10 when unlimited).
func (p *peeker) remaining() int {
	if p.opts.Limit <= 0 {
		return 10
	}
	return int(int64(p.opts.Limit) - p.read)
}

// note records a received message; fresh is false for a repeat.
func (p *peeker) note(m types.Message) (fresh bool) {
	if p.seed == (maphash.Seed{}) {
		p.seed = maphash.MakeSeed()
	}
	h := maphash.String(p.seed, aws.ToString(m.MessageId))
	n := p.seen[h]
	if n < 255 {
		p.seen[h] = n + 1
	}
	switch n {
	case 0:
		p.received++
	case 1:
		p.repeats++
	}
	if p.maxReceives > 0 {
		if c, err := strconv.ParseInt(m.Attributes[sysReceiveCount], 10, 64); err == nil && c >= p.maxReceives {
			p.atLimit++
		}
	}
	return n == 0
}

// emit visits one message; it returns broker.ErrStop at the limit. A
// message handed to visit counts as read even when visit ends the walk.
func (p *peeker) emit(m types.Message) error {
	p.read++
	if err := p.visit(fromSQS(m, p.name)); err != nil {
		return err
	}
	if p.opts.Limit > 0 && p.read >= int64(p.opts.Limit) {
		return broker.ErrStop
	}
	return nil
}

// pollWait is a short poll first, a long poll of one second after an empty
// answer (a short poll may miss messages on real SQS).
func pollWait(empty int) time.Duration {
	if empty > 0 {
		return time.Second
	}
	return 0
}

func (p *peeker) walkStandard(ctx context.Context) error {
	empty, stale := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("peek `%s`: %w", p.name, err)
		}
		want := p.remaining()
		if p.depth > 0 {
			// Every visible message has been seen once: another receive
			// would only raise counts again.
			if p.received >= p.depth {
				return nil
			}
			want = int(min(int64(want), p.depth-p.received))
		}
		msgs, err := p.b.receive(ctx, p.url, want, peekVisibility, pollWait(empty))
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			empty++
			if empty >= peekEmptyPolls {
				return nil
			}
			continue
		}
		empty = 0
		// Return the batch before visiting it: a slow reader never hides
		// messages from consumers.
		p.giveBack(ctx, msgs)
		fresh := false
		for _, m := range msgs {
			if !p.note(m) {
				continue
			}
			fresh = true
			if err := p.emit(m); err != nil {
				return err
			}
		}
		if fresh {
			stale = 0
			continue
		}
		if p.depth > 0 && p.received < p.depth {
			// Only messages already seen, though more are there: this
			// server hands back the messages a peek returned first (some
			// emulators keep a standard queue in order). Hold the rest
			// of the walk, as on a FIFO queue, to reach them.
			return p.walkHolding(ctx)
		}
		if stale++; stale >= peekStaleBatches {
			return nil
		}
	}
}

// walkHolding walks a FIFO queue, or the rest of a standard queue whose
// server hands the returned messages out again first: it keeps what it
// read hidden until the walk ends (see Peek).
func (p *peeker) walkHolding(ctx context.Context) (err error) {
	hold := p.opts.MaxUnacked
	if hold <= 0 {
		hold = peekFIFOHold
	}
	hold = min(hold, peekFIFOHoldMax)
	var held []string // receipt handles, in receive order
	lastExtend := time.Now()
	defer func() {
		// Newest first, so that each group's head goes back last and stays
		// first, on emulators that push returned messages to the group head.
		for i, j := 0, len(held)-1; i < j; i, j = i+1, j-1 {
			held[i], held[j] = held[j], held[i]
		}
		p.giveBackHandles(ctx, held)
	}()
	empty := 0
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("peek `%s`: %w", p.name, err)
		}
		if len(held) >= hold {
			p.heldMax = true
			return nil
		}
		if !p.fifo && p.depth > 0 && p.received >= p.depth {
			return nil
		}
		if time.Since(lastExtend) > peekVisibility/2 {
			// A slow reader: keep what is held hidden until the walk ends.
			if n, err := p.b.changeVisibility(ctx, p.url, held, peekVisibility); err != nil {
				p.b.log.Debug("sqs: peek: extend visibility", "failed", n, "err", err)
			}
			lastExtend = time.Now()
		}
		msgs, err := p.b.receive(ctx, p.url, p.remaining(), peekVisibility, pollWait(empty))
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			empty++
			if empty >= peekEmptyPolls {
				p.drained = true
				return nil
			}
			continue
		}
		empty = 0
		for _, m := range msgs {
			held = append(held, aws.ToString(m.ReceiptHandle))
		}
		for _, m := range msgs {
			if !p.note(m) {
				continue
			}
			if err := p.emit(m); err != nil {
				return err
			}
		}
	}
}

// giveBack makes a batch visible again at once.
func (p *peeker) giveBack(ctx context.Context, msgs []types.Message) {
	handles := make([]string, len(msgs))
	for i, m := range msgs {
		handles[i] = aws.ToString(m.ReceiptHandle)
	}
	p.giveBackHandles(ctx, handles)
}

func (p *peeker) giveBackHandles(ctx context.Context, handles []string) {
	if len(handles) == 0 {
		return
	}
	// Even when the peek was cancelled, messages must not stay hidden.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	n, err := p.b.changeVisibility(ctx, p.url, handles, 0)
	if err != nil {
		p.hidden += n
		p.b.log.Warn("sqs: peek could not make messages visible again; they reappear on their own", "queue", p.name, "messages", n, "after", peekVisibility, "err", err)
	}
}

// outOfReach is how many of the messages a FIFO queue held when the peek
// began (visible and in flight) a walk that ran until nothing more came
// could not see: those behind the head of their group, and those of groups
// locked by a message in flight. 0 for a standard queue or a walk that
// stopped early (a limit, the hold bound).
func (p *peeker) outOfReach() int64 {
	if !p.fifo || !p.drained {
		return 0
	}
	return max(0, p.depth+p.inFlight-p.received)
}

// changed is the one-line account of what the peek changed.
func (p *peeker) changed() string {
	if p.received == 0 {
		return ""
	}
	s := fmt.Sprintf("receive count of %d %s went up by 1", p.received, plural(p.received, "message", "messages"))
	if p.repeats > 0 {
		s += fmt.Sprintf(" (%d received more than once went up by more)", p.repeats)
	}
	if p.atLimit > 0 {
		s += fmt.Sprintf("; %d now at maxReceiveCount %d and will be dead-lettered on their next receive", p.atLimit, p.maxReceives)
	}
	if p.hidden > 0 {
		s += fmt.Sprintf("; %d stay hidden for up to %s", p.hidden, peekVisibility)
	}
	if n := p.outOfReach(); n > 0 {
		s += fmt.Sprintf("; %d of ~%d messages were out of reach behind the head of their message group or in flight (a fifo queue shows only the head of each group without removing messages)", n, p.depth+p.inFlight)
	}
	if p.heldMax {
		s += "; stopped at the bound of messages held at once (max-unacked)"
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
