package redrive

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// A canary redrive moves a selection in growing steps (by default 1, 5,
// 10%, 25%, then the rest). Each step is an ordinary run of the engine,
// with every guarantee a redrive has; after it the canary waits a settle
// time and counts the messages it moved that came back to the source (or to
// another dead-letter queue of their route), which it tells from other
// failures by the run ID in their x-dlq-redrive record. When more came back
// than allowed it stops: every selected message not moved yet stays where
// it was.

// CanaryStep is the size of one step: a number of messages, or a share of
// the selection.
type CanaryStep struct {
	Count   int64   `json:"count,omitempty"`
	Percent float64 `json:"percent,omitempty"`
}

// String is the step as ParseCanarySteps reads it: "5", "10%".
func (s CanaryStep) String() string {
	if s.Percent > 0 {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(s.Count, 10)
}

// size is how many messages the step moves out of a selection of total:
// a share is rounded up, and never less than one message.
func (s CanaryStep) size(total int64) int64 {
	if s.Percent > 0 {
		n := int64(math.Ceil(s.Percent * float64(total) / 100))
		return max(n, 1)
	}
	return s.Count
}

// DefaultCanarySteps are the steps before the rest: 1, 5, 10%, 25%.
var DefaultCanarySteps = []CanaryStep{{Count: 1}, {Count: 5}, {Percent: 10}, {Percent: 25}}

// ParseCanarySteps reads a comma-separated list of steps, each a number of
// messages or a percentage of the selection ("1,5,10%,25%"). The rest of
// the selection always follows as a last step; "rest" may end the list.
func ParseCanarySteps(s string) ([]CanaryStep, error) {
	var steps []CanaryStep
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "rest" && i == len(parts)-1 && i > 0 {
			break
		}
		if pct, ok := strings.CutSuffix(p, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || !(f > 0 && f < 100) {
				return nil, fmt.Errorf("step %q: a share is more than 0%% and less than 100%%, such as 10%%", p)
			}
			steps = append(steps, CanaryStep{Percent: f})
			continue
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("step %q: give a number of messages (1 or more) or a share such as 10%%, separated by commas", p)
		}
		steps = append(steps, CanaryStep{Count: n})
	}
	if len(steps) == 0 {
		return nil, errors.New("no steps: give at least one, such as 1,5,10%,25%")
	}
	return steps, nil
}

// CanaryMinWait is the settle time when nothing on the route asks for a
// longer one.
const CanaryMinWait = 30 * time.Second

// CanaryOptions shape a canary redrive.
type CanaryOptions struct {
	// Steps come before the rest (nil: DefaultCanarySteps).
	Steps []CanaryStep
	// Wait is the settle time after each step (see RouteOf).
	Wait time.Duration
	// MaxReturns is how many moved messages may come back before the
	// canary stops (0: none may).
	MaxReturns int64
	// Watch are the queues where returns are counted (nil: the source).
	Watch []Watched
	// Total is the size of the selection that percentages are of; 0: the
	// canary counts it (the queue's depth, or a dry run of a selection).
	Total int64
	// Start is the index of the first step to run, and MovedBefore what
	// earlier attempts moved: a resumed canary goes on where it stopped.
	Start       int
	MovedBefore int64
	// Journal opens the journal of a step (nil: none).
	Journal func(step int) (*Journal, error)
	// OnStep is told the report after each step was counted.
	OnStep func(CanaryReport)
	// OnWait is told before each settle wait.
	OnWait func(step int, moved int64, wait time.Duration)
}

// ErrCanaryStopped is the error of a canary that stopped itself because
// moved messages came back.
var ErrCanaryStopped = errors.New("canary stopped")

// CanaryReport is what a canary did, step by step.
type CanaryReport struct {
	// Summary adds up the steps' runs (Examined counts each message once:
	// what earlier steps moved, and what the last step looked at).
	Summary Summary `json:"-"`
	// Selected is the size of the selection the steps are measured on.
	Selected   int64              `json:"selected"`
	Plan       []CanaryPlanStep   `json:"plan"`
	Steps      []CanaryStepReport `json:"steps"`
	Wait       string             `json:"wait"`
	MaxReturns int64              `json:"max_returns"`
	Watched    []string           `json:"watched"`
	// Returned is how many moved messages came back, by the last count.
	Returned int64 `json:"returned"`
	// Returns are those messages by queue and failure group.
	Returns []ReturnGroup `json:"returns,omitempty"`
	// Moved counts every message the canary moved, earlier attempts too.
	Moved int64 `json:"moved"`
	// Left is how many selected messages were not moved.
	Left int64 `json:"left"`
	// Stopped is set when returns stopped the canary.
	Stopped *CanaryStop `json:"stopped,omitempty"`
	// NextStep is the index of the step a resumed canary starts with (the
	// one that stopped, at its size), -1 when every step ran.
	NextStep int      `json:"next_step"`
	RunIDs   []string `json:"run_ids,omitempty"`
}

