package sqs

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.Consumer     = (*Broker)(nil)
	_ broker.Subscription = (*subscription)(nil)
	_ broker.Extender     = (*subscription)(nil)
)

// defaultIdle is how long Next long-polls an empty queue before io.EOF.
const defaultIdle = time.Second

// receiveGrace bounds a receive beyond its long poll, once its run was
// cancelled (see fill).
const receiveGrace = 10 * time.Second

// maxVisibility is SQS's upper bound on a visibility timeout.
const maxVisibility = 12 * time.Hour

// Consume takes messages for moving. Each ReceiveMessage asks for up to 10
// messages (fewer with opts.Prefetch or opts.Limit), hidden for
// opts.Visibility (default: the queue's own visibility timeout); Next hands
// them out one at a time and reports io.EOF once opts.Limit deliveries were
// handed out, or when a long poll of opts.Idle (default 1s) finds nothing.
//
// The returned Subscription is also a broker.Extender. Every receive counts
// against the queue's maxReceiveCount like any consumer's.
func (b *Broker) Consume(ctx context.Context, queue string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	url, err := b.queueURL(ctx, queue)
	if err != nil {
		return nil, err
	}
	if opts.Visibility < 0 || opts.Visibility > maxVisibility {
		return nil, fmt.Errorf("consume `%s`: visibility %s is outside the 0s–12h SQS allows", queueName(queue), opts.Visibility)
	}
	if opts.Visibility > 0 && opts.Visibility < time.Second {
		opts.Visibility = time.Second
	}
	if opts.Idle <= 0 {
		opts.Idle = defaultIdle
	}
	// Fail now, not at the first Next, when the queue is missing.
	if _, err := b.queueARN(ctx, url); err != nil {
		return nil, err
	}
	return &subscription{b: b, url: url, name: nameFromURL(url), opts: opts, unsettled: map[string]struct{}{}}, nil
}

type subscription struct {
	b    *Broker
	url  string
	name string
	opts broker.ConsumeOptions

	buf       []types.Message
	delivered int64

	mu        sync.Mutex
	unsettled map[string]struct{} // receipt handles handed out, not yet settled
	closed    bool
}

// Next returns the next delivery, or io.EOF when the queue is drained or the
// limit is reached.
func (s *subscription) Next(ctx context.Context) (*broker.Delivery, error) {
	if s.opts.Limit > 0 && s.delivered >= s.opts.Limit {
		return nil, io.EOF
	}
	if s.buffered() == 0 {
		if err := s.fill(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	if s.closed || len(s.buf) == 0 {
		s.mu.Unlock()
		return nil, io.EOF
	}
	m := s.buf[0]
	s.buf = s.buf[1:]
	s.delivered++
	h := aws.ToString(m.ReceiptHandle)
	s.unsettled[h] = struct{}{}
	s.mu.Unlock()
	return &broker.Delivery{Message: fromSQS(m, s.name), Receipt: broker.Receipt{Handle: h}}, nil
}

// buffered is how many received messages wait to be handed out.
func (s *subscription) buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf)
}

// fill receives the next batch, long-polling for up to opts.Idle in total.
func (s *subscription) fill(ctx context.Context) error {
	want := maxReceive
	if s.opts.Prefetch > 0 {
		want = min(want, s.opts.Prefetch)
	}
	if s.opts.Limit > 0 {
		want = int(min(int64(want), s.opts.Limit-s.delivered))
	}
	vis := time.Duration(-1)
	if s.opts.Visibility > 0 {
		vis = s.opts.Visibility
	}
	deadline := time.Now().Add(s.opts.Idle)
	for {
		// Long-poll for whole seconds, rounded up: a wait truncated to 0s
		// would be a short poll, and an empty queue would be asked again
		// and again until the deadline.
		wait := min(time.Until(deadline), 20*time.Second)
		wait = max(((wait+time.Second-1)/time.Second)*time.Second, 0)
		// A receive cut off by a cancel still hides what the server picked
		// for it, and dlq never learns their receipt handles: they would
		// stay hidden for the whole visibility timeout. So a receive on its
		// way is let finish (it ends after its long poll), and what it
		// brings after a cancel or a Close is given back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+receiveGrace)
		msgs, err := s.b.receive(rctx, s.url, want, vis, wait)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("receive from queue `%s`: %w", s.name, ctx.Err())
			}
			return err
		}
		if len(msgs) > 0 {
			s.mu.Lock()
			closed := s.closed
			if !closed && ctx.Err() == nil {
				s.buf = msgs
			}
			s.mu.Unlock()
			if closed || ctx.Err() != nil {
				// Closed or cancelled while this receive was on its way:
				// give them back.
				gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer gcancel()
				if _, err := s.b.changeVisibility(gctx, s.url, handlesOf(msgs), 0); err != nil {
					return err
				}
				if closed {
					return nil
				}
				return fmt.Errorf("receive from queue `%s`: %w", s.name, ctx.Err())
			}
			return nil
		}
		if !time.Now().Before(deadline) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("receive from queue `%s`: %w", s.name, err)
		}
	}
}

// Ack deletes the messages (DeleteMessageBatch). Entries that fail are
// retried once; what still fails is reported in the error, and those
// messages stay in the queue (to be delivered again: a duplicate at worst).
func (s *subscription) Ack(ctx context.Context, receipts ...broker.Receipt) error {
	handles := handlesOfReceipts(receipts)
	failed, err := s.b.deleteHandles(ctx, s.url, handles)
	s.settle(handles)
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return deleteFailure(s.name, failed)
	}
	return nil
}

