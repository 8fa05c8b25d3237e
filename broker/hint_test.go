package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// flagWords words settings as a command line does, for these tests.
func flagWords(s Setting) string {
	if s.Value == "" {
		return "<" + string(s.Option) + ">"
	}
	return "<" + string(s.Option) + "=" + s.Value + ">"
}

func TestHintRendersSettingsLate(t *testing.T) {
	cause := errors.New("connection refused")
	inner := Hintf("check %s and %s", OptBroker, OptMode.With("rotate"))
	tests := []struct {
		name       string
		err        error
		plain, got string
	}{
		{name: "option and setting", err: inner,
			plain: "check `broker` and `mode rotate`", got: "check <broker> and <mode=rotate>"},
		{name: "other arguments keep their verbs", err: Hintf("%d of %q: raise %s (%.1f)", 3, "q", OptTimeout, 1.5),
			plain: `3 of "q": raise ` + "`timeout`" + " (1.5)", got: `3 of "q": raise <timeout> (1.5)`},
		{name: "a hint among the arguments", err: Hintf("tls failed: %s", inner),
			plain: "tls failed: check `broker` and `mode rotate`", got: "tls failed: check <broker> and <mode=rotate>"},
		{name: "wrapped by fmt.Errorf", err: fmt.Errorf("peek `q`: %w", inner),
			plain: "peek `q`: check `broker` and `mode rotate`", got: "peek `q`: check <broker> and <mode=rotate>"},
		{name: "joined", err: errors.Join(cause, Hintf("pass %s", OptForce)),
			plain: "connection refused\npass `force`", got: "connection refused\npass <force>"},
		{name: "error with Msg and Hint", err: &Error{Kind: ErrNotFound, Op: "read", Msg: "no vhost", Hint: Hintf("check %s", OptBroker)},
			plain: "read: no vhost: check `broker`", got: "read: no vhost: check <broker>"},
		{name: "error with Hint only", err: &Error{Kind: ErrUnsafe, Op: "peek", Hint: Hintf("use %s", OptMode.With("rotate"))},
			plain: "peek: use `mode rotate`", got: "peek: use <mode=rotate>"},
		{name: "error whose cause has the hint", err: &Error{Kind: ErrUnreachable, Op: "connect", Err: inner},
			plain: "connect: check `broker` and `mode rotate`", got: "connect: check <broker> and <mode=rotate>"},
		{name: "Errorf with an option", err: Errorf(ErrUnsupported, "move", "drop %s, not %d", OptServerSide, 2),
			plain: "move: drop `server-side`, not 2", got: "move: drop <server-side>, not 2"},
		{name: "Errorf without one", err: Errorf(ErrUnsupported, "move", "no %s", "shovels"),
			plain: "move: no shovels", got: "move: no shovels"},
		{name: "no hint at all", err: fmt.Errorf("read: %w", cause),
			plain: "read: connection refused", got: "read: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.plain {
				t.Errorf("Error() = %q, want %q", got, tt.plain)
			}
			if got := RenderError(tt.err, nil); got != tt.plain {
				t.Errorf("RenderError(nil) = %q, want %q", got, tt.plain)
			}
			if got := RenderError(tt.err, flagWords); got != tt.got {
				t.Errorf("RenderError = %q, want %q", got, tt.got)
			}
		})
	}
}

