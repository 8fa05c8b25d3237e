package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
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
	err := root.ExecuteContext(ctx)
	if jerr := f.finishJQ(ctx, err); jerr != nil {
		err = errors.Join(err, jerr)
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		err = errors.Join(err, context.Canceled)
	}
	code := exitCodeFor(err)
	if err != nil && !completing(args) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(ios.ErrOut, "dlq: "+Redact(firstLine(msg)))
		}
	}
	return code
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

// flagErrorf reports bad flags or arguments.
func flagErrorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

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
