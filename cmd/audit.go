package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// AuditRecord is one line of the audit log: what a mutating command did.
// It never holds a secret: the command line and broker are redacted.
type AuditRecord struct {
	Time        time.Time        `json:"time"`
	User        string           `json:"user"`
	Host        string           `json:"host"`
	Command     string           `json:"command"` // the command line, redacted
	Action      string           `json:"action"`  // redrive, discard, purge, topology-apply, tui-redrive, …
	Broker      string           `json:"broker,omitempty"`
	Source      string           `json:"source,omitempty"`
	Destination string           `json:"destination,omitempty"`
	Filter      string           `json:"filter,omitempty"`
	Groups      []string         `json:"groups,omitempty"` // failure group IDs selected (--group)
	Transform   string           `json:"transform,omitempty"`
	Counts      map[string]int64 `json:"counts,omitempty"` // examined, moved (redrive) or discarded (discard, purge), archived, skipped:R, failed:R
	IDs         []string         `json:"ids,omitempty"`    // message fingerprints
	Outcome     string           `json:"outcome"`          // ok, partial, failed, cancelled, dry-run, canary-stopped
	Error       string           `json:"error,omitempty"`
	// Canary is a canary redrive's steps, and where it stopped.
	Canary *AuditCanary `json:"canary,omitempty"`
}

// AuditCanary records a canary redrive: the selection its steps were
// measured on, each step's moves and the returns counted after it.
type AuditCanary struct {
	Selected   int64             `json:"selected"`
	Wait       string            `json:"wait"`
	MaxReturns int64             `json:"max_returns"`
	Steps      []AuditCanaryStep `json:"steps"`
	Returned   int64             `json:"returned"`
	Left       int64             `json:"left"`
	StoppedAt  int               `json:"stopped_at,omitempty"` // the step, 1-based
	RunIDs     []string          `json:"run_ids,omitempty"`
}

// AuditCanaryStep is one step of a canary redrive.
type AuditCanaryStep struct {
	Step     int    `json:"step"`
	Label    string `json:"label"`
	Moved    int64  `json:"moved"`
	Returned int64  `json:"returned"`
}

// AuditPath is the audit log file: --audit-log, the context's audit_log,
// DLQ_AUDIT_LOG, or $XDG_STATE_HOME/dlq/audit.jsonl
// (~/.local/state/dlq/audit.jsonl). The context is read only here, when a
// command writes or reads the log, not each time dlq starts.
func (f *Factory) AuditPath() string {
	if f.Options.AuditLog != "" {
		return f.Options.AuditLog
	}
	if s, err := f.resolveBroker(); err == nil && s.AuditLog != "" {
		return s.AuditLog
	}
	if p := os.Getenv("DLQ_AUDIT_LOG"); p != "" {
		return p
	}
	return filepath.Join(redrive.StateDir(), "audit.jsonl")
}

// Audit appends rec to the audit log (mode 0600), filling in time, user,
// host and the redacted command line.
func (f *Factory) Audit(rec AuditRecord) error {
	if rec.Time.IsZero() {
		rec.Time = f.Now().UTC()
	}
	if rec.User == "" {
		if u, err := user.Current(); err == nil {
			rec.User = u.Username
		}
	}
	if rec.Host == "" {
		rec.Host, _ = os.Hostname()
	}
	if rec.Command == "" {
		rec.Command = broker.Redact("dlq " + strings.Join(redactArgs(f.Args), " "))
	}
	rec.Broker = broker.Redact(rec.Broker)
	rec.Source = broker.Redact(rec.Source)
	rec.Destination = broker.Redact(rec.Destination)
	rec.Error = broker.Redact(rec.Error)
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	path := f.AuditPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log %s: %w: set `--audit-log` to a writable file", path, err)
	}
	if _, err := fh.Write(append(line, '\n')); err != nil {
		fh.Close()
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	return fh.Close()
}

