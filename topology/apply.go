package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	t, ok := systemOf(p.System)
	if !ok {
		return res, broker.Errorf(broker.ErrUnsupported, "apply", "this broker connection cannot declare topology")
	}
	a := &applier{}
	err := t.Apply(ctx, b, p, progress, a)
	return a.res, err
}

// applier keeps what an apply did: the changes made, and the one that
// failed.
type applier struct{ res ApplyResult }

// done records a change made.
func (a *applier) done(c Change) { a.res.Applied = append(a.res.Applied, c) }

// fail records the change that failed and returns its error, naming the
// change unless the error names it already.
func (a *applier) fail(c Change, err error) error {
	cc := c
	a.res.Failed = &cc
	if broker.ErrorNames(err, c.Name) {
		return err
	}
	return fmt.Errorf("%s %s `%s`: %w", c.Action, c.Kind, c.Name, err)
}

// noApply refuses a change that has nothing to apply.
func noApply(c Change) error { return fmt.Errorf("%s `%s` has nothing to apply", c.Kind, c.Name) }

// IsConflict reports whether err is a refused plan or a broker conflict.
func IsConflict(err error) bool {
	var ce *ConflictError
	return errors.As(err, &ce) || errors.Is(err, broker.ErrConflict)
}
