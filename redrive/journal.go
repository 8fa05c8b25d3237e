package redrive

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// A journal is a local append-only file that records the progress of one
// run, message by message (by fingerprint):
//
//	H {header JSON}      the run: source, destination, selection
//	S id id …            the only messages the run may move (chosen by a
//	                     confirmed preview; the header's "chosen" counts them)
//	P id id …            about to publish (sent, not yet confirmed)
//	C id id …            confirmed by the destination
//	B {"ack_hold":N}     acknowledgements the source may hold back
//	A id id …            acknowledged (removed) in the source
//	E {end JSON}         the run ended (outcome, counts)
//
// The running process holds an exclusive lock on it. A journal without an
// E line and without a lock belongs to an interrupted run. Resuming reads
// every such journal of the same source: a message confirmed but never
// acknowledged is acknowledged on sight instead of being published again;
// a message published but never confirmed may or may not have arrived, and
// is published again (a possible duplicate, reported). The last N
// acknowledgements (N from the B line: a RabbitMQ consumer sends them as
// one, behind the lowest unsettled delivery, and a kill drops what the
// socket had not delivered) may never have reached the broker: those
// messages may still be in the source, are moved again if so, and are
// reported as possible duplicates too. Acknowledging them on sight instead
// would lose a copy that was really removed and later dead-lettered again.
//
// Lines are written (not fsynced) at each step, which survives the process
// being killed; the file is fsynced when the run ends.

// JournalHeader describes the run a journal belongs to.
type JournalHeader struct {
	Version     int       `json:"v"`
	RunID       string    `json:"run_id"`
	Key         string    `json:"key"`
	Started     time.Time `json:"started"`
	Broker      string    `json:"broker"` // redacted
	Source      string    `json:"source"`
	Destination string    `json:"destination"`
	// Plan holds the options needed to finish the run the same way
	// (filter, transform, ids, limit, headers…), as the command wrote them
	// but redacted (broker.Redact): a resumed run takes the passwords from
	// where the first run took them, never from the journal.
	Plan map[string]string `json:"plan,omitempty"`
	PID  int               `json:"pid"`
	// Chosen counts the message IDs of the journal's S lines: the run
	// moves only those (a confirmed preview chose them), and so does a
	// resumed run, whatever its selection matches now. 0: the run selects
	// by its plan.
	Chosen int `json:"chosen,omitempty"`
	// ChosenIDs are written as the S lines by CreateJournal.
	ChosenIDs []string `json:"-"`
}

// Journal is an open journal of a running redrive.
type Journal struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	hdr    JournalHeader
	buf    bytes.Buffer
	closed bool
	// steps is whether any P, C or A line was written: a run that failed
	// before it touched a message leaves nothing to resume.
	steps bool
}

// JournalKey names the journals of one source queue on one broker.
func JournalKey(brokerAddr, queue string) string {
	h := sha256.Sum256([]byte(brokerAddr + "\x00" + queue))
	return hex.EncodeToString(h[:8])
}

// StateDir is where dlq keeps its state: $XDG_STATE_HOME/dlq
// (~/.local/state/dlq).
func StateDir() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "dlq")
}

// JournalDir is StateDir()/journal.
func JournalDir() string { return filepath.Join(StateDir(), "journal") }

// CreateJournal starts a journal for a new run in dir (mode 0600) and locks
// it. hdr.Key must be set (JournalKey); RunID and Started are filled in.
func CreateJournal(dir string, hdr JournalHeader) (*Journal, error) {
	if hdr.Key == "" {
		return nil, errors.New("journal: no key")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	if hdr.RunID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		hdr.RunID = hex.EncodeToString(b[:])
	}
	if hdr.Started.IsZero() {
		hdr.Started = time.Now().UTC()
	}
	hdr.Version = 1
	hdr.PID = os.Getpid()
	hdr = hdr.redacted()
	path := filepath.Join(dir, hdr.Key+"-"+hdr.RunID+".journal")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if err := lockFile(f, false); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: lock: %w", path, err)
	}
	chosen := hdr.ChosenIDs
	hdr.ChosenIDs, hdr.Chosen = nil, len(chosen)
	j := &Journal{path: path, f: f, hdr: hdr}
	line, _ := json.Marshal(hdr)
	var buf bytes.Buffer
	buf.WriteString("H ")
	buf.Write(line)
	buf.WriteByte('\n')
	// The chosen IDs go out with the header, in one write: a journal
	// never holds a header without them.
	for i, id := range chosen {
		if i%1000 == 0 {
			if i > 0 {
				buf.WriteByte('\n')
			}
			buf.WriteByte('S')
		}
		buf.WriteByte(' ')
		buf.WriteString(escapeID(id))
	}
	if len(chosen) > 0 {
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return j, nil
}

