package cmd

import (
	"strings"
	"testing"
)

// A number flag given a value that means nothing (zero where zero is not
// documented as a setting) is refused with one line that names the flag
// and the fix, before any broker is opened.
func TestNumberFlagsRefuseNonsense(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"redrive", "demo:orders.dlq", "--concurrency", "0", "--dry-run"}, "`--concurrency 0`: give 1 to 64"},
		{[]string{"redrive", "demo:orders.dlq", "--window", "0", "--dry-run"}, "`--window 0`: give 1 to 10000"},
		{[]string{"redrive", "demo:orders.dlq", "--window", "-5", "--dry-run"}, "`--window -5`: give 1 to 10000"},
		{[]string{"stats", "demo:orders.dlq", "--examples", "0"}, "`--examples 0`: give 1 or more"},
		{[]string{"peek", "demo:orders.dlq", "--timeout", "0s"}, "`--timeout 0s`: give a positive duration"},
		{[]string{"queues", "--broker", "demo:", "--timeout", "-1s"}, "`--timeout -1s`: give a positive duration"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, stderr, code := runDLQ(t, tc.args...)
			if code != ExitError {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitError, stderr)
			}
			assertOneLine(t, stderr)
			assertNamedFlagsExist(t, tc.args, stderr)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
		})
	}
	// Zero where it is documented stays accepted.
	for _, args := range [][]string{
		{"redrive", "demo:orders.dlq", "--broker", "demo:", "--to", "queue:orders", "--rate", "0", "--limit", "0", "--dry-run"},
		{"peek", "demo:orders.dlq", "--limit", "0", "--max-unacked", "0"},
		{"stats", "demo:orders.dlq", "--limit", "0"},
	} {
		if _, stderr, code := runDLQ(t, args...); code != ExitOK {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
}
