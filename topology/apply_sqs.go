package topology

import (
	"context"
	"fmt"

	"github.com/dlq-tools/dlq/broker"
)

// applySQS creates, updates and deletes a plan's SQS queues. They depend
// on each other (a redrive policy names its DLQ's ARN): one at a time, in
// order.
func applySQS(ctx context.Context, b broker.Broker, p *Plan, progress func(Change, error), a *applier) error {
	sa, ok := b.(broker.SQSTopologyApplier)
	if !ok {
		return broker.Errorf(broker.ErrUnsupported, "apply", "this broker connection cannot declare topology")
	}
	arns := arnResolver{}
	if r, ok := b.(broker.SQSTopologyReader); ok {
		var names []string
		for _, c := range p.Changes {
			if q, _ := c.do.(*SQSQueue); q != nil {
				names = append(names, q.Name)
				if q.DeadLetter != nil {
					names = append(names, q.DeadLetter.Queue)
				}
			}
		}
		states, err := r.ReadSQSQueues(ctx, names)
		if err != nil {
			return fmt.Errorf("read queues: %w", err)
		}
		for _, s := range states {
			arns[s.Name] = s.ARN
		}
	}
	one := func(c Change) error {
		q, _ := c.do.(*SQSQueue)
		switch {
		case c.Action == Remove:
			_, err := sa.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Delete, Name: c.Name})
			return err
		case q != nil:
			return applySQSQueue(ctx, sa, c, q, arns)
		}
		return noApply(c)
	}
	for _, c := range p.Changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := one(c)
		if progress != nil {
			progress(c, err)
		}
		if err != nil {
			return a.fail(c, err)
		}
		a.done(c)
	}
	return nil
}

func applySQSQueue(ctx context.Context, sa broker.SQSTopologyApplier, c Change, q *SQSQueue, arns arnResolver) error {
	render := func() (map[string]string, bool) {
		complete := true
		want := q.desired(func(name string) string {
			a, ok := arns.arn(name)
			if !ok {
				complete = false
			}
			return a
		})
		return want, complete
	}
	want, complete := render()
	attrs := want
	if c.Action == Update {
		// Only what differs; SQS rejects setting FifoQueue on an existing queue.
		attrs = map[string]string{}
		for _, d := range c.Diffs {
			if d.Field != "FifoQueue" {
				attrs[d.Field] = want[d.Field]
			}
		}
	}
	var later []string
	if !complete {
		// No ARN is known yet (nothing of this account exists): create the
		// queue without its redrive policies, learn its ARN, then set them.
		for _, k := range []string{"RedrivePolicy", "RedriveAllowPolicy"} {
			if _, ok := attrs[k]; ok {
				delete(attrs, k)
				later = append(later, k)
			}
		}
	}
	st, err := sa.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Declare, Name: q.Name, Attributes: attrs})
	if err != nil {
		return err
	}
	if st.ARN != "" {
		arns[q.Name] = st.ARN
	}
	if len(later) == 0 {
		return nil
	}
	want, complete = render()
	if !complete {
		return fmt.Errorf("cannot tell the ARNs its redrive policies name: create the queues they name first")
	}
	rest := map[string]string{}
	for _, k := range later {
		rest[k] = want[k]
	}
	_, err = sa.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Declare, Name: q.Name, Attributes: rest})
	return err
}
