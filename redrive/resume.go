package redrive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ResumeState is what interrupted runs of one source recorded.
type ResumeState struct {
	mu sync.Mutex
	// Headers are the interrupted runs, oldest first.
	Headers []JournalHeader
	Paths   []string
	// confirmed counts, per fingerprint, messages confirmed at the
	// destination and never acknowledged.
	confirmed map[string]int
	// Unconfirmed are fingerprints published and never confirmed: they may
	// or may not have arrived.
	Unconfirmed []string
	report0     ResumeReport
	locks       []*os.File
	// LastActive is when an interrupted run last wrote its journal: on SQS
	// the messages it had taken stay hidden until their visibility timeout,
	// counted from about then, ends.
	LastActive   time.Time
	hiddenNotice bool
	// chosen are the messages the interrupted runs may move, when every
	// one of them recorded its choice (JournalHeader.Chosen); nil when
	// one selected by its plan.
	chosen map[string]bool
}

// ResumeReport tells what the interrupted runs left behind.
type ResumeReport struct {
	Journals int `json:"journals"`
	// ConfirmedNotAcked were at the destination and still in the source.
	ConfirmedNotAcked int `json:"confirmed_not_acked"`
	// InFlight were published and not confirmed when the run stopped;
	// published again, each may now be at the destination twice.
	InFlight    int      `json:"in_flight"`
	InFlightIDs []string `json:"in_flight_ids,omitempty"`
	// AckedOnSight were removed from the source without publishing again.
	AckedOnSight int64 `json:"acked_on_sight"`
	// MaybeNotAcked were acknowledged in the last moments of a run, and
	// the broker may not have received those acknowledgements: any of them
	// still in the source was moved again, and may now be at the
	// destination twice.
	MaybeNotAcked    int      `json:"maybe_not_acked"`
	MaybeNotAckedIDs []string `json:"maybe_not_acked_ids,omitempty"`
}

// ErrNoJournal is returned by LoadInterrupted when there is nothing to
// resume.
var ErrNoJournal = errors.New("no interrupted redrive to resume")

