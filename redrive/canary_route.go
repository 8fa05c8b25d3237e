package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// Watched is a queue where the canary counts the messages that came back.
type Watched struct {
	Broker broker.Broker
	Queue  string
}

// CanaryRoute is what dlq knows of the route of a redrive: the queues
// where moved messages that fail again end up, and how long that takes.
type CanaryRoute struct {
	// Watch are the source and the other dead-letter queues of the queues
	// the messages go to.
	Watch []Watched
	// Wait is the settle time: the longest a failed message takes to come
	// back, or CanaryMinWait; WaitFrom says which.
	Wait     time.Duration
	WaitFrom string
}

// RouteOf finds where the messages moved from queue to dest go when they
// fail again, and how long they take to get there:
//   - an SQS queue's visibility timeout × maxReceiveCount (its redrive
//     policy): the longest a message is received before SQS moves it;
//   - a RabbitMQ retry ladder (delay queues whose TTL dead-letters back to
//     the queue): the sum of its delay queues' TTLs, as a message that
//     fails every time passes each of them once before it is parked;
//   - otherwise CanaryMinWait.
//
// What it cannot read (no management access, a missing queue) it leaves
// out: the source is always watched.
func RouteOf(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, dest broker.Destination) CanaryRoute {
	if dst == nil {
		dst = src
	}
	r := CanaryRoute{Watch: []Watched{{src, queue}}, Wait: CanaryMinWait,
		WaitFrom: fmt.Sprintf("the minimum %s: dlq found no retry ladder or SQS redrive policy on the route", CanaryMinWait)}
	b := src
	var work []broker.Queue
	switch dest.Kind {
	case broker.ToQueue:
		b = dst
		if qi, ok := dst.(broker.QueueInspector); ok {
			if q, err := qi.Queue(ctx, dest.Queue); err == nil {
				work = append(work, q)
			}
		}
	case broker.ToOrigin, broker.ToExchange:
		if qi, ok := src.(broker.QueueInspector); ok && dst == src {
			if q, err := qi.Queue(ctx, queue); err == nil {
				for _, s := range q.DeadLetterSources {
					if w, err := qi.Queue(ctx, s); err == nil {
						work = append(work, w)
					}
				}
			}
		}
	}
	seen := map[string]bool{}
	if b == src {
		seen[queue] = true
	}
	for _, w := range work {
		for _, d := range w.DeadLetterQueues {
			if !seen[d] {
				seen[d] = true
				r.Watch = append(r.Watch, Watched{b, d})
			}
		}
	}
	var all []broker.Queue
	listed := false
	for _, w := range work {
		var d time.Duration
		var why string
		if vis := visibilityTimeout(w); vis > 0 && w.DeliveryLimit > 0 {
			d = vis * time.Duration(w.DeliveryLimit)
			why = fmt.Sprintf("`%s`'s visibility timeout %s × maxReceiveCount %d", w.Name, vis, w.DeliveryLimit)
		} else {
			if !listed {
				if ql, ok := b.(broker.QueueLister); ok {
					all, _ = ql.Queues(ctx)
				}
				listed = true
			}
			n := 0
			for _, q := range all {
				if q.Role == broker.RoleRetry && q.MessageTTL > 0 && slices.Contains(q.DeadLetterQueues, w.Name) {
					d += q.MessageTTL
					n++
				}
			}
			if n > 0 {
				why = fmt.Sprintf("the retry ladder of `%s`: its %d delay queues' TTLs add up to %s", w.Name, n, d)
			}
		}
		if d > r.Wait {
			r.Wait, r.WaitFrom = d, why
		} else if why != "" && r.Wait == CanaryMinWait && d > 0 {
			r.WaitFrom = fmt.Sprintf("the minimum %s (%s is shorter)", CanaryMinWait, why)
		}
	}
	return r
}

// visibilityTimeout is an SQS queue's VisibilityTimeout attribute.
func visibilityTimeout(q broker.Queue) time.Duration {
	switch v := q.Arguments["VisibilityTimeout"].(type) {
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n) * time.Second
		}
	case int64:
		return time.Duration(v) * time.Second
	case int:
		return time.Duration(v) * time.Second
	case float64:
		return time.Duration(v * float64(time.Second))
	}
	return 0
}

// ReturnGroup counts returned messages of one failure group in one queue.
type ReturnGroup struct {
	Queue string `json:"queue"`
	// Group is the ID of the failure reason's shape (inspect.GroupID).
	Group string `json:"group"`
	// Reason is the failure reason of the first such message.
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
	// Same is true when the moved messages were of this failure group
	// before (the same failure again), false for a new one.
	Same bool `json:"same_group"`
}

// countReturns reads the watched queues, under the peek-safety rules (each
// in the mode its traits give a whole read: a rotation on RabbitMQ, which
// raises no delivery count and keeps the order), and counts the messages
// whose x-dlq-redrive record one of runs wrote, by queue and failure
// group. chosen are the shapes of the moved messages' reasons (mu).
func countReturns(ctx context.Context, watch []Watched, runs map[string]bool, chosen map[string]bool, mu *sync.Mutex) (int64, []ReturnGroup, broker.PeekReport, error) {
	var n int64
	var all broker.PeekReport
	var changed []string
	by := map[string]*ReturnGroup{}
	var order []string
	for _, w := range watch {
		p, ok := w.Broker.(broker.Peeker)
		if !ok {
			continue
		}
		po := broker.PeekOptions{}
		q := broker.Queue{Name: w.Queue}
		if qi, ok := w.Broker.(broker.QueueInspector); ok {
			got, err := qi.Queue(ctx, w.Queue)
			if errors.Is(err, broker.ErrNotFound) {
				continue
			}
			if err == nil {
				q = got
			}
		}
		// The mode that reads the whole queue without harm (a stream is
		// read from its start).
		if t := broker.TraitsOf(w.Broker, q); t.PeekAll != broker.PeekAuto {
			po.Mode = t.PeekAll
		}
		rep, err := p.Peek(ctx, w.Queue, po, func(m *broker.Message) error {
			if !runs[MarkRun(m)] {
				return nil
			}
			n++
			reason := inspect.Reason(m)
			shape := inspect.ShapeOf(reason)
			key := w.Queue + "\x00" + shape
			g := by[key]
			if g == nil {
				mu.Lock()
				same := chosen[shape]
				mu.Unlock()
				g = &ReturnGroup{Queue: w.Queue, Group: inspect.GroupID(shape), Reason: broker.Redact(reason), Same: same}
				by[key] = g
				order = append(order, key)
			}
			g.Count++
			return nil
		})
		if err != nil && !errors.Is(err, broker.ErrStop) {
			return n, nil, all, fmt.Errorf("read `%s`: %w", w.Queue, err)
		}
		if rep.Changed != "" {
			changed = append(changed, fmt.Sprintf("`%s`: %s", w.Queue, rep.Changed))
		}
		all.Read += rep.Read
		all.OutOfReach += rep.OutOfReach
	}
	all.Changed = strings.Join(changed, "; ")
	groups := make([]ReturnGroup, 0, len(order))
	for _, k := range order {
		groups = append(groups, *by[k])
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Count > groups[j].Count })
	return n, groups, all, nil
}
