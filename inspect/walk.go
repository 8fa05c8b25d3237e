package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// WalkOptions shape a filtered peek.
type WalkOptions struct {
	// Peek is passed to the Peeker. Peek.Limit bounds how many messages are
	// read; without a Filter it defaults to Limit.
	Peek broker.PeekOptions
	// Filter selects the messages handed to visit; nil selects all.
	Filter *Query
	// Groups, when set, selects the messages of these groups too (AND).
	Groups *GroupSelector
	// Limit is the most messages handed to visit; 0 means no limit.
	Limit int
	// Window selects by age, at Now (default time.Now()).
	Window AgeWindow
	Now    time.Time
}

// Walk peeks at queue through p and calls visit for each message that
// matches opts.Filter, in queue order, until opts.Limit messages were
// visited, the queue ends, or visit returns broker.ErrStop. Messages that do
// not match are left exactly as the peek leaves every message: it is still a
// peek, and the Peeker's safety rules apply to all of them. Messages handed
// to visit must be cloned to be kept.
func Walk(ctx context.Context, p broker.Peeker, queue string, opts WalkOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	po := opts.Peek
	if opts.Filter == nil && opts.Groups == nil && opts.Window.IsZero() && opts.Limit > 0 && (po.Limit == 0 || po.Limit > opts.Limit) {
		po.Limit = opts.Limit
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	visited := 0
	rep, err := p.Peek(ctx, queue, po, func(m *broker.Message) (err error) {
		// A panic over this message's values ends the walk with an error,
		// so the Peeker settles what it holds (a rotation completes).
		defer broker.Recover(m.ID, &err)
		if !opts.Window.Admits(m, now) {
			return nil
		}
		if opts.Filter != nil {
			ok, err := opts.Filter.Match(ctx, m)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		}
		if opts.Groups != nil {
			ok, err := opts.Groups.Match(ctx, m)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		}
		if err := visit(m); err != nil {
			return err
		}
		visited++
		if opts.Limit > 0 && visited >= opts.Limit {
			return broker.ErrStop
		}
		return nil
	})
	if errors.Is(err, broker.ErrStop) {
		err = nil
	}
	return rep, err
}