// CanaryPlanStep is one planned step: its label ("1", "10%", "rest") and
// how many messages that is (0 for the rest).
type CanaryPlanStep struct {
	Label string `json:"label"`
	Size  int64  `json:"size"`
}

// CanaryStepReport is one step that ran.
type CanaryStepReport struct {
	Step   int    `json:"step"` // 1-based, of the plan
	Label  string `json:"label"`
	RunID  string `json:"run_id,omitempty"`
	Moved  int64  `json:"moved"`
	Failed int64  `json:"failed,omitempty"`
	// Returned counts, after this step's wait, the messages of every step
	// so far that came back.
	Returned int64 `json:"returned"`
	// ReadChanged is what counting changed in the watched queues (a
	// rotation, receive counts); OutOfReach what it could not see.
	ReadChanged string `json:"read_changed,omitempty"`
	OutOfReach  int64  `json:"out_of_reach,omitempty"`
}

// CanaryStop says where and why a canary stopped.
type CanaryStop struct {
	Step       int    `json:"step"`
	Label      string `json:"label"`
	Returned   int64  `json:"returned"`
	MaxReturns int64  `json:"max_returns"`
}

// Canary moves the selection of opts in steps and stops when moved
// messages come back (see CanaryOptions). A dry run (opts.DryRun) reads as
// a dry run does and reports the plan. On a stop the error is
// ErrCanaryStopped; on any other error or a cancel it is that error, and the
// report says what the steps before did.
func Canary(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options, c CanaryOptions) (CanaryReport, error) {
	if dst == nil {
		dst = src
	}
	steps := c.Steps
	if len(steps) == 0 {
		steps = DefaultCanarySteps
	}
	r := CanaryReport{Wait: c.Wait.String(), MaxReturns: c.MaxReturns, NextStep: -1, Moved: c.MovedBefore}
	watch := c.Watch
	if len(watch) == 0 {
		watch = []Watched{{src, queue}}
	}
	for _, w := range watch {
		r.Watched = append(r.Watched, w.Queue)
	}
	total := c.Total
	if opts.DryRun {
		s, err := Run(ctx, src, queue, dst, opts)
		r.Summary = s
		if total <= 0 {
			total = sum(s.Destinations)
		}
		r.plan(steps, total)
		r.Left = total
		return r, err
	}
	if total <= 0 {
		total = opts.Selected
	}
	if total <= 0 {
		n, err := selectionSize(ctx, src, queue, dst, opts)
		if err != nil {
			r.Summary = newSummary(queue, opts.Dest.String(), false)
			return r, err
		}
		total = n
	}
	r.plan(steps, total)
	agg := newSummary(queue, opts.Dest.String(), false)
	agg.RunID = ""
	var mu sync.Mutex
	chosen := map[string]bool{} // shapes of the reasons of moved messages
	var runs []string
	start := max(c.Start, 0)
	for i := start; i < len(r.Plan); i++ {
		size := r.Plan[i].Size
		so := opts
		so.Limit = size
		if opts.Limit > 0 {
			left := opts.Limit - (r.Moved - c.MovedBefore)
			if left <= 0 {
				break
			}
			if size == 0 || left < size {
				so.Limit = left
			}
		}
		so.Selected = so.Limit
		if so.Limit == 0 {
			so.Selected = max(total-r.Moved, 0)
		}
		so.SkipRuns = append(append([]string{}, opts.SkipRuns...), runs...)
		so.WholeGroups = true
		so.Chosen = func(m *broker.Message) {
			shape := inspect.ShapeOf(inspect.Reason(m))
			mu.Lock()
			chosen[shape] = true
			mu.Unlock()
			if opts.Chosen != nil {
				opts.Chosen(m)
			}
		}
		if i != start {
			so.Resume = nil
		}
		so.Journal = nil
		if c.Journal != nil {
			j, err := c.Journal(i)
			if err != nil {
				r.Summary = agg
				r.NextStep = i
				return r, err
			}
			so.Journal = j
		}
		s, err := Run(ctx, src, queue, dst, so)
		if so.Journal != nil {
			_ = so.Journal.Close() // ended by the run; a no-op then
		}
		mergeStep(&agg, s)
		r.Moved += s.Moved
		r.Left = max(total-r.Moved, 0)
		if s.RunID != "" && s.Moved > 0 {
			runs = append(runs, s.RunID)
			r.RunIDs = append(r.RunIDs, s.RunID)
		}
		step := CanaryStepReport{Step: i + 1, Label: r.Plan[i].Label, RunID: s.RunID, Moved: s.Moved, Failed: s.TotalFailed()}
		r.Steps = append(r.Steps, step)
		r.Summary = agg
		if err != nil {
			r.NextStep = i
			return r, err
		}
		// The selection is used up when a step moved less than its size
		// and nothing failed (a failure leaves a message that a later step
		// meets again).
		last := size == 0 || (s.Moved < size && s.TotalFailed() == 0)
		if s.Moved == 0 && last {
			r.Steps = r.Steps[:len(r.Steps)-1]
			break
		}
		if c.OnWait != nil {
			c.OnWait(i+1, s.Moved, c.Wait)
		}
		if err := sleep(ctx, c.Wait); err != nil {
			agg.Cancelled = true
			r.Summary = agg
			r.NextStep = i + 1
			return r, err
		}
		n, groups, rep, err := countReturns(ctx, watch, set(runs), chosen, &mu)
		if err != nil {
			r.Summary = agg
			r.NextStep = i + 1
			return r, fmt.Errorf("count the messages that came back: %w", err)
		}
		r.Returned, r.Returns = n, groups
		st := &r.Steps[len(r.Steps)-1]
		st.Returned, st.ReadChanged, st.OutOfReach = n, rep.Changed, rep.OutOfReach
		if n > c.MaxReturns {
			r.Stopped = &CanaryStop{Step: i + 1, Label: r.Plan[i].Label, Returned: n, MaxReturns: c.MaxReturns}
			if !last {
				r.NextStep = i
			}
			if c.OnStep != nil {
				c.OnStep(r)
			}
			return r, ErrCanaryStopped
		}
		if last {
			if c.OnStep != nil {
				c.OnStep(r)
			}
			break
		}
		r.NextStep = i + 1
		if c.OnStep != nil {
			c.OnStep(r)
		}
		r.NextStep = -1
	}
	r.NextStep = -1
	return r, nil
}

