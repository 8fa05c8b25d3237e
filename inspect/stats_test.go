package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// fixture: 100 messages; reasons 50 rejected / 30 expired / 20 from the
// body ("timeout"); sources orders (60) and payments (40); ages spread over
// the buckets; ids m-0..m-99 with m-0..m-4 appearing twice more (10 dups).
func fixture() []*broker.Message {
	var out []*broker.Message
	ages := []time.Duration{30 * time.Second, 10 * time.Minute, 5 * time.Hour, 3 * 24 * time.Hour, 30 * 24 * time.Hour}
	for i := range 100 {
		m := &broker.Message{ID: fmt.Sprintf("m-%d", i), Body: []byte(fmt.Sprintf(`{"n":%d,"customer":{"tier":"t%d"}}`, i, i%3))}
		reason := "rejected"
		switch {
		case i >= 80:
			m.Body = []byte(fmt.Sprintf(`{"n":%d,"error":"timeout","customer":{"tier":"t%d"}}`, i, i%3))
			reason = "rejected"
		case i >= 50:
			reason = "expired"
		}
		src := "orders"
		if i%5 >= 3 {
			src = "payments"
		}
		m.Death = &broker.Death{Reason: reason, Queue: src, First: t0.Add(-ages[i%5])}
		m.Headers = map[string]any{"tenant": fmt.Sprintf("t%d", i%2)}
		out = append(out, m)
	}
	for i := range 10 {
		c := out[i%5].Clone()
		out = append(out, c)
	}
	return out
}

