package cmd

import (
	"context"
	"errors"

	"github.com/dlq-tools/dlq/broker"
)

// ExitCode is dlq's process exit status. The values are stable and
// documented in `dlq help exit-codes`.
type ExitCode int

const (
	ExitOK        ExitCode = 0 // success
	ExitError     ExitCode = 1 // failure, bad input, nothing (more) done
	ExitCancelled ExitCode = 2 // interrupted (Ctrl-C, SIGTERM) or declined at a prompt
	ExitPartial   ExitCode = 3 // some of the work was done, then it stopped
	ExitDenied    ExitCode = 4 // authentication, permission, or read-only mode
	ExitChanges   ExitCode = 5 // `topology plan --detailed-exitcode`: changes pending
	// ExitCanaryStopped: a canary redrive stopped itself because moved
	// messages came back; what it had not moved stays in the source.
	ExitCanaryStopped ExitCode = 6
)

const exitCodesHelp = `dlq exits with one of these codes; scripts may rely on them.

  0  success (for ` + "`topology plan --detailed-exitcode`" + `: no changes)
  1  error: bad flags or input, broker error, unsafe operation refused;
     nothing was changed, or nothing more than reported
  2  cancelled: Ctrl-C or SIGTERM before anything was changed, or "no" at
     a confirmation prompt; work in flight was settled before exiting
  3  partly done: a redrive, discard, purge or apply changed some things and
     then stopped (an error, or Ctrl-C); the summary says what was done,
     re-running continues
  4  denied: wrong credentials, missing permission, or a mutating command
     in read-only mode (` + "`--read-only`" + ` or a read-only context)
  5  changes pending: ` + "`topology plan --detailed-exitcode`" + ` found differences
  6  canary stopped: ` + "`redrive --canary`" + ` moved some messages, more of them
     came back than ` + "`--canary-max-returns`" + ` allows, and it stopped; every
     selected message it had not moved stays in the source, and
     ` + "`dlq redrive SOURCE --resume`" + ` continues it after a fix;
     ` + "`dlq triage apply`" + ` exits 6 when a group's canary stopped, the groups
     after it untouched
`

// partialError marks an error after which part of the work was done.
type partialError struct{ err error }

func (e partialError) Error() string { return e.err.Error() }
func (e partialError) Unwrap() error { return e.err }

// Partial wraps err so that dlq exits with ExitPartial.
func Partial(err error) error { return partialError{err} }

// exitError carries an explicit exit code with an optional message.
type exitError struct {
	code ExitCode
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e exitError) Unwrap() error { return e.err }

// WithExitCode makes dlq exit with code after printing err (nil prints nothing).
func WithExitCode(code ExitCode, err error) error { return exitError{code, err} }

// ErrCancelled is returned when the user declines or interrupts.
var ErrCancelled = errors.New("cancelled")

func exitCodeFor(err error) ExitCode {
	var ee exitError
	var pe partialError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &pe):
		return ExitPartial
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return ExitCancelled
	case errors.Is(err, broker.ErrAccessDenied), errors.Is(err, broker.ErrReadOnly):
		return ExitDenied
	default:
		return ExitError
	}
}