// Interrupted lists the journals in dir for key that belong to interrupted
// runs (no end line, not locked by a running process).
func Interrupted(dir, key string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, key+"-*.journal"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range matches {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if lockFile(f, true) != nil {
			f.Close() // a running process holds it
			continue
		}
		ended := hasEnd(f)
		unlockFile(f)
		f.Close()
		if !ended {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func hasEnd(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	off := st.Size() - 4096
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return false
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	return len(lines) > 0 && bytes.HasPrefix(lines[len(lines)-1], []byte("E "))
}

// LoadInterrupted reads and locks every interrupted journal of key. Finish
// the resumed run with Options.Resume set; the journals are marked finished
// when it completes.
func LoadInterrupted(dir, key string) (*ResumeState, error) {
	paths, err := Interrupted(dir, key)
	if err != nil {
		return nil, err
	}
	return LoadJournals(paths)
}

// LoadJournals reads and locks the interrupted journals at paths (of one
// source, from Interrupted or ListJournals), as LoadInterrupted does.
func LoadJournals(paths []string) (*ResumeState, error) {
	if len(paths) == 0 {
		return nil, ErrNoJournal
	}
	r := &ResumeState{confirmed: map[string]int{}}
	unconfirmed := map[string]int{}
	chosen, allChose := map[string]bool{}, true
	for _, p := range paths {
		if err := scrubJournal(p); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			r.release()
			return nil, fmt.Errorf("journal %s: %w", p, err)
		}
		if err := lockFile(f, true); err != nil {
			f.Close()
			continue
		}
		r.locks = append(r.locks, f)
		r.Paths = append(r.Paths, p)
		if st, err := f.Stat(); err == nil && st.ModTime().After(r.LastActive) {
			r.LastActive = st.ModTime()
		}
		// The acknowledgements this journal recorded last, up to its hold.
		var lastAcked []string
		ackHold := 0
		chose := false
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			line := sc.Text()
			if len(line) < 2 {
				continue
			}
			rest := line[2:]
			switch line[0] {
			case 'H':
				var h JournalHeader
				if json.Unmarshal([]byte(rest), &h) == nil {
					r.Headers = append(r.Headers, h.redacted())
					chose = h.Chosen > 0
				}
			case 'S':
				for _, id := range strings.Fields(rest) {
					chosen[unescapeID(id)] = true
				}
			case 'B':
				var b journalBegin
				if json.Unmarshal([]byte(rest), &b) == nil {
					ackHold = b.AckHold
				}
			case 'P', 'C', 'A':
				// The last line may be cut short by a kill: an incomplete
				// line has no newline and bufio still returns it; an ID cut
				// short never matches a real one.
				for _, id := range strings.Fields(rest) {
					id = unescapeID(id)
					switch line[0] {
					case 'P':
						unconfirmed[id]++
					case 'C':
						if unconfirmed[id] > 0 {
							unconfirmed[id]--
						}
						r.confirmed[id]++
					case 'A':
						if ackHold > 0 {
							lastAcked = append(lastAcked, id)
							if len(lastAcked) > 2*ackHold {
								lastAcked = append(lastAcked[:0], lastAcked[len(lastAcked)-ackHold:]...)
							}
						}
						if r.confirmed[id] > 0 {
							r.confirmed[id]--
						} else if unconfirmed[id] > 0 {
							// Acknowledged without a publish (an ack on
							// sight of a resumed run).
							unconfirmed[id]--
						}
					}
				}
			}
		}
		allChose = allChose && chose
		if len(lastAcked) > ackHold {
			lastAcked = lastAcked[len(lastAcked)-ackHold:]
		}
		r.report0.MaybeNotAcked += len(lastAcked)
		r.report0.MaybeNotAckedIDs = append(r.report0.MaybeNotAckedIDs, lastAcked...)
	}
	if len(r.Paths) == 0 {
		return nil, ErrNoJournal
	}
	if allChose {
		r.chosen = chosen
	}
	for id, n := range r.confirmed {
		if n <= 0 {
			delete(r.confirmed, id)
			continue
		}
		r.report0.ConfirmedNotAcked += n
	}
	for id, n := range unconfirmed {
		for i := 0; i < n; i++ {
			r.Unconfirmed = append(r.Unconfirmed, id)
		}
	}
	sort.Strings(r.Unconfirmed)
	r.report0.Journals = len(r.Paths)
	r.report0.InFlight = len(r.Unconfirmed)
	r.report0.InFlightIDs = r.Unconfirmed
	if len(r.report0.InFlightIDs) > 100 {
		r.report0.InFlightIDs = r.report0.InFlightIDs[:100]
	}
	if len(r.report0.MaybeNotAckedIDs) > 100 {
		r.report0.MaybeNotAckedIDs = r.report0.MaybeNotAckedIDs[:100]
	}
	return r, nil
}

// Chosen are the only messages the interrupted runs may move, sorted:
// those their confirmed previews chose (JournalHeader.Chosen). A resumed
// run moves only these (Options.IDs), so that a message that arrived
// since, even one its selection matches, stays. Nil when a run selected
// by its plan alone.
func (r *ResumeState) Chosen() []string {
	if r.chosen == nil {
		return nil
	}
	ids := make([]string, 0, len(r.chosen))
	for id := range r.chosen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Plan is the plan of the most recent interrupted run.
func (r *ResumeState) Plan() JournalHeader {
	if len(r.Headers) == 0 {
		return JournalHeader{}
	}
	return r.Headers[len(r.Headers)-1]
}

// takeConfirmed reports whether a message with this fingerprint was
// confirmed at the destination by an interrupted run and not yet
// acknowledged, and uses that record up.
func (r *ResumeState) takeConfirmed(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.confirmed[id] > 0 {
		r.confirmed[id]--
		return true
	}
	return false
}

func (r *ResumeState) report() *ResumeReport {
	rep := r.report0
	return &rep
}

// finish marks the interrupted journals finished (after the resumed run
// completed) and unlocks them.
func (r *ResumeState) finish() error {
	var errs []error
	line, _ := json.Marshal(journalEnd{Time: time.Now().UTC(), Outcome: "resumed", Complete: true})
	for _, f := range r.locks {
		if _, err := f.Write(append(append([]byte("E "), line...), '\n')); err != nil {
			errs = append(errs, err)
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	r.release()
	return errors.Join(errs...)
}

// EndInterrupted ends the interrupted journals at paths with outcome
// (such as "superseded": a later run did the same work) so that they are
// no longer offered to --resume, and returns how many it ended. A journal
// a running process holds, or one that ended meanwhile, is left alone.
func EndInterrupted(paths []string, outcome string, now time.Time) (int, error) {
	var errs []error
	n := 0
	line, _ := json.Marshal(journalEnd{Time: now.UTC(), Outcome: outcome, Complete: true})
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			continue
		}
		if lockFile(f, true) != nil {
			f.Close()
			continue
		}
		if !hasEnd(f) {
			_, err := f.Write(append(append([]byte("E "), line...), '\n'))
			if serr := f.Sync(); err == nil {
				err = serr
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("journal %s: %w", p, err))
			} else {
				n++
			}
		}
		unlockFile(f)
		f.Close()
	}
	return n, errors.Join(errs...)
}

// Release unlocks the journals without marking them finished.
func (r *ResumeState) Release() { r.release() }

func (r *ResumeState) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.locks {
		unlockFile(f)
		f.Close()
	}
	r.locks = nil
}