func statsOf(t *testing.T, spec string, opts StatsOptions) StatsResult {
	t.Helper()
	g, err := ParseGroupBy(spec)
	if err != nil {
		t.Fatal(err)
	}
	opts.GroupBy = g
	opts.Now = t0
	res, _, err := CollectStats(context.Background(), newFakePeeker(t, fixture()...), "dlq", broker.PeekOptions{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func counts(r StatsResult) map[string]int64 {
	m := map[string]int64{}
	for _, g := range r.Groups {
		m[strings.Join(g.Values, "|")] = g.Count
	}
	return m
}

func TestStatsGroupings(t *testing.T) {
	cases := []struct {
		spec string
		want map[string]int64
	}{
		// The 10 duplicates are clones of m-0..m-4: rejected, sources o,o,o,p,p.
		{"reason", map[string]int64{"rejected": 60, "expired": 30, "timeout": 20}},
		{"source", map[string]int64{"orders": 66, "payments": 44}},
		{"reason,source", map[string]int64{"rejected|orders": 36, "rejected|payments": 24, "expired|orders": 18, "expired|payments": 12, "timeout|orders": 12, "timeout|payments": 8}},
		{"age", map[string]int64{"<1m": 22, "<1h": 22, "<1d": 22, "<7d": 22, "older": 22}},
		{"header:tenant", map[string]int64{"t0": 56, "t1": 54}},
		{"body:.customer.tier", map[string]int64{"t0": 38, "t1": 37, "t2": 35}},
		{`body:.customer | .tier`, map[string]int64{"t0": 38, "t1": 37, "t2": 35}},
		{"header:none", map[string]int64{NoValue: 110}},
		{"exchange", map[string]int64{NoValue: 110}},
		{"day", map[string]int64{"2026-03-01": 66, "2026-02-26": 22, "2026-01-30": 22}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			r := statsOf(t, c.spec, StatsOptions{})
			got := counts(r)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("groups = %v, want %v", got, c.want)
			}
			if r.Total != 110 || r.Read != 110 {
				t.Errorf("total %d read %d", r.Total, r.Read)
			}
		})
	}
}

func TestStatsDetails(t *testing.T) {
	r := statsOf(t, "reason", StatsOptions{Filter: MustCompile(`.death.queue == "orders"`), Examples: 2})
	if r.Read != 110 || r.Total != 66 {
		t.Fatalf("filter: read %d total %d", r.Read, r.Total)
	}
	top := r.Groups[0]
	if top.Values[0] != "rejected" || top.Count != 36 || len(top.Examples) != 2 || top.Examples[0] != "m-0" {
		t.Errorf("top group: values %q, count %d, examples %q; want [rejected …], 36, [m-0 …] (two)", top.Values, top.Count, top.Examples)
	}
	if top.Share != 0.545455 {
		t.Errorf("share %v", top.Share)
	}
	if top.Oldest == nil || !top.Oldest.Equal(t0.Add(-5*time.Hour)) || *top.OldestAgeSeconds != 5*3600 {
		t.Errorf("oldest %v", top.Oldest)
	}
	if r.Duplicates == nil {
		t.Errorf("no duplicates among orders, want 6")
	} else if r.Duplicates.Messages != 6 {
		t.Errorf("duplicates among orders: %d messages, want 6", r.Duplicates.Messages)
	}
	if r.Bytes == 0 || r.Oldest == nil || r.Newest == nil || !r.Newest.Equal(t0.Add(-30*time.Second)) {
		t.Errorf("totals: bytes %d oldest %v newest %v", r.Bytes, r.Oldest, r.Newest)
	}
}

func TestStatsDuplicates(t *testing.T) {
	r := statsOf(t, "reason", StatsOptions{})
	d := r.Duplicates
	if d.Messages != 10 || len(d.Examples) != 5 || d.Examples[0].Key != "m-0" || d.Examples[0].Count != 3 {
		t.Errorf("duplicates: %d messages, examples %v; want 10, five with m-0 ×3 first", d.Messages, testdiff.Pick(d.Examples, func(e DuplicateExample) string { return fmt.Sprintf("%s ×%d", e.Key, e.Count) }))
	}
	// The copies after the first are listed by ID, to act on.
	if got := strings.Join(d.Examples[0].IDs, " "); got != "m-0 m-0" {
		t.Errorf("IDs of the copies of m-0: %q, want \"m-0 m-0\"", got)
	}
	if d.FalsePositiveRate <= 0 || d.FalsePositiveRate > 1e-9 {
		t.Errorf("fp rate %v", d.FalsePositiveRate)
	}
	r = statsOf(t, "reason", StatsOptions{DupKey: MustCompile(`.headers.tenant`)})
	if r.Duplicates.Messages != 108 || r.Duplicates.Key != ".headers.tenant" {
		t.Errorf("dup key tenant: %d messages, key %q; want 108, .headers.tenant", r.Duplicates.Messages, r.Duplicates.Key)
	}
	r = statsOf(t, "reason", StatsOptions{NoDuplicates: true})
	if r.Duplicates != nil {
		t.Error("NoDuplicates still counted")
	}
}

func TestStatsReasonOverrideAndFolding(t *testing.T) {
	r := statsOf(t, "reason", StatsOptions{Reason: ReasonFrom(MustCompile(`.headers.tenant`))})
	if fmt.Sprint(counts(r)) != fmt.Sprint(map[string]int64{"t0": 56, "t1": 54}) {
		t.Errorf("reason override: %v", counts(r))
	}
	r = statsOf(t, "body:.n", StatsOptions{MaxGroups: 10})
	if len(r.Groups) != 11 || r.Folded != 90 || r.Groups[10].Values[0] != OtherGroup || r.Groups[10].Count != 90 {
		t.Errorf("folding: %d groups, folded %d, last values %q count %d; want 11, 90, [%s], 90", len(r.Groups), r.Folded, r.Groups[len(r.Groups)-1].Values, r.Groups[len(r.Groups)-1].Count, OtherGroup)
	}
}

func TestParseGroupBy(t *testing.T) {
	good := map[string]string{
		"reason":                    "reason",
		" reason , source,reason":   "reason source",
		"header:x-a,attr:Err":       "header:x-a attr:Err",
		`body:.["a,b"],routing_key`: `body:.["a,b"] routing-key`,
		"body:.a.b,age,day,hour":    "body:.a.b age day hour",
		"exchange,routing-key":      "exchange routing-key",
	}
	for in, want := range good {
		g, err := ParseGroupBy(in)
		if err != nil {
			t.Errorf("ParseGroupBy(%q): %v", in, err)
			continue
		}
		var names []string
		for _, x := range g {
			names = append(names, x.Name())
		}
		if strings.Join(names, " ") != want {
			t.Errorf("ParseGroupBy(%q) = %v, want %s", in, names, want)
		}
	}
	for _, bad := range []string{"", "colour", "header:", "body:", "body:.[", "reason:x"} {
		if _, err := ParseGroupBy(bad); err == nil {
			t.Errorf("ParseGroupBy(%q) accepted", bad)
		}
	}
}

func TestStatsMemoryFlat(t *testing.T) {
	// Groups are bounded by MaxGroups and examples by Examples whatever the
	// number of messages.
	s := NewStats("q", StatsOptions{GroupBy: []Grouping{{Kind: "reason"}}, Now: t0})
	ctx := context.Background()
	for i := range 20000 {
		m := &broker.Message{ID: fmt.Sprint(i), Body: []byte(fmt.Sprintf(`{"reason":"r%d"}`, i%7))}
		if err := s.Add(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Result()
	if len(s.groups) != 7 || len(r.Groups[0].Examples) != 3 || len(s.dupEx) != 0 {
		t.Errorf("state grew: %d groups", len(s.groups))
	}
}
