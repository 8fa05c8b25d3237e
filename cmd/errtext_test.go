package cmd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// TestErrorTextWordsSettingsAsFlags: the settings that library errors name
// reach the terminal as flags, however the error was wrapped.
func TestErrorTextWordsSettingsAsFlags(t *testing.T) {
	hint := broker.Hintf("use %s or pass %s", broker.OptMode.With("rotate"), broker.OptForce)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "hint", err: hint, want: "use `--mode rotate` or pass `--force`"},
		{name: "broker error", err: &broker.Error{Kind: broker.ErrUnsafe, Op: "peek `q`", Hint: hint},
			want: "peek `q`: use `--mode rotate` or pass `--force`"},
		{name: "wrapped", err: fmt.Errorf("context `prod`: %w", broker.Errorf(broker.ErrNotFound, "list queues", "check %s", broker.OptManagementURL)),
			want: "context `prod`: list queues: check `--management-url`"},
		{name: "joined", err: errors.Join(hint, ErrCancelled), want: "use `--mode rotate` or pass `--force`\ncancelled"},
		{name: "quoted by flagErrorf", err: flagErrorf("`--to`: %v", hint), want: "`--to`: use `--mode rotate` or pass `--force`"},
		{name: "no setting", err: errors.New("plain"), want: "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorText(tt.err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLibraryHintPrintedAsFlag runs dlq until an adapter refuses a setting:
// the message on stderr names the flag.
func TestLibraryHintPrintedAsFlag(t *testing.T) {
	_, stderr, code := runDLQ(t, "queues", "--broker", "sqs://us-east-1", "--endpoint-url", "nope")
	want := "dlq: open sqs: invalid endpoint \"nope\": `--endpoint-url` must be a URL such as http://127.0.0.1:9324\n"
	if code != ExitError {
		t.Errorf("exit %d, want %d", code, ExitError)
	}
	if d := diffText(want, stderr); d != "" {
		t.Error(d)
	}
}
