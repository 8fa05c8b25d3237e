package redrive

import (
	"sync"
	"sync/atomic"
)

// groups is the order stage: it numbers deliveries and, on a source with
// ordered message groups (broker.Traits.Ordered), keeps each group's order:
// a message that stays in the source stops its group, and no later message
// of the group (by pos) moves in this run.
type groups struct {
	ordered bool
	pos     atomic.Int64
	mu      sync.Mutex
	stopped map[string]groupStop
	// chosen are the groups a run that takes whole groups chose (mu).
	chosen map[string]bool
}

// groupStop is where a group stopped, and whether a failure (rather than a
// selection) stopped it.
type groupStop struct {
	pos    int64
	failed bool
}

// stop records that the message at pos of group stays in the source.
func (g *groups) stop(group string, pos int64, failed bool) {
	g.mu.Lock()
	if st, ok := g.stopped[group]; !ok || pos < st.pos {
		g.stopped[group] = groupStop{pos: pos, failed: failed}
	}
	g.mu.Unlock()
}

// stoppedBefore reports whether group stopped at a message before pos.
func (g *groups) stoppedBefore(group string, pos int64) (groupStop, bool) {
	if group == "" {
		return groupStop{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.stopped[group]
	return st, ok && st.pos < pos
}

// order numbers a decided item and keeps its group's order: a message that
// stays in the source stops its group, and a later message of a stopped
// group stays too. (An ordered source delivers no more of a group while one
// of its messages is held, so this only concerns messages that came in the
// same receive; a group ID on the outgoing message counts too.)
func (e *engine) order(it *item) {
	g := &e.groups
	it.pos = g.pos.Add(1)
	if !g.ordered && (it.out == nil || it.out.GroupID == "") {
		return
	}
	it.group = it.d.Message.SystemAttributes["MessageGroupId"]
	if it.group == "" && it.out != nil {
		it.group = it.out.GroupID
	}
	if it.group == "" || it.ackNow {
		return
	}
	if it.out == nil {
		if !it.again {
			g.stop(it.group, it.pos, it.failed)
		}
		return
	}
	if st, ok := g.stoppedBefore(it.group, it.pos); ok {
		e.holdForGroup(it, st)
	}
}

// holdForGroup leaves a selected message in the source because an earlier
// message of its group stays there.
func (e *engine) holdForGroup(it *item, st groupStop) {
	it.out, it.dest = nil, ""
	it.reason, it.failed = ReasonGroupHeld, st.failed
	e.selected.Add(-1)
	e.tally.groupHeld(st.failed)
}
