package redrive

import (
	"strings"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// tally is the tally stage: it counts what a run did into its Summary,
// under its own lock, and keeps the first fatal error, which stops the run.
type tally struct {
	maxIDs  int
	onMoved func([]string)  // Options.Moved
	notify  func(string)    // Options.Notice
	words   broker.Renderer // Options.Words
	mu      sync.Mutex
	sum     Summary
	fatal   error
}

func (t *tally) examined() {
	t.mu.Lock()
	t.sum.Examined++
	t.mu.Unlock()
}

// skip counts a message left in the source on purpose.
func (t *tally) skip(reason, id string, err error) {
	t.mu.Lock()
	t.sum.skip(reason)
	t.example(reason, id, err)
	t.mu.Unlock()
}

// fail counts a message that was meant to move and stayed in the source.
func (t *tally) fail(reason, id string, err error) {
	t.mu.Lock()
	t.sum.fail(reason, 1)
	t.example(reason, id, err)
	t.mu.Unlock()
}

// failN counts n failures without examples.
func (t *tally) failN(reason string, n int64) {
	t.mu.Lock()
	t.sum.fail(reason, n)
	t.mu.Unlock()
}

// groupHeld counts a selected message held back by its FIFO group.
func (t *tally) groupHeld(failed bool) {
	t.mu.Lock()
	if failed {
		t.sum.fail(ReasonGroupHeld, 1)
	} else {
		t.sum.skip(ReasonGroupHeld)
	}
	t.mu.Unlock()
}

// example keeps a few error lines per reason; mu held.
func (t *tally) example(reason, id string, err error) {
	if err == nil {
		return
	}
	n := 0
	prefix := reason + ": "
	for _, s := range t.sum.Errors {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	if n < 3 {
		t.sum.Errors = append(t.sum.Errors, prefix+id+": "+broker.RenderError(err, t.words))
	}
}

// resent counts a confirmed message that may be at the destination twice.
func (t *tally) resent(id string) {
	t.mu.Lock()
	t.sum.Resent++
	if len(t.sum.ResentIDs) < t.maxIDs {
		t.sum.ResentIDs = append(t.sum.ResentIDs, id)
	}
	t.mu.Unlock()
}

// moved counts acknowledged items: confirmed at their destination, or
// confirmed by an interrupted run.
func (t *tally) moved(items []item, discard bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.onMoved != nil && len(items) > 0 {
		ids := make([]string, 0, len(items))
		for _, it := range items {
			if !it.sentBefore {
				ids = append(ids, it.id)
			}
		}
		if len(ids) > 0 {
			t.onMoved(ids)
		}
	}
	for _, it := range items {
		if it.sentBefore {
			t.sum.DeliveredAgain++
			continue
		}
		t.sum.Moved++
		if it.ackNow && it.dest == "" {
			if t.sum.Resumed != nil {
				t.sum.Resumed.AckedOnSight++
			}
			t.sum.dest("(moved by the interrupted run)", 1)
		} else {
			if it.out != nil {
				t.sum.Archived += boolInt(discard)
			}
			t.sum.dest(it.dest, 1)
			if it.out != nil {
				t.sum.rule(it.dest, it.out.Dest.Via)
			}
		}
		if len(t.sum.IDs) < t.maxIDs {
			t.sum.IDs = append(t.sum.IDs, it.id)
		} else {
			t.sum.IDsTruncated = true
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (t *tally) rotated(n int) {
	t.mu.Lock()
	t.sum.Rotated += int64(n)
	t.mu.Unlock()
}

func (t *tally) returned(n int) {
	t.mu.Lock()
	t.sum.Returned += int64(n)
	t.mu.Unlock()
}

func (t *tally) notReturned(n int) {
	t.mu.Lock()
	t.sum.NotReturned += int64(n)
	t.mu.Unlock()
}

// notice records a one-line notice and passes it on.
func (t *tally) notice(s string) {
	t.mu.Lock()
	t.sum.Notices = append(t.sum.Notices, s)
	t.mu.Unlock()
	if t.notify != nil {
		t.notify(s)
	}
}

// setFatal keeps the first error that stops the run.
func (t *tally) setFatal(err error) {
	t.mu.Lock()
	if t.fatal == nil {
		t.fatal = err
	}
	t.mu.Unlock()
}

func (t *tally) failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fatal != nil
}

// snapshot is the counts of a progress report.
func (t *tally) snapshot() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Progress{Examined: t.sum.Examined, Moved: t.sum.Moved, Skipped: t.sum.TotalSkipped(), Failed: t.sum.TotalFailed()}
}
