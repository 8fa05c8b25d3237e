package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// groupedDead is n dead letters of two failure groups: the even ones
// timed out, the odd ones were invalid. It returns the timeouts' group ID.
func groupedDead(n int) ([]*broker.Message, string) {
	ms := fakeDead(n)
	for i, m := range ms {
		reason := "read timeout after 30s"
		if i%2 == 1 {
			reason = "invalid order"
		}
		m.Headers["x-exception-message"] = reason
	}
	return ms, inspect.GroupID(inspect.ShapeOf("read timeout after 30s"))
}

// With --group, a redrive or discard reads its source once before it asks
// (the read that finds the groups serves the preview), and a dry run
// reads it once: each whole read of a RabbitMQ queue rotates every
// message. The run then moves exactly what the preview showed.
func TestGroupReadsOnceBeforeTheQuestion(t *testing.T) {
	rotated := "rotated 6 messages to the back of the queue; order kept"
	for _, tc := range []struct {
		name      string
		tty       bool
		args      []string
		peeks     int // reads in all (a run consumes, which is no read)
		moved     []string
		stderrHas []string
	}{
		{"redrive on a terminal", true, []string{"redrive", "orders.dlq", "--no-journal"}, 1, []string{"m00", "m02", "m04"}, []string{
			"dlq: reading `orders.dlq` once to find its failure groups and the messages they hold (rotating it: each message is republished to its back, see `dlq help peek-safety`)…\n" +
				"redrive will move 3 of 6 messages in `orders.dlq`:\n",
			"dlq: no message was moved yet, but reading `orders.dlq` changed it: " + rotated,
		}},
		{"redrive dry run", false, []string{"redrive", "orders.dlq", "--dry-run"}, 1, nil, nil},
		{"discard on a terminal, with a filter", true, []string{"discard", "orders.dlq", "--filter", ".body.n < 4", "--no-archive"}, 1, []string{"m00", "m02"}, []string{
			"dlq: reading `orders.dlq` once to find its failure groups and the messages they hold (rotating it: each message is republished to its back, see `dlq help peek-safety`)…\n" +
				rotated + "\n",
		}},
		{"discard dry run", false, []string{"discard", "orders.dlq", "--no-archive", "--dry-run"}, 1, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, id := groupedDead(6)
			b := &moveFake{dlq: ms, changed: rotated}
			f, outs := moveFactory(t, b, tc.tty)
			peeksAsked := -1
			if tc.tty {
				f.IO.In = &answerReader{answer: "y\n", asked: func() {
					peeksAsked = b.peeks
					// Arrives after the preview, in the group: it stays.
					late := fakeDead(8)[6]
					late.Headers["x-exception-message"] = "read timeout after 31s"
					b.dlq = append(b.dlq, late)
				}}
			}
			code := execute(context.Background(), f, append(tc.args, "--group", id))
			stdout, stderr := outs()
			if code != ExitOK {
				t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
			}
			if tc.tty && peeksAsked != 1 {
				t.Errorf("%d reads before the question, want 1; stderr:\n%s", peeksAsked, stderr)
			}
			if b.peeks != tc.peeks {
				t.Errorf("%d reads in all, want %d; stderr:\n%s", b.peeks, tc.peeks, stderr)
			}
			if strings.HasPrefix(tc.args[0], "redrive") {
				var moved []string
				for _, m := range b.dest {
					moved = append(moved, m.ID)
				}
				if d := testdiff.Lines(tc.moved, moved); d != "" {
					t.Errorf("moved:\n%s", d)
				}
			} else if tc.moved != nil {
				left := map[string]bool{}
				for _, m := range b.dlq {
					left[m.ID] = true
				}
				var gone []string
				for _, m := range ms {
					if !left[m.ID] {
						gone = append(gone, m.ID)
					}
				}
				if d := testdiff.Lines(tc.moved, gone); d != "" {
					t.Errorf("discarded:\n%s", d)
				}
			}
			for _, want := range tc.stderrHas {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := strings.Count(stderr, rotated); n > 1 {
				t.Errorf("stderr says %d times what the one read changed:\n%s", n, stderr)
			}
			if tc.tty {
				return
			}
			// The dry run says what its one read changed.
			if want := fmt.Sprintf("dry run: no message was %s, but reading the queue changed it: %s", map[bool]string{true: "moved", false: "removed"}[tc.args[0] == "redrive"], rotated); !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		})
	}
}

// A queue too large to keep in memory is read a second time for the
// preview, and the command says so.
func TestGroupReadTooLargeToKeep(t *testing.T) {
	defer func(n int) { keepMax = n }(keepMax)
	keepMax = 3000 // two messages and their allowance
	ms, id := groupedDead(6)
	b := &moveFake{dlq: ms}
	f, outs := moveFactory(t, b, true)
	code := execute(context.Background(), f, []string{"redrive", "orders.dlq", "--no-journal", "--group", id})
	stdout, stderr := outs()
	if code != ExitOK || b.peeks != 2 || len(b.dest) != 3 {
		t.Fatalf("exit %d, %d reads, %d moved; want 0, 2, 3:\n%s%s", code, b.peeks, len(b.dest), stdout, stderr)
	}
	if want := "dlq: `orders.dlq` holds more than 0 MiB, too much to keep: it is read a second time to look at the groups' messages"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}
