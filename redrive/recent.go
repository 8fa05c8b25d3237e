package redrive

import "sync"

// maxRecentIDs bounds recentIDs: a message a broker delivers again after
// its delete comes back within seconds or minutes, long before a run has
// moved this many after it, and a run of millions keeps flat memory.
const maxRecentIDs = 1 << 17

// recentIDs is a set of the most recently added IDs, at most maxRecentIDs
// of them; the oldest go first. Safe for concurrent use.
type recentIDs struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

func (r *recentIDs) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = map[string]struct{}{}
	}
	if _, ok := r.set[id]; ok {
		return
	}
	if len(r.ring) < maxRecentIDs {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % maxRecentIDs
	}
	r.set[id] = struct{}{}
}

func (r *recentIDs) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[id]
	return ok
}
