package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// ConflictError refuses a plan that has conflicts; nothing was applied.
type ConflictError struct {
	Conflicts []Change
}

func (e *ConflictError) Error() string { return e.hint().Error() }

// Unwrap is the message as a broker.Hint, so that a front end words the
// command it proposes.
func (e *ConflictError) Unwrap() error { return e.hint() }

func (e *ConflictError) hint() *broker.Hint {
	names := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		names = append(names, c.Kind+" `"+c.Name+"`")
	}
	return broker.Hintf("%d conflict(s) (%s): nothing was applied, the broker is unchanged; resolve them as %s explains",
		len(e.Conflicts), strings.Join(names, ", "), broker.Cmd("topology plan"))
}

// Is makes a ConflictError match broker.ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == broker.ErrConflict }

// ApplyResult says what an apply did.
type ApplyResult struct {
	Applied []Change `json:"applied"`
	// Failed is the change that failed, when one did; nothing after it was
	// attempted.
	Failed *Change `json:"failed,omitempty"`
}

// Apply carries out a plan, in its order, and stops at the first failure.
// A plan with any conflict is refused before anything is done. progress,
// when not nil, is called after each change with its outcome.
func Apply(ctx context.Context, b broker.Broker, p *Plan, progress func(Change, error)) (ApplyResult, error) {
	var res ApplyResult
	if cs := p.Conflicts(); len(cs) > 0 {
		return res, &ConflictError{Conflicts: cs}
	}
	if p.System != b.System() {
		return res, fmt.Errorf("the plan is for %s but the broker is %s", p.System, b.System())
	}
	ra, _ := b.(broker.RabbitTopologyApplier)
	sa, _ := b.(broker.SQSTopologyApplier)
	if (p.System == broker.RabbitMQ && ra == nil) || (p.System == broker.SQS && sa == nil) {
		return res, broker.Errorf(broker.ErrUnsupported, "apply", "this broker connection cannot declare topology")
	}
	arns := arnResolver{}
	if p.System == broker.SQS {
		if r, ok := b.(broker.SQSTopologyReader); ok {
			var names []string
			for _, c := range p.Changes {
				if c.sqs != nil {
					names = append(names, c.sqs.Name)
					if c.sqs.DeadLetter != nil {
						names = append(names, c.sqs.DeadLetter.Queue)
					}
				}
			}
			states, err := r.ReadSQSQueues(ctx, names)
			if err != nil {
				return res, fmt.Errorf("read queues: %w", err)
			}
			for _, s := range states {
				arns[s.Name] = s.ARN
			}
		}
	}
	one := func(c Change) error {
		switch {
		case c.rabbit != nil:
			return ra.ApplyRabbitChange(ctx, *c.rabbit)
		case c.System == broker.SQS && c.Action == Remove:
			_, err := sa.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Delete, Name: c.Name})
			return err
		case c.sqs != nil:
			return applySQSQueue(ctx, sa, c, arns)
		}
		return fmt.Errorf("%s `%s` has nothing to apply", c.Kind, c.Name)
	}
	fail := func(c Change, err error) error {
		cc := c
		res.Failed = &cc
		if broker.ErrorNames(err, c.Name) {
			return err
		}
		return fmt.Errorf("%s %s `%s`: %w", c.Action, c.Kind, c.Name, err)
	}
	if p.System != broker.RabbitMQ {
		// SQS changes depend on each other (ARNs): one at a time, in order.
		for _, c := range p.Changes {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			err := one(c)
			if progress != nil {
				progress(c, err)
			}
			if err != nil {
				return res, fail(c, err)
			}
			res.Applied = append(res.Applied, c)
		}
		return res, nil
	}
	// RabbitMQ: the objects of one phase (same kind and action) do not
	// depend on each other; declare them a few at a time.
	for start := 0; start < len(p.Changes); {
		end := start + 1
		for end < len(p.Changes) && p.Changes[end].Kind == p.Changes[start].Kind && p.Changes[end].Action == p.Changes[start].Action {
			end++
		}
		phase := p.Changes[start:end]
		errs := make([]error, len(phase))
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			failed  bool
			sem     = make(chan struct{}, applyConcurrency)
			started = make([]bool, len(phase))
		)
		for i, c := range phase {
			mu.Lock()
			stop := failed
			mu.Unlock()
			if stop || ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			started[i] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				err := one(c)
				mu.Lock()
				defer mu.Unlock()
				errs[i] = err
				if err != nil {
					failed = true
				}
				if progress != nil {
					progress(c, err)
				}
			}()
		}
		wg.Wait()
		var firstErr error
		for i, c := range phase {
			switch {
			case !started[i]:
			case errs[i] != nil:
				if firstErr == nil {
					firstErr = fail(c, errs[i])
				}
			default:
				res.Applied = append(res.Applied, c)
			}
		}
		if firstErr != nil {
			return res, firstErr
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start = end
	}
	return res, nil
}

// applyConcurrency bounds the RabbitMQ declarations in flight at once.
const applyConcurrency = 8

func applySQSQueue(ctx context.Context, sa broker.SQSTopologyApplier, c Change, arns arnResolver) error {
	q := c.sqs
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

// IsConflict reports whether err is a refused plan or a broker conflict.
func IsConflict(err error) bool {
	var ce *ConflictError
	return errors.As(err, &ce) || errors.Is(err, broker.ErrConflict)
}
