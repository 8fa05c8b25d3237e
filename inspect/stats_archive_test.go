package inspect

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// peekOnly hides every capability of a Peeker but Peek.
type peekOnly struct{ broker.Peeker }

// countingReuser records whether PeekReused was used.
type countingReuser struct {
	*archive.Broker
	reused int
}

func (c *countingReuser) PeekReused(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	c.reused++
	return c.Broker.PeekReused(ctx, queue, opts, visit)
}

// Stats over an archive's lent messages equal stats over messages given
// away, for every grouping and with jq options that build documents.
func TestStatsOverLentMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.jsonl")
	w, err := archive.NewWriter(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fixture() {
		m.Properties.MessageID = m.ID
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	filter, _ := Compile(`.body.n >= 10`)
	reason, _ := Compile(`.headers.tenant`)
	dup, _ := Compile(`.body.customer.tier`)
	for _, tt := range []struct {
		spec string
		opts StatsOptions
	}{
		{"reason", StatsOptions{}},
		{"reason,source,exchange,routing-key,age,day,hour", StatsOptions{}},
		{"header:tenant,body:.customer.tier,body:.customer | .tier", StatsOptions{Filter: filter, DupKey: dup}},
		{"reason", StatsOptions{Reason: ReasonFrom(reason), Examples: 5}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			g, err := ParseGroupBy(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			tt.opts.GroupBy, tt.opts.Now = g, t0
			r := &countingReuser{Broker: a}
			lent, _, err := CollectStats(context.Background(), r, "", broker.PeekOptions{}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			given, _, err := CollectStats(context.Background(), peekOnly{a}, "", broker.PeekOptions{}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.reused != 1 {
				t.Errorf("PeekReused called %d times, want 1", r.reused)
			}
			if lent.Read != 110 || !reflect.DeepEqual(lent, given) {
				t.Errorf("lent messages read %d, want 110; lent (-) and given (+) differ:\n%s", lent.Read, testdiff.Diff(lent, given))
			}
		})
	}
}
