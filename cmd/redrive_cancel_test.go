package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// moverFake is a broker with one running server-side move; it records
// whether it was opened and whether the move was cancelled.
type moverFake struct {
	opened, cancelled bool
}

func (b *moverFake) System() broker.System { return broker.SQS }
func (b *moverFake) String() string        { return "sqs://fake" }
func (b *moverFake) Close() error          { return nil }
func (b *moverFake) StartMove(context.Context, string, broker.Destination, broker.MoveOptions) (broker.MoveTask, error) {
	return broker.MoveTask{}, nil
}
func (b *moverFake) MoveStatus(ctx context.Context, q string) ([]broker.MoveTask, error) {
	return []broker.MoveTask{{Handle: "task-1", Source: q, Destination: "orders", State: broker.MoveRunning}}, nil
}
func (b *moverFake) CancelMove(ctx context.Context, q, handle string) (broker.MoveTask, error) {
	b.cancelled = true
	return broker.MoveTask{Handle: handle, Source: q, Destination: "orders", State: broker.MoveCancelling}, nil
}

func moverFactory(t *testing.T, b *moverFake, tty bool, answer string) (*Factory, func() (string, string)) {
	ios, in, out, errOut := Test()
	ios.SetTTY(tty)
	in.WriteString(answer)
	f := &Factory{IO: ios, Options: &GlobalOptions{AuditLog: filepath.Join(t.TempDir(), "audit.jsonl")}, Now: time.Now, Args: []string{"redrive", "cancel"}}
	f.OpenQueue = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		b.opened = true
		return b, ref, nil
	}
	return f, func() (string, string) { return out.String(), errOut.String() }
}

// `dlq redrive cancel` changes the broker: without a terminal it needs
// --yes, with the wording of the other changing commands, and refuses
// before it connects; on a terminal it asks, and "no" changes nothing.
func TestRedriveCancelAsksFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tty        bool
		answer     string
		args       []string
		code       ExitCode
		opened     bool
		cancelled  bool
		wantStderr string
	}{
		{"no terminal", false, "", nil, ExitError, false, false, "dlq: `dlq redrive cancel` changes the broker: pass `--yes` to run it without a terminal"},
		{"no terminal, --yes", false, "", []string{"--yes"}, ExitOK, true, true, ""},
		{"terminal, no", true, "n\n", nil, ExitCancelled, true, false, "stop the server-side move task-1 of `jobs-dlq` (messages already moved stay moved)? [y/N]"},
		{"terminal, yes", true, "y\n", nil, ExitOK, true, true, "stop the server-side move task-1 of `jobs-dlq` (messages already moved stay moved)? [y/N]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &moverFake{}
			f, outs := moverFactory(t, b, tc.tty, tc.answer)
			code := execute(context.Background(), f, append([]string{"redrive", "cancel", "jobs-dlq"}, tc.args...))
			stdout, stderr := outs()
			if code != tc.code || b.opened != tc.opened || b.cancelled != tc.cancelled {
				t.Errorf("exit %d, opened %v, cancelled %v; want %d, %v, %v\nstdout %q\nstderr %q", code, b.opened, b.cancelled, tc.code, tc.opened, tc.cancelled, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q, want it to hold %q", stderr, tc.wantStderr)
			}
		})
	}
	t.Run("no terminal, -o json", func(t *testing.T) {
		b := &moverFake{}
		f, outs := moverFactory(t, b, false, "")
		code := execute(context.Background(), f, []string{"redrive", "cancel", "jobs-dlq", "-o", "json"})
		stdout, _ := outs()
		var got jsonError
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Error == nil {
			t.Fatalf("stdout is not a JSON error (%v): %q", err, stdout)
		}
		if code != ExitError || got.Error.ExitCode != ExitError || !strings.Contains(got.Error.Message, "pass `--yes`") || b.opened {
			t.Errorf("exit %d, opened %v, error %+v", code, b.opened, *got.Error)
		}
	})
}

// The built binary refuses `redrive cancel` without a terminal and --yes
// before it connects (the broker named here does not answer), with a JSON
// error under -o json.
func TestRedriveCancelNeedsYesBinary(t *testing.T) {
	stdout, stderr, code, _ := runBinary(t, nil, "redrive", "cancel", "jobs-dlq", "--broker", "amqp://ops@127.0.0.1:1/", "-o", "json")
	var got jsonError
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Error == nil {
		t.Fatalf("exit %d: stdout is not a JSON error (%v): %q; stderr %q", code, err, stdout, stderr)
	}
	want := "`dlq redrive cancel` changes the broker: pass `--yes` to run it without a terminal"
	if code != ExitError || got.Error.Message != want || strings.TrimSpace(stderr) != "dlq: "+want {
		t.Errorf("exit %d, error %+v, stderr %q; want %d and %q", code, *got.Error, stderr, ExitError, want)
	}
}