// plan sizes the steps on a selection of total: every step of steps, then
// the rest.
func (r *CanaryReport) plan(steps []CanaryStep, total int64) {
	r.Selected = total
	r.Plan = r.Plan[:0]
	for _, st := range steps {
		r.Plan = append(r.Plan, CanaryPlanStep{Label: st.String(), Size: st.size(total)})
	}
	r.Plan = append(r.Plan, CanaryPlanStep{Label: "rest"})
}

// selectionSize counts the messages opts selects: the queue's depth when
// it selects all of them, else a dry run's count.
func selectionSize(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, opts Options) (int64, error) {
	if !opts.Selective() {
		if qi, ok := src.(broker.QueueInspector); ok {
			if q, err := qi.Queue(ctx, queue); err == nil {
				if opts.Limit > 0 && opts.Limit < q.Depth {
					return opts.Limit, nil
				}
				return q.Depth, nil
			}
		}
	}
	s, err := Preview(ctx, src, queue, dst, opts)
	if err != nil {
		return 0, err
	}
	return sum(s.Destinations), nil
}

// mergeStep adds a step's summary to the canary's.
func mergeStep(agg *Summary, s Summary) {
	agg.Examined = agg.Moved + s.Examined
	agg.Moved += s.Moved
	for k, v := range s.Destinations {
		agg.Destinations[k] += v
	}
	// What stays is what the last step left; a failure met again by a
	// later step is counted once.
	agg.Skipped = s.Skipped
	for k, v := range s.Failed {
		agg.Failed[k] = max(agg.Failed[k], v)
	}
	agg.IDs = append(agg.IDs, s.IDs...)
	agg.IDsTruncated = agg.IDsTruncated || s.IDsTruncated
	agg.Errors = s.Errors
	agg.Rotated += s.Rotated
	agg.Returned += s.Returned
	agg.NotReturned += s.NotReturned
	if s.Resumed != nil {
		agg.Resumed = s.Resumed
	}
	agg.Resent += s.Resent
	agg.ResentIDs = append(agg.ResentIDs, s.ResentIDs...)
	agg.DeliveredAgain += s.DeliveredAgain
	agg.Hidden = s.Hidden
	agg.Cancelled = agg.Cancelled || s.Cancelled
	agg.Elapsed += s.Elapsed
	agg.Notices = append(agg.Notices, s.Notices...)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
