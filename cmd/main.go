package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
)

// Main runs dlq with the process's arguments and returns its exit code.
func Main() ExitCode {
	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, System(), os.Args[1:])
}

// notifyContext is signal.NotifyContext with the handler installed in the
// background: installing it takes the runtime about a millisecond (it
// starts watching for signals), which `dlq version` need not wait for. As
// with signal.NotifyContext, after the first signal cancels ctx, later ones
// are swallowed until stop, so that work in flight is settled.
func notifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stopped := make(chan struct{})
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sigs...)
		defer signal.Stop(ch)
		select {
		case <-ch:
			cancel()
			<-stopped
		case <-stopped:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			cancel()
			close(stopped)
		})
	}
}

// Run runs dlq with args on the given streams; the acceptance tests call it.
func Run(ctx context.Context, ios *IOStreams, args []string) ExitCode {
	return execute(ctx, NewFactory(ios, args), args)
}

// execute runs the command tree on f; tests pass a factory with fakes.
func execute(ctx context.Context, f *Factory, args []string) ExitCode {
	ios := f.IO
	out := ios.Out
	defer func() { ios.Out = out }() // undo countJSON
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	if completing(args) {
		// The completion scripts ignore stderr; a person pressing tab must
		// not see cobra's directive line or a broker error either.
		root.SetErr(io.Discard)
	}
	c, err := root.ExecuteContextC(ctx)
	if jerr := f.finishJQ(ctx, err); jerr != nil {
		err = errors.Join(err, jerr)
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		err = errors.Join(err, context.Canceled)
	}
	code := exitCodeFor(err)
	if pe := (*broker.PanicError)(nil); errors.As(err, &pe) {
		// The stack of a bug, for the report (DLQ_DEBUG_LOG).
		f.Logger.Error("panic over a message", "id", pe.ID, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	if err != nil && !completing(args) {
		msg := broker.Redact(firstLine(broker.RenderError(err, flagWords(c))))
		if msg != "" {
			// An error may quote a broker's or a message's words: its
			// escape sequences show rather than act.
			fmt.Fprintln(ios.ErrOut, "dlq: "+human.Visible(msg))
		}
		if fe := (*FlagError)(nil); msg != "" && c != nil && ios.IsStderrTTY() && errors.As(err, &fe) {
			// On a terminal the usage follows a bad flag, as gh shows it;
			// without one the error stays one line for the script.
			fmt.Fprintf(ios.ErrOut, "\nUsage:\n  %s\n\nRun `%s --help` for its flags and examples.\n", c.UseLine(), c.CommandPath())
		}
		if msg != "" && f.jsonOutput() && (f.stdout == nil || f.stdout.n == 0) {
			_ = writeJSON(out, jsonError{jsonErrorOf(err, flagWords(c))})
		}
	}
	return code
}

// jsonError is what `--output json` (and jsonl) prints on stdout when a
// command fails before it wrote anything there. A command that writes a
// result even when it fails (a redrive's summary) carries the same object
// as its "error" field instead, so stdout stays one document. `--jq`
// output is the expression's own shape, so there the error goes to stderr
// alone, as gh does.
type jsonError struct {
	Error *jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Kind     string   `json:"kind"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
	ExitCode ExitCode `json:"exit_code"`
}

// jsonErrorOf describes err for machine output, worded with words (nil:
// as flags); nil for no error.
func jsonErrorOf(err error, words broker.Renderer) *jsonErrorBody {
	if err == nil {
		return nil
	}
	msg := errorText(err)
	if words != nil {
		msg = broker.RenderError(err, words)
	}
	e := &jsonErrorBody{Kind: errorKind(err), Message: broker.Redact(firstLine(msg)), ExitCode: exitCodeFor(err)}
	var be *broker.Error
	if errors.As(err, &be) && be.Hint != nil {
		e.Hint = broker.Redact(broker.RenderError(be.Hint, words))
		if words == nil {
			e.Hint = broker.Redact(errorText(be.Hint))
		}
	}
	return e
}

// jsonOutput reports whether the command's stdout is JSON that a script
// reads as dlq writes it.
func (f *Factory) jsonOutput() bool {
	return f.Options.JQ == "" && (f.Options.Output == OutputJSON || f.Options.Output == OutputJSONL)
}

// countJSON counts what a command writes to stdout when that is JSON, so
// that execute knows whether a failure's error object stands alone. Only
// then: other commands keep the stream itself (the TUI needs the terminal's
// file).
func (f *Factory) countJSON() {
	if f.jsonOutput() && f.stdout == nil {
		f.stdout = &countingWriter{w: f.IO.Out}
		f.IO.Out = f.stdout
	}
}

// countingWriter counts what a command wrote to stdout.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// errorKind names err's kind for machine output: one of the broker's error
// values ("not-found", "access-denied", …), or "cancelled", "partial" or
// "error".
func errorKind(err error) string {
	var pe partialError
	var ee exitError
	switch {
	case errors.As(err, &ee) && ee.code == ExitCanaryStopped:
		return "canary-stopped"
	case errors.As(err, &pe):
		return "partial"
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return "cancelled"
	}
	for _, k := range []error{broker.ErrNotFound, broker.ErrConflict, broker.ErrAccessDenied, broker.ErrUnreachable,
		broker.ErrBlocked, broker.ErrUnsafe, broker.ErrUnsupported, broker.ErrUnroutable, broker.ErrReadOnly} {
		if errors.Is(err, k) {
			return strings.ReplaceAll(k.Error(), " ", "-")
		}
	}
	return "error"
}

// NewFactory builds the factory with the real broker wiring.
func NewFactory(ios *IOStreams, args []string) *Factory {
	f := &Factory{
		IO:      ios,
		Options: &GlobalOptions{Timeout: 30 * time.Second},
		Now:     time.Now,
		Args:    args,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if path := os.Getenv("DLQ_DEBUG_LOG"); path != "" {
		if fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			f.Logger = slog.New(slog.NewTextHandler(fh, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	wireBrokers(f)
	return f
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// flagErrorf reports bad flags or arguments as a *FlagError, which shows
// the command's usage after the error. Errors among args are worded
// as errorText words them.
func flagErrorf(format string, args ...any) error {
	worded := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			a = flagWorded{err}
		}
		worded[i] = a
	}
	return &FlagError{err: fmt.Errorf(format, worded...)}
}

// flagWorded is an error whose text names settings as flags.
type flagWorded struct{ err error }

func (w flagWorded) Error() string { return errorText(w.err) }
func (w flagWorded) Unwrap() error { return w.err }

// flagSetting words a setting that a library message names as the flag
// that sets it: "`--mode rotate`".
func flagSetting(s broker.Setting) string {
	if s.Option == broker.OptCommand {
		return "" // the command line itself: broker.PlainSetting's words
	}
	if s.Value == "" {
		return "`--" + string(s.Option) + "`"
	}
	return "`--" + string(s.Option) + " " + s.Value + "`"
}

// flagWords words settings as the flags of c: a setting that c has no
// flag for takes the message's other words (broker.Alternative), so that
// an error never tells a person to pass a flag the command lacks.
func flagWords(c *cobra.Command) broker.Renderer {
	return func(s broker.Setting) string {
		if c == nil || c.Flag(string(s.Option)) == nil {
			return ""
		}
		return flagSetting(s)
	}
}

// errorText is err as the terminal shows it: every setting that a library
// error names is worded as its flag.
func errorText(err error) string { return broker.RenderError(err, flagSetting) }

// needYes refuses a command that changes the broker (command, as typed
// after dlq) when no one can be asked and --yes was not given. Commands call
// it before they read anything: reading SQS messages raises their receive
// counts.
func needYes(f *Factory, command string) error {
	if f.Options.Yes || f.IO.CanPrompt() {
		return nil
	}
	return flagErrorf("`dlq %s` changes the broker: pass `--yes` to run it without a terminal", command)
}

// requireYes refuses a destructive step without a TTY unless --yes was given,
// and asks on a TTY. what is shown in the question.
func requireYes(f *Factory, what string) error {
	if f.Options.Yes {
		return nil
	}
	if !f.IO.CanPrompt() {
		return flagErrorf("`--yes` required when not running interactively (%s)", what)
	}
	return ask(f, what)
}

// ask asks what on the terminal: ErrCancelled unless the answer is yes.
func ask(f *Factory, what string) error {
	ok, err := f.IO.Confirm(what + "?")
	if err != nil {
		return err
	}
	if !ok {
		return ErrCancelled
	}
	return nil
}
