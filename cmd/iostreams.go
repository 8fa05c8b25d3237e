package cmd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// IOStreams are the command's standard streams and what is known about the
// terminal behind them. Data goes to Out, progress and status to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	noColor                        bool
	width                          int
}

// System returns the process's streams.
func System() *IOStreams {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	io.stdinTTY = term.IsTerminal(int(os.Stdin.Fd()))
	io.stdoutTTY = term.IsTerminal(int(os.Stdout.Fd()))
	io.stderrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if _, ok := os.LookupEnv("NO_COLOR"); ok || os.Getenv("TERM") == "dumb" {
		io.noColor = true
	}
	if io.stdoutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			io.width = w
		}
	}
	return io
}

// Test returns streams backed by buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, noColor: true, width: 100}, in, out, errOut
}

// SetTTY pretends (in tests) that all three streams are, or are not, a terminal.
func (s *IOStreams) SetTTY(tty bool) { s.stdinTTY, s.stdoutTTY, s.stderrTTY = tty, tty, tty }

// SetColor turns colour on or off (--no-color turns it off).
func (s *IOStreams) SetColor(on bool) { s.noColor = !on }

// IsStdoutTTY reports whether stdout is a terminal (tables, colour).
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal (progress bars).
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// CanPrompt reports whether the user can answer a question.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// ColorEnabled reports whether output may be coloured.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// Width is the terminal width, or 100 when unknown.
func (s *IOStreams) Width() int {
	if s.width <= 0 {
		return 100
	}
	return s.width
}

// Confirm asks a yes/no question on stderr and reads the answer from stdin.
// Anything but "y" or "yes" is no.
func (s *IOStreams) Confirm(question string) (bool, error) {
	fmt.Fprintf(s.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// Statusf writes one status line to stderr.
func (s *IOStreams) Statusf(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, format+"\n", args...)
}
