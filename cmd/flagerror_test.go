package cmd

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A bad flag is a *FlagError: on a terminal the command's usage line
// follows the error; without one the error stays one line. An error that
// is not the command line's fault shows no usage.
func TestFlagErrorShowsUsage(t *testing.T) {
	tests := []struct {
		args  []string
		usage bool
	}{
		{[]string{"peek", "--bogus"}, true},                                          // cobra's own parse error
		{[]string{"--broker", "demo:", "peek", "orders.dlq", "--limit", "-3"}, true}, // flagErrorf
		{[]string{"--broker", "bogus://x", "peek", "orders.dlq"}, false},             // not a flag error
	}
	for _, tt := range tests {
		for _, tty := range []bool{true, false} {
			ios, _, _, errOut := Test()
			ios.SetTTY(tty)
			if code := Run(context.Background(), ios, tt.args); code != ExitError {
				t.Errorf("%q (tty %v): exit %d, want %d", tt.args, tty, code, ExitError)
			}
			stderr := errOut.String()
			gotUsage := strings.Contains(stderr, "\nUsage:\n  dlq peek QUEUE|file://ARCHIVE [flags]\n")
			if want := tt.usage && tty; gotUsage != want {
				t.Errorf("%q (tty %v): usage shown %v, want %v; stderr %q", tt.args, tty, gotUsage, want, stderr)
			}
			if !tty && strings.Count(stderr, "\n") != 1 {
				t.Errorf("%q without a terminal: stderr %q, want one line", tt.args, stderr)
			}
		}
	}
	var fe *FlagError
	if !errors.As(flagErrorf("`--limit` must be 0 (all) or more"), &fe) {
		t.Error("flagErrorf does not make a *FlagError")
	}
}
