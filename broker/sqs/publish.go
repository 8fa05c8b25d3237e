package sqs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.Publisher    = (*Broker)(nil)
	_ broker.RouteChecker = (*Broker)(nil)
)

const (
	// publishConcurrency bounds the SendMessageBatch calls in flight to
	// standard queues. FIFO queues get one at a time, in order.
	publishConcurrency = 8
	// maxBatchBytes is SQS's limit on the total payload of one batch.
	maxBatchBytes = 256 * 1024
	maxBatchCount = 10
)

// Publish sends messages to SQS queues (broker.ToQueue by name, URL or ARN)
// with SendMessageBatch and returns one error per message: nil once SQS has
// accepted it. See toEntry for attributes, FIFO group and deduplication ids.
//
// Messages are batched per queue in input order, 10 to a batch and at most
// 256 KiB per batch. Batches to a standard queue run concurrently (at most 8
// at once); batches to a FIFO queue run one after another so that each
// group keeps its order. An entry that SQS rejects gets its own error, and
// one that fails on SQS's side is retried once. A batch whose call fails as
// a whole (network, throttling after the SDK's retries) gives each of its
// messages that error: SQS may or may not have taken them, so the caller
// must not treat them as sent (a retry may duplicate, never lose).
//
// The second result is non-nil only when ctx ended; results already
// returned as nil are still confirmed.
func (b *Broker) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	errs := make([]error, len(msgs))
	// Group by destination, keeping input order within each.
	type dest struct {
		ref string
		idx []int
	}
	var order []string
	byRef := map[string]*dest{}
	for i, o := range msgs {
		if o.Dest.Kind != broker.ToQueue || o.Dest.Queue == "" {
			errs[i] = broker.Errorf(broker.ErrUnsupported, "publish to "+o.Dest.String(),
				"sqs publishes to queues only: use %s", broker.OptTo.With("queue:NAME"))
			continue
		}
		d, ok := byRef[o.Dest.Queue]
		if !ok {
			d = &dest{ref: o.Dest.Queue}
			byRef[o.Dest.Queue] = d
			order = append(order, o.Dest.Queue)
		}
		d.idx = append(d.idx, i)
	}

	sem := make(chan struct{}, publishConcurrency)
	var wg sync.WaitGroup
	for _, ref := range order {
		d := byRef[ref]
		q, err := b.queueInfo(ctx, d.ref)
		if err != nil {
			for _, i := range d.idx {
				errs[i] = err
			}
			continue
		}
		batches := b.batch(msgs, d.idx, q, errs)
		if q.fifo {
			// In order, one batch at a time, alongside other destinations.
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				b.sendFIFO(ctx, q, msgs, d.idx, batches, errs)
			}()
			continue
		}
		for _, bt := range batches {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				for _, e := range bt {
					errs[e.idx] = fmt.Errorf("publish to queue `%s`: %w", q.name, ctx.Err())
				}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				b.sendBatch(ctx, q, bt, msgs, errs)
			}()
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return errs, fmt.Errorf("publish: %w", err)
	}
	return errs, nil
}

// pending is one message of a batch: its index in the Publish input.
type pending struct {
	idx int
	out outgoing
}

// sendFIFO sends the batches of a FIFO queue one after another and keeps
// each message group's order: once a message of a group is not accepted
// (it could not be converted, SQS refused it, or its call failed), no later
// message of that group in msgs is sent; each gets an error saying why, so
// that it stays in its source behind the one that failed.
func (b *Broker) sendFIFO(ctx context.Context, q queueInfo, msgs []broker.Outgoing, idx []int, batches [][]pending, errs []error) {
	first := map[string]int{} // group → index of its first failure
	fail := func(g string, i int) {
		if f, ok := first[g]; !ok || i < f {
			first[g] = i
		}
	}
	for _, i := range idx {
		if errs[i] != nil {
			fail(groupOf(msgs[i]), i)
		}
	}
	for _, bt := range batches {
		send := bt[:0:0]
		for _, p := range bt {
			g := groupOf(msgs[p.idx])
			if f, ok := first[g]; ok && f < p.idx {
				errs[p.idx] = fmt.Errorf("publish to queue `%s`: not sent, to keep the order of message group %q: an earlier message of the group was not accepted", q.name, g)
				continue
			}
			send = append(send, p)
		}
		if len(send) == 0 {
			continue
		}
		b.sendBatch(ctx, q, send, msgs, errs)
		for _, p := range send {
			if errs[p.idx] != nil {
				fail(groupOf(msgs[p.idx]), p.idx)
			}
		}
	}
}

// groupOf is the message group a FIFO publish uses (see toEntry).
func groupOf(o broker.Outgoing) string {
	if o.GroupID != "" || o.Message == nil {
		return o.GroupID
	}
	return o.Message.SystemAttributes[sysGroupID]
}