// redacted is h with every secret hidden (broker.Redact): journals stay on
// disk and are listed, and never hold a password.
func (h JournalHeader) redacted() JournalHeader {
	h.Broker = broker.Redact(h.Broker)
	h.Source = broker.Redact(h.Source)
	h.Destination = broker.Redact(h.Destination)
	if h.Plan != nil {
		p := make(map[string]string, len(h.Plan))
		for k, v := range h.Plan {
			p[k] = broker.Redact(v)
		}
		h.Plan = p
	}
	return h
}

// scrubJournal rewrites a journal whose header holds a secret, as earlier
// versions of dlq wrote them, with the secret redacted: a new file with the
// old one's modification time replaces it at once (rename), so that a
// kill leaves one or the other. A journal that a running process holds is
// left for a later read.
func scrubJournal(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "H ") {
		return nil
	}
	var h JournalHeader
	if json.Unmarshal([]byte(line[2:]), &h) != nil {
		return nil
	}
	clean, _ := json.Marshal(h.redacted())
	if again, _ := json.Marshal(h); bytes.Equal(clean, again) {
		return nil
	}
	if lockFile(f, true) != nil {
		return nil
	}
	defer unlockFile(f)
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".scrub-*.tmp")
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	var buf bytes.Buffer
	buf.WriteString("H ")
	buf.Write(clean)
	buf.WriteByte('\n')
	buf.Write(data[len(line):])
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if err := os.Chtimes(tmp.Name(), st.ModTime(), st.ModTime()); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	done = true
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// RunID identifies the run.
func (j *Journal) RunID() string { return j.hdr.RunID }

// begin records how many acknowledgements the source may hold back.
func (j *Journal) begin(ackHold int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	line, _ := json.Marshal(journalBegin{AckHold: ackHold})
	if _, err := j.f.Write(append(append([]byte("B "), line...), '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

type journalBegin struct {
	AckHold int `json:"ack_hold"`
}

// record appends one step for ids.
func (j *Journal) record(step byte, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errors.New("journal closed")
	}
	j.buf.Reset()
	j.buf.WriteByte(step)
	for _, id := range ids {
		j.buf.WriteByte(' ')
		j.buf.WriteString(escapeID(id))
	}
	j.buf.WriteByte('\n')
	j.steps = true
	if _, err := j.f.Write(j.buf.Bytes()); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// escapeID keeps an ID one token: message-ids may hold spaces.
func escapeID(id string) string {
	if !strings.ContainsAny(id, " \n\\%") {
		return id
	}
	r := strings.NewReplacer("%", "%25", " ", "%20", "\n", "%0A", "\\", "%5C")
	return r.Replace(id)
}

func unescapeID(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	r := strings.NewReplacer("%20", " ", "%0A", "\n", "%5C", "\\", "%25", "%")
	return r.Replace(s)
}

type journalEnd struct {
	Time     time.Time        `json:"time"`
	Outcome  string           `json:"outcome"`
	Moved    int64            `json:"moved"`
	Failed   map[string]int64 `json:"failed,omitempty"`
	Error    string           `json:"error,omitempty"`
	Complete bool             `json:"complete"`
}

// end writes the end line when the run finished (a run that stopped on an
// error or a cancel stays resumable), fsyncs and closes the journal. A run
// that stopped before it touched a message (a missing queue, a refused
// login, a cancel at once) removes its journal instead: it has nothing to
// resume, and would otherwise be offered as interrupted.
func (j *Journal) end(s Summary, runErr error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if runErr != nil && !j.steps {
		// Removed while still locked, so that no other process takes it
		// for an interrupted run in between.
		err := os.Remove(j.path)
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("journal %s: %w", j.path, err)
		}
		return nil
	}
	var err error
	if runErr == nil {
		line, _ := json.Marshal(journalEnd{Time: time.Now().UTC(), Outcome: "ok", Moved: s.Moved, Failed: s.Failed, Complete: true})
		_, err = j.f.Write(append(append([]byte("E "), line...), '\n'))
	}
	if serr := j.f.Sync(); err == nil {
		err = serr
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Close ends the journal without an end line (the run stays resumable).
func (j *Journal) Close() error {
	return j.end(Summary{}, errors.New("closed"))
}

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
