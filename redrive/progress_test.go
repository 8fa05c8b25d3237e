package redrive

import (
	"context"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// Progress measures against what is known: the selection when the caller
// counted it (Options.Selected), the IDs listed, or the limit of a run that selects every
// message; otherwise the queue's depth, and says which.
func TestProgressTotalIsTheSelectionWhenKnown(t *testing.T) {
	type got struct {
		Total    int64
		Selected bool
	}
	odd := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.Body[len(m.Body)-2]%2 == 1, nil })
	for _, tc := range []struct {
		name string
		opts Options
		want got
	}{
		{"filter, counted", Options{Filter: odd, Selected: 5}, got{5, true}},
		{"filter, not counted", Options{Filter: odd}, got{10, false}},
		{"limit only", Options{Limit: 4}, got{4, true}},
		{"IDs", Options{IDs: []string{"a", "b", "c"}}, got{3, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rabbitFake(t, broker.KindQuorum, 10)
			var last Progress
			tc.opts.Progress = func(p Progress) { last = p }
			tc.opts.Dest = broker.Destination{Kind: broker.ToQueue, Queue: "orders"}
			if _, err := Run(context.Background(), f, "orders.dlq", f, tc.opts); err != nil {
				t.Fatal(err)
			}
			if d := testdiff.JSON(t, tc.want, got{last.Total, last.Selected}); d != "" {
				t.Errorf("progress total differs:\n%s", d)
			}
		})
	}
}