// Release makes the messages visible again at once, unchanged.
func (s *subscription) Release(ctx context.Context, receipts ...broker.Receipt) error {
	handles := handlesOfReceipts(receipts)
	n, err := s.b.changeVisibility(ctx, s.url, handles, 0)
	s.settle(handles)
	if err != nil {
		return fmt.Errorf("%w (%d %s stay hidden until their visibility timeout ends)", err, n, plural(int64(n), "message", "messages"))
	}
	return nil
}

// Extend keeps the messages hidden for d more from now.
func (s *subscription) Extend(ctx context.Context, d time.Duration, receipts ...broker.Receipt) error {
	if d <= 0 || d > maxVisibility {
		return fmt.Errorf("extend visibility in queue `%s`: %s is outside 1s–12h", s.name, d)
	}
	d = max(d, time.Second)
	n, err := s.b.changeVisibility(ctx, s.url, handlesOfReceipts(receipts), d)
	if err != nil {
		return fmt.Errorf("%w (%d of %d not extended: their visibility timeout may have ended, so they may be delivered again)", err, n, len(receipts))
	}
	return nil
}

// Close releases every delivery still unsettled.
func (s *subscription) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	handles := make([]string, 0, len(s.unsettled)+len(s.buf))
	for h := range s.unsettled {
		handles = append(handles, h)
	}
	s.unsettled = map[string]struct{}{}
	// Received but never handed out (the run stopped reading: a limit
	// reached by another receiver, a cancel, an error): hidden all the same.
	handles = append(handles, handlesOf(s.buf)...)
	s.buf = nil
	s.mu.Unlock()
	if len(handles) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.b.changeVisibility(ctx, s.url, handles, 0); err != nil {
		return fmt.Errorf("release unsettled messages: %w", err)
	}
	return nil
}

func (s *subscription) settle(handles []string) {
	s.mu.Lock()
	for _, h := range handles {
		delete(s.unsettled, h)
	}
	s.mu.Unlock()
}

func handlesOfReceipts(rs []broker.Receipt) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Handle
	}
	return out
}

func handlesOf(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.ReceiptHandle)
	}
	return out
}

// deleteFailed is one receipt handle that could not be deleted.
type deleteFailed struct {
	handle, code, msg string
	senderFault       bool
}

// deleteHandles deletes in batches of 10 and retries the failed entries once
// unless SQS blames the request itself. It returns the entries that still
// failed; err is the failure of a whole call (nothing known about its batch).
func (b *Broker) deleteHandles(ctx context.Context, url string, handles []string) ([]deleteFailed, error) {
	failed, err := b.deleteOnce(ctx, url, handles)
	if err != nil || len(failed) == 0 {
		return failed, err
	}
	var final []deleteFailed
	var retry []string
	for _, f := range failed {
		if f.senderFault {
			final = append(final, f)
		} else {
			retry = append(retry, f.handle)
		}
	}
	if len(retry) > 0 {
		again, err := b.deleteOnce(ctx, url, retry)
		if err != nil {
			return nil, err
		}
		final = append(final, again...)
	}
	return final, nil
}

// deleteConcurrency bounds the DeleteMessageBatch calls of one Ack in
// flight at once.
const deleteConcurrency = 8

// deleteOnce deletes handles in batches of 10, several batches at once.
func (b *Broker) deleteOnce(ctx context.Context, url string, handles []string) ([]deleteFailed, error) {
	n := (len(handles) + 9) / 10
	failed := make([][]deleteFailed, n)
	errs := make([]error, n)
	one := func(k int) {
		batch := handles[k*10 : min(k*10+10, len(handles))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
		for j, h := range batch {
			entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(h)}
		}
		out, err := b.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			errs[k] = b.queueErr("delete from queue `"+nameFromURL(url)+"`", url, err)
			return
		}
		for _, f := range out.Failed {
			j, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || j < 0 || j >= len(batch) {
				errs[k] = fmt.Errorf("delete from queue `%s`: SQS reported a failure for unknown entry %q", nameFromURL(url), aws.ToString(f.Id))
				return
			}
			failed[k] = append(failed[k], deleteFailed{handle: batch[j], code: aws.ToString(f.Code), msg: aws.ToString(f.Message), senderFault: f.SenderFault})
		}
	}
	if n == 1 {
		one(0)
	} else {
		sem := make(chan struct{}, deleteConcurrency)
		var wg sync.WaitGroup
		for k := 0; k < n; k++ {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				one(k)
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var all []deleteFailed
	for _, f := range failed {
		all = append(all, f...)
	}
	return all, nil
}

// deleteFailure explains entries that could not be deleted.
func deleteFailure(queue string, failed []deleteFailed) error {
	f := failed[0]
	why := f.msg
	if strings.Contains(f.code, "ReceiptHandleIsInvalid") || strings.Contains(f.code, "InvalidReceiptHandle") {
		why = "the receipt handle is no longer valid (the visibility timeout ended before the delete); the message will be delivered again, so expect a duplicate at the destination (settle sooner, or keep the visibility extended while a batch is slow)"
	}
	return fmt.Errorf("delete from queue `%s`: %d %s not deleted and left in the queue: %s (%s)",
		queue, len(failed), plural(int64(len(failed)), "message", "messages"), why, f.code)
}
