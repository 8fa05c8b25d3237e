package topology

import (
	"context"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// applyRabbitMQ declares and deletes a plan's RabbitMQ objects. The
// objects of one phase (same kind and action) do not depend on each other;
// they are declared a few at a time.
func applyRabbitMQ(ctx context.Context, b broker.Broker, p *Plan, progress func(Change, error), a *applier) error {
	ra, ok := b.(broker.RabbitTopologyApplier)
	if !ok {
		return broker.Errorf(broker.ErrUnsupported, "apply", "this broker connection cannot declare topology")
	}
	one := func(c Change) error {
		if rc, ok := c.do.(*broker.RabbitChange); ok && rc != nil {
			return ra.ApplyRabbitChange(ctx, *rc)
		}
		return noApply(c)
	}
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
					firstErr = a.fail(c, errs[i])
				}
			default:
				a.done(c)
			}
		}
		if firstErr != nil {
			return firstErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// applyConcurrency bounds the RabbitMQ declarations in flight at once.
const applyConcurrency = 8
