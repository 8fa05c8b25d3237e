package redrive

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// An archive is never changed by a redrive that reads it: run twice, the
// same redrive would send every message twice. The ledger remembers what
// was redriven from each archive, so that a second run can be refused.
//
// An archive is known by a hash of its content and the queue read from
// it: a copy or a rename is the same archive, a file rewritten with other
// messages is another one. Each run appends one line to
// StateDir()/redriven/ARCHIVE.jsonl.

// LedgerEntry is one redrive from an archive.
type LedgerEntry struct {
	Time        time.Time `json:"time"`
	Archive     string    `json:"archive"` // the file, as given
	Queue       string    `json:"queue"`
	Destination string    `json:"destination"` // redacted
	IDs         []string  `json:"ids"`         // fingerprints (broker.Fingerprint)
}

// LedgerDir is StateDir()/redriven.
func LedgerDir() string { return filepath.Join(StateDir(), "redriven") }

// ArchiveKey identifies the messages of queue in the archive file at path
// by a hash of the file's content.
func ArchiveKey(path, queue string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("archive %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("archive %s: %w", path, err)
	}
	h.Write([]byte("\x00" + queue))
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// Redriven tells how many of ids the ledger of key records as redriven to
// dest, and the most recent such run.
func Redriven(dir, key, dest string, ids []string) (int, LedgerEntry, error) {
	f, err := os.Open(filepath.Join(dir, key+".jsonl"))
	if os.IsNotExist(err) {
		return 0, LedgerEntry{}, nil
	}
	if err != nil {
		return 0, LedgerEntry{}, err
	}
	defer f.Close()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	seen := map[string]bool{}
	var last LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var e LedgerEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Destination != dest {
			continue
		}
		hit := false
		for _, id := range e.IDs {
			if want[id] && !seen[id] {
				seen[id], hit = true, true
			}
		}
		if hit {
			last = e
		}
	}
	return len(seen), last, sc.Err()
}

// RecordRedriven appends a run to the ledger of key (mode 0600).
func RecordRedriven(dir, key string, e LedgerEntry) error {
	if len(e.IDs) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ledger %s: %w", dir, err)
	}
	path := filepath.Join(dir, key+".jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	line, _ := json.Marshal(e)
	_, err = f.Write(append(line, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	return nil
}
