package redrive

import (
	"context"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// A preview counts what the run would move, names every message it would
// move, shows the first diffs and counts the rest, and moves nothing.
func TestPreview(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 8)
	s, err := Preview(context.Background(), f, "orders.dlq", f, Options{Transform: jq(t, ".body.retry = 0")})
	if err != nil {
		t.Fatal(err)
	}
	if !s.DryRun || s.Examined != 8 || s.Destinations["exchange:ex:orders.new"] != 8 || len(s.IDs) != 8 || len(s.Diffs) != PreviewDiffs || s.DiffsMore != 8-PreviewDiffs {
		t.Errorf("preview: dry run %v, examined %d, destinations %v, %d IDs, %d diffs and %d more; want a dry run of 8 to exchange:ex:orders.new, 8 IDs, %d diffs and %d more",
			s.DryRun, s.Examined, s.Destinations, len(s.IDs), len(s.Diffs), s.DiffsMore, PreviewDiffs, 8-PreviewDiffs)
	}
	if n := len(f.ready("orders.dlq")); n != 8 || len(f.ready("orders")) != 0 {
		t.Errorf("after a preview the DLQ holds %d and the origin %d, want 8 and 0", n, len(f.ready("orders")))
	}
}