// A front end without a setting (a Renderer that returns "") gets an
// Alternative's other words, and a bare option named plainly, never an
// empty gap.
func TestHintWithoutTheSetting(t *testing.T) {
	cause := errors.New("disk full")
	err := Hintf("stopped: %w; %v", cause, OptResume.Or("run it again with %s to continue", "run it again to continue"))
	has := func(s Setting) string { return flagWords(s) }
	lacks := func(Setting) string { return "" }
	for _, tt := range []struct {
		name string
		r    Renderer
		want string
	}{
		{"plain", nil, "stopped: disk full; run it again with `resume` to continue"},
		{"has it", has, "stopped: disk full; run it again with <resume> to continue"},
		{"lacks it", lacks, "stopped: disk full; run it again to continue"},
	} {
		if got := RenderError(err, tt.r); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if got, want := RenderError(Hintf("pass %s", OptForce), lacks), "pass `force`"; got != want {
		t.Errorf("bare option: got %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Errorf("%v does not wrap its cause", err)
	}
}

func TestHintKeepsWhatItWraps(t *testing.T) {
	err := Hintf("%s: timed out (raise %s): %w", "list", OptTimeout, context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	if got, want := RenderError(err, flagWords), "list: timed out (raise <timeout>): context deadline exceeded"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	be := Errorf(ErrUnsafe, "peek", "use %s", OptMode.With("rotate"))
	if !errors.Is(be, ErrUnsafe) {
		t.Errorf("%v is not ErrUnsafe", be)
	}
	if Hintf("no %s here", "wrap").Unwrap() != nil {
		t.Error("a hint without %w unwraps to something")
	}
	if RenderError(nil, flagWords) != "" {
		t.Error("RenderError(nil) is not empty")
	}
}

// TestNoFlagTextOutsideCmd keeps command-line syntax out of the libraries:
// they name settings with Option, and cmd words them as flags.
func TestNoFlagTextOutsideCmd(t *testing.T) {
	flag := regexp.MustCompile("`--[a-z]")
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if flag.MatchString(line) {
				t.Errorf("%s:%d names a flag; name the setting with a broker.Option: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: is %s the module root?", checked, root)
	}
}

func TestNamesOption(t *testing.T) {
	hint := Hintf("no answer within 30s: raise %s", OptTimeout)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"hint", hint, true},
		{"wrapped hint", fmt.Errorf("open: %w", hint), true},
		{"error with hint", &Error{Kind: ErrUnreachable, Hint: hint}, true},
		{"setting", Hintf("set %s", OptTimeout.With("1m")), true},
		{"alternative", Hintf("%s", OptTimeout.Or("raise %s", "wait")), true},
		{"hint inside a hint", Hintf("open: %w", hint), true},
		{"other option", Hintf("check %s", OptBroker), false},
		{"words only", errors.New("raise `--timeout`"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := NamesOption(tt.err, OptTimeout); got != tt.want {
			t.Errorf("%s: NamesOption = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A command a message proposes is typed as an option is: the plain text
// is dlq's command line, and a front end words it (and the settings it is
// given) its own way.
func TestCommandReference(t *testing.T) {
	err := Errorf(ErrNotFound, "archive x", "no queue `a`: list its queues with %s, or see %s", Cmd("queues", OptBroker.With("file://x")), Cmd("redrive status"))
	if got, want := err.Error(), "archive x: no queue `a`: list its queues with `dlq queues --broker file://x`, or see `dlq redrive status`"; got != want {
		t.Errorf("plain:\n got %q\nwant %q", got, want)
	}
	cli := func(s Setting) string {
		if s.Option == OptCommand {
			return ""
		}
		return "`--" + string(s.Option) + " " + s.Value + "`"
	}
	if got, want := RenderError(err, cli), "archive x: no queue `a`: list its queues with `dlq queues --broker file://x`, or see `dlq redrive status`"; got != want {
		t.Errorf("command line:\n got %q\nwant %q", got, want)
	}
	tui := func(s Setting) string {
		if s.Option == OptCommand && s.Value == "redrive status" {
			return "the moves screen (m)"
		}
		return ""
	}
	if got, want := RenderError(err, tui), "archive x: no queue `a`: list its queues with `dlq queues --broker file://x`, or see the moves screen (m)"; got != want {
		t.Errorf("a front end's words:\n got %q\nwant %q", got, want)
	}
	var be *Error
	if !errors.As(err, &be) || be.Hint == nil {
		t.Errorf("a message naming a command is not a hint: %#v", err)
	}
}