// batch converts the messages at idx and cuts them into batches of at most
// 10 entries and 256 KiB. Conversion errors go straight into errs.
func (b *Broker) batch(msgs []broker.Outgoing, idx []int, q queueInfo, errs []error) [][]pending {
	var out [][]pending
	var cur []pending
	size := 0
	for _, i := range idx {
		o, err := toEntry(strconv.Itoa(i), msgs[i], q)
		if err != nil {
			errs[i] = fmt.Errorf("publish to queue `%s`: %w", q.name, err)
			continue
		}
		if len(cur) == maxBatchCount || len(cur) > 0 && size+o.size > maxBatchBytes {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, pending{idx: i, out: o})
		size += o.size
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sendBatch sends one batch, retries entries that failed on SQS's side once,
// and records each message's outcome in errs (and Resent in msgs).
func (b *Broker) sendBatch(ctx context.Context, q queueInfo, batch []pending, msgs []broker.Outgoing, errs []error) {
	for attempt := 0; attempt < 2 && len(batch) > 0; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		byID := make(map[string]pending, len(batch))
		for j, p := range batch {
			e := p.out.entry
			e.Id = aws.String(strconv.Itoa(j))
			entries[j] = e
			byID[*e.Id] = p
		}
		out, err := b.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		// A FIFO queue drops the resend itself: it carries the same
		// deduplication id within seconds.
		resent := err == nil && !q.fifo && sentTwice(out.ResultMetadata)
		if err != nil {
			err = b.queueErr("publish to queue `"+q.name+"`", q.url, err)
			for _, p := range batch {
				errs[p.idx] = err
			}
			return
		}
		// On a FIFO queue a failed entry is retried only when no later
		// entry of its group was accepted: sent again, it would land behind
		// that one. lastOK is one past the last accepted index per group.
		lastOK := map[string]int{}
		for _, s := range out.Successful {
			if p, ok := byID[aws.ToString(s.Id)]; ok {
				errs[p.idx] = nil
				if resent {
					msgs[p.idx].Resent = true
				}
				delete(byID, aws.ToString(s.Id))
				g := aws.ToString(p.out.entry.MessageGroupId)
				lastOK[g] = max(lastOK[g], p.idx+1)
			}
		}
		var retry []pending
		for _, f := range out.Failed {
			p, ok := byID[aws.ToString(f.Id)]
			if !ok {
				continue
			}
			delete(byID, aws.ToString(f.Id))
			errs[p.idx] = entryErr(q.name, f)
			if !f.SenderFault && (!q.fifo || lastOK[aws.ToString(p.out.entry.MessageGroupId)] <= p.idx) {
				retry = append(retry, p)
			}
		}
		for _, p := range byID {
			// Neither successful nor failed: SQS said nothing about it.
			errs[p.idx] = fmt.Errorf("publish to queue `%s`: sqs did not confirm the message", q.name)
		}
		batch = retry
	}
}

// sentTwice reports whether the SDK sent a request again after an attempt
// whose request may have reached SQS: one that failed without an answer
// (connection reset, EOF, a timeout) or with a server error (5xx: SQS, or a
// proxy in front of it, may have stored the messages before it failed),
// rather than before sending (connection refused) or with a refusal (4xx).
func sentTwice(md middleware.Metadata) bool {
	ar, ok := retry.GetAttemptResults(md)
	if !ok {
		return false
	}
	return sentAgainAfter(ar.Results)
}

// sentAgainAfter is sentTwice over the attempts of one request.
func sentAgainAfter(results []retry.AttemptResult) bool {
	for _, r := range results {
		if r.Err == nil {
			continue
		}
		var re *awshttp.ResponseError
		if errors.As(r.Err, &re) && re.HTTPStatusCode() != 0 && re.HTTPStatusCode() < 500 {
			continue // SQS answered: it refused the request
		}
		var oe *net.OpError
		if errors.As(r.Err, &oe) && oe.Op == "dial" {
			continue // never sent
		}
		return true
	}
	return false
}

// entryErr explains one failed SendMessageBatch entry.
func entryErr(queue string, f types.BatchResultErrorEntry) error {
	code, msg := aws.ToString(f.Code), aws.ToString(f.Message)
	op := "publish to queue `" + queue + "`"
	if err := apiErr(op, code, msg); errors.Is(err, broker.ErrAccessDenied) || errors.Is(err, broker.ErrNotFound) {
		return err
	}
	if msg == "" {
		return fmt.Errorf("%s: %s", op, code)
	}
	return fmt.Errorf("%s: %s (%s)", op, firstLine(msg), code)
}

// queueInfo resolves a destination and reads what sending needs, cached for
// the life of the Broker.
func (b *Broker) queueInfo(ctx context.Context, ref string) (queueInfo, error) {
	u, err := b.queueURL(ctx, ref)
	if err != nil {
		return queueInfo{}, err
	}
	b.mu.Lock()
	qi, ok := b.infos[u]
	b.mu.Unlock()
	if ok {
		return qi, nil
	}
	out, err := b.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(u),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue,
			types.QueueAttributeNameContentBasedDeduplication, types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return queueInfo{}, b.queueErr("read queue `"+nameFromURL(u)+"`", u, err)
	}
	qi = queueInfo{url: u, name: nameFromURL(u),
		fifo:         out.Attributes[attrFifo] == "true" || strings.HasSuffix(nameFromURL(u), ".fifo"),
		contentDedup: out.Attributes[attrContentDedup] == "true"}
	b.rememberARN(u, out.Attributes[attrQueueArn])
	b.mu.Lock()
	b.infos[u] = qi
	b.mu.Unlock()
	return qi, nil
}

// Routable reports whether dest is an existing SQS queue.
func (b *Broker) Routable(ctx context.Context, dest broker.Destination) (bool, error) {
	if dest.Kind != broker.ToQueue || dest.Queue == "" {
		return false, nil
	}
	_, err := b.queueInfo(ctx, dest.Queue)
	if errors.Is(err, broker.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
