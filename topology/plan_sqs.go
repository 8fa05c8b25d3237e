package topology

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// arnResolver knows queue ARNs and derives the ARN of a queue that does not
// exist yet from any known ARN of the same account and region.
type arnResolver map[string]string

func (r arnResolver) arn(name string) (string, bool) {
	if a, ok := r[name]; ok {
		return a, true
	}
	for _, a := range r {
		if i := strings.LastIndexByte(a, ':'); i > 0 {
			return a[:i+1] + name, true
		}
	}
	return "", false
}

func (r arnResolver) arnOrPlaceholder(name string) string {
	if a, ok := r.arn(name); ok {
		return a
	}
	return "(ARN of " + name + ", known after apply)"
}

// desired renders a queue's attributes with RedrivePolicy and
// RedriveAllowPolicy as SQS wants them.
func (q *SQSQueue) desired(arn func(string) string) map[string]string {
	out := make(map[string]string, len(q.Attributes)+2)
	for k, v := range q.Attributes {
		out[k] = v
	}
	if q.DeadLetter != nil {
		b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn(q.DeadLetter.Queue), "maxReceiveCount": q.DeadLetter.MaxReceiveCount})
		out["RedrivePolicy"] = string(b)
	}
	if q.RedriveAllow != nil {
		m := map[string]any{"redrivePermission": q.RedriveAllow.Permission}
		if len(q.RedriveAllow.Sources) > 0 {
			arns := make([]string, len(q.RedriveAllow.Sources))
			for i, s := range q.RedriveAllow.Sources {
				arns[i] = arn(s)
			}
			m["sourceQueueArns"] = arns
		}
		b, _ := json.Marshal(m)
		out["RedriveAllowPolicy"] = string(b)
	}
	return out
}

// sameAttribute compares attribute values as SQS means them: JSON policies
// by content (numbers and numeric strings alike, ARN lists in any order).
func sameAttribute(k, a, b string) bool {
	if a == b {
		return true
	}
	switch k {
	case "RedrivePolicy", "RedriveAllowPolicy", "Policy":
		return canonicalJSON(a) == canonicalJSON(b) && canonicalJSON(a) != ""
	case "ContentBasedDeduplication", "FifoQueue", "SqsManagedSseEnabled":
		return strings.EqualFold(a, b)
	}
	return false
}

func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return ""
	}
	if m, ok := v.(map[string]any); ok {
		if n, ok := m["maxReceiveCount"]; ok {
			if str, ok := n.(string); ok {
				if i, err := strconv.ParseInt(str, 10, 64); err == nil {
					m["maxReceiveCount"] = i
				}
			}
		}
		if l, ok := m["sourceQueueArns"].([]any); ok {
			sort.Slice(l, func(i, j int) bool { return fmt.Sprint(l[i]) < fmt.Sprint(l[j]) })
		}
	}
	return canonical(v)
}

// sqsOrder sorts queues so that every dead-letter target comes before the
// queues that name it.
func sqsOrder(qs []SQSQueue) []SQSQueue {
	idx := map[string]int{}
	for i, q := range qs {
		idx[q.Name] = i
	}
	state := make([]int, len(qs))
	var out []SQSQueue
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		if dl := qs[i].DeadLetter; dl != nil {
			if j, ok := idx[dl.Queue]; ok {
				visit(j)
			}
		}
		state[i] = 2
		out = append(out, qs[i])
	}
	for i := range qs {
		visit(i)
	}
	return out
}

func planSQS(ctx context.Context, p *Plan, m *SQSModel, r broker.SQSTopologyReader, opts PlanOptions) error {
	names := make([]string, len(m.Queues))
	for i, q := range m.Queues {
		names[i] = q.Name
	}
	states, err := r.ReadSQSQueues(ctx, names)
	if err != nil {
		return fmt.Errorf("read queues: %w", err)
	}
	have := map[string]broker.SQSQueueState{}
	arns := arnResolver{}
	for _, s := range states {
		have[s.Name] = s
		if s.ARN != "" {
			arns[s.Name] = s.ARN
		}
	}
	var all []broker.SQSQueueState
	if opts.Prune {
		all, err = r.ListSQSQueues(ctx, opts.PruneScope)
		if err != nil {
			return fmt.Errorf("list queues: %w", err)
		}
		for _, s := range all {
			if s.ARN != "" {
				arns[s.Name] = s.ARN
			}
		}
	}
	for _, q := range sqsOrder(m.Queues) {
		pos := q.Pos
		qq := q
		c := Change{System: broker.SQS, Kind: "sqs-queue", Name: q.Name, Pos: &pos, From: q.From, do: &qq}
		want := q.desired(arns.arnOrPlaceholder)
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		old, ok := have[q.Name]
		if !ok {
			c.Action = Create
			for _, k := range keys {
				c.Diffs = append(c.Diffs, Diff{Field: k, New: want[k]})
			}
			p.Changes = append(p.Changes, c)
			continue
		}
		for _, k := range keys {
			if k == "FifoQueue" {
				continue // fixed by the name
			}
			if o, has := old.Attributes[k]; !has || !sameAttribute(k, o, want[k]) {
				d := Diff{Field: k, New: want[k]}
				if has {
					d.Old = o
				}
				c.Diffs = append(c.Diffs, d)
			}
		}
		if len(c.Diffs) == 0 {
			p.Unchanged++
			continue
		}
		c.Action = Update
		p.Changes = append(p.Changes, c)
	}
	if opts.Prune {
		in := map[string]bool{}
		for _, q := range m.Queues {
			in[q.Name] = true
		}
		// Sources before their DLQs: delete in reverse dependency order.
		var dels []Change
		for _, s := range all {
			if in[s.Name] || !strings.HasPrefix(s.Name, opts.PruneScope) {
				continue
			}
			c := Change{Action: Remove, System: broker.SQS, Kind: "sqs-queue", Name: s.Name}
			var n int64
			for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
				v, _ := strconv.ParseInt(s.Attributes[a], 10, 64)
				n += v
			}
			if n > 0 {
				c.Action = Conflict
				c.Problem = fmt.Sprintf("queue `%s` is not in the spec but holds about %d messages; pruning never deletes messages", s.Name, n)
				c.Fix = "move or drain the messages first (`dlq redrive`, `dlq purge`), or add the queue to the spec"
			}
			if _, isSource := s.Attributes["RedrivePolicy"]; isSource {
				dels = append([]Change{c}, dels...)
			} else {
				dels = append(dels, c)
			}
		}
		p.Changes = append(p.Changes, dels...)
	}
	return nil
}

// planSQSBroker plans the model's SQS section against b's queues.
func planSQSBroker(ctx context.Context, b broker.Broker, m *Model, p *Plan, opts PlanOptions) error {
	if m.SQS == nil {
		return broker.Hintf("the spec has no `sqs:` section but %s is SQS: point %s at RabbitMQ (amqp://…)", broker.OptBroker, broker.OptBroker)
	}
	r, ok := b.(broker.SQSTopologyReader)
	if !ok {
		return broker.Errorf(broker.ErrUnsupported, "plan", "this SQS connection cannot read queue attributes")
	}
	return planSQS(ctx, p, m.SQS, r, opts)
}
