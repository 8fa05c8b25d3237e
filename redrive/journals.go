package redrive

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Journal states, as ListJournals reports them.
const (
	JournalRunning     = "running"     // locked by a running process
	JournalInterrupted = "interrupted" // no end line: a resumed redrive finishes it
	JournalFinished    = "finished"    // ended: kept only as a record
)

// JournalInfo describes one journal file.
type JournalInfo struct {
	Path     string        `json:"path"`
	State    string        `json:"state"`
	Modified time.Time     `json:"modified"`
	Header   JournalHeader `json:"header"`
}

// ListJournals describes every journal in dir, oldest first.
func ListJournals(dir string) ([]JournalInfo, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.journal"))
	if err != nil {
		return nil, err
	}
	var out []JournalInfo
	for _, p := range matches {
		// A journal an earlier version wrote may hold a secret: gone on
		// first read. One that cannot be rewritten now is listed redacted.
		_ = scrubJournal(p)
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		ji := JournalInfo{Path: p, State: JournalInterrupted}
		if st, err := f.Stat(); err == nil {
			ji.Modified = st.ModTime()
		}
		if line, err := bufio.NewReader(f).ReadString('\n'); err == nil && strings.HasPrefix(line, "H ") {
			_ = json.Unmarshal([]byte(line[2:]), &ji.Header)
			ji.Header = ji.Header.redacted()
		}
		if lockFile(f, true) != nil {
			ji.State = JournalRunning
		} else {
			if hasEnd(f) {
				ji.State = JournalFinished
			}
			unlockFile(f)
		}
		f.Close()
		out = append(out, ji)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.Before(out[j].Modified) })
	return out, nil
}

// PruneJournals removes the finished journals in dir last written more
// than olderThan before now (0: every finished one) and returns their
// paths. Interrupted and running journals are never removed.
func PruneJournals(dir string, olderThan time.Duration, now time.Time) ([]string, error) {
	js, err := ListJournals(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, j := range js {
		if j.State != JournalFinished || now.Sub(j.Modified) < olderThan {
			continue
		}
		if err := os.Remove(j.Path); err == nil {
			removed = append(removed, j.Path)
		}
	}
	return removed, nil
}

// RemoveJournals removes the journals at paths that are not running (a
// running process holds its lock) and returns the paths removed.
func RemoveJournals(paths []string) ([]string, error) {
	var removed []string
	var errs []error
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if lockFile(f, true) != nil {
			f.Close()
			continue
		}
		// Removed while locked, so that no run resumes it meanwhile.
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, p)
		}
		unlockFile(f)
		f.Close()
	}
	return removed, errors.Join(errs...)
}

// JournalMaxAge is how long a finished journal is kept before a later run
// removes it.
const JournalMaxAge = 7 * 24 * time.Hour
