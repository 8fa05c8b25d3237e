package cmd

import (
	"context"
	"strings"
	"testing"
)

// An --archive-to that opens no archive (here: a factory whose destination
// opener returns no broker) is refused with one line naming the flag,
// before anything is taken from the queue, instead of closing a nil broker.
func TestDiscardArchiveThatOpensNoArchive(t *testing.T) {
	b := &moveFake{dlq: fakeDead(3)}
	for _, run := range []func() error{
		func() error {
			f, _ := moveFactory(t, b, true) // answers "y"

			return discardRun(context.Background(), &discardOptions{f: f, Queue: "q", Select: selectFlags{IDs: []string{"m01"}}, Archive: archiveFlags{ArchiveTo: "file:///tmp/x.jsonl"}})
		},
		func() error {
			f, _ := moveFactory(t, b, true)
			return purgeRun(context.Background(), &purgeOptions{f: f, Queue: "q", Archive: archiveFlags{ArchiveTo: "file:///tmp/x.jsonl"}})
		},
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "`--archive-to file:///tmp/x.jsonl` is not an archive") || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v", err)
		}
	}
	if b.consumed || len(b.dlq) != 3 {
		t.Errorf("the queue was touched: consumed %v, %d left", b.consumed, len(b.dlq))
	}
}
