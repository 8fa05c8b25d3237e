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