// checkAuditLog opens the audit log for appending, as Audit does, and
// refuses op when it cannot: the record of a change must be writable before
// the change starts. A log on a full disk opens fine; its failed write
// after the change sets the exit code (see auditFailed).
func (f *Factory) checkAuditLog(op string) error {
	path := f.AuditPath()
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		var fh *os.File
		if fh, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			err = fh.Close()
		}
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s refused, nothing was changed: the audit log %s cannot be written (%w): set `--audit-log` or DLQ_AUDIT_LOG to a writable file", op, path, err)
	}
	return nil
}

// auditFailed adds the audit log's failure (aerr) to the error that sets a
// command's exit code: work that was done but not recorded is an error
// (exit 1), and a run that failed or stopped keeps its own code. done says
// what was done ("removed 3 messages").
func auditFailed(exitErr, aerr error, done string) error {
	if aerr == nil {
		return exitErr
	}
	if exitErr == nil {
		return fmt.Errorf("%s, but the audit log could not record it: %w", done, aerr)
	}
	return fmt.Errorf("%w; and the audit log could not record it: %v", exitErr, aerr)
}

// summaryJSON is a run's summary as `-o json` writes it, with the audit
// log's failure when the run could not be recorded.
type summaryJSON struct {
	redrive.Summary
	AuditError string `json:"audit_error,omitempty"`
	// Error is why the run exits non-zero, when it does.
	Error *jsonErrorBody `json:"error,omitempty"`
}

// removalJSON is the summary of a discard or purge as `-o json` writes it:
// its count is "discarded", as nothing moved anywhere.
type removalJSON struct {
	redrive.Summary
	// Moved hides the summary's own "moved" (always 0, so left out).
	Moved      int64          `json:"moved,omitempty"`
	Discarded  int64          `json:"discarded"`
	AuditError string         `json:"audit_error,omitempty"`
	Error      *jsonErrorBody `json:"error,omitempty"`
}

func newRemovalJSON(s redrive.Summary, auditErr, exitErr error) removalJSON {
	return removalJSON{Summary: s, Discarded: s.Moved, AuditError: errString(auditErr), Error: jsonErrorOf(exitErr, nil)}
}

// auditRun maps the result of a run that moves or removes messages
// (redrive, discard, purge, and their TUI keys) to the error that sets the
// exit code, and records it in the audit log unless it was a dry run. rec
// names the action and what it worked on; the counts, the outcome and the
// error come from the run, and the IDs too unless rec has its own. The
// second error is the audit log's: the caller decides how loudly to fail.
func (f *Factory) auditRun(rec AuditRecord, sum redrive.Summary, runErr error, dry bool) (exitErr, auditErr error) {
	outcome, exitErr := redriveOutcome(sum, runErr, dry, removals[strings.TrimPrefix(rec.Action, "tui-")])
	if dry {
		return exitErr, nil
	}
	rec.Counts, rec.Outcome, rec.Error = sum.Counts(), outcome, errString(runErr)
	rec.wordCounts()
	if rec.IDs == nil {
		rec.IDs = sum.IDs
	}
	return exitErr, f.Audit(rec)
}

// removals are the actions that remove messages rather than move them.
var removals = map[string]bool{"discard": true, "purge": true}

// wordCounts words the counts of a discard or purge (and their TUI keys)
// as their JSON summaries do: the messages removed are "discarded", since
// nothing moved anywhere. Records written before said "moved"; `dlq audit`
// reads them through this too, so that one query reads old and new.
func (r *AuditRecord) wordCounts() {
	n, ok := r.Counts["moved"]
	if !ok || !removals[strings.TrimPrefix(r.Action, "tui-")] {
		return
	}
	delete(r.Counts, "moved")
	if _, has := r.Counts["discarded"]; !has {
		r.Counts["discarded"] = n
	}
}

// secretFlags take a value that must never be logged.
var secretFlags = map[string]bool{"--password": true, "--secret-key": true}

// redactArgs hides the values of secret flags and URL passwords in args.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if k, _, ok := strings.Cut(a, "="); ok && secretFlags[k] {
			out[i] = k + "=" + broker.Mask
			continue
		}
		out[i] = broker.Redact(a)
		if secretFlags[a] && i+1 < len(args) {
			out[i+1] = broker.Mask
			i++
		}
	}
	return out
}
