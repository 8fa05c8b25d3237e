package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// incident is the queue: five failure templates with variable
// parts, spread over the ten hours before t0; the timeouts stop two hours
// before t0, the 503s run into the last hour.
func incident(n int) []*broker.Message {
	var out []*broker.Message
	for i := range n {
		var reason string
		switch i % 5 {
		case 0:
			reason = fmt.Sprintf(`ERROR: duplicate key value violates unique constraint "orders_pkey" Detail: Key (id)=(%d) already exists.`, 40000+i)
		case 1:
			reason = fmt.Sprintf(`Post "https://api.example.com/v1/orders/%d/capture": context deadline exceeded`, 1000+i)
		case 2:
			reason = fmt.Sprintf("Inventory service returned 503 for SKU-%d (request %08x-1111-2222-3333-444455556666)", 4821+i%3, i)
		case 3:
			reason = fmt.Sprintf("Customer cus_%d not found", 9900+i%7)
		case 4:
			reason = fmt.Sprintf(`Cannot deserialize value of type java.time.LocalDate from String "%02d/13/2024"`, 1+i%28)
		}
		at := t0.Add(-10*time.Hour + time.Duration(i)*10*time.Hour/time.Duration(n))
		if i%5 == 1 && at.After(t0.Add(-2*time.Hour)) {
			at = at.Add(-2 * time.Hour)
		}
		m := &broker.Message{ID: fmt.Sprintf("m-%d", i), Headers: map[string]any{"x-exception-message": reason},
			Death: &broker.Death{Reason: "rejected", Queue: "orders", First: at}}
		out = append(out, m)
	}
	return out
}

func collect(t *testing.T, msgs []*broker.Message, spec string, opts StatsOptions) (StatsResult, *Stats) {
	t.Helper()
	g, err := ParseGroupBy(spec)
	if err != nil {
		t.Fatal(err)
	}
	opts.GroupBy, opts.Now = g, t0
	s := NewStats("orders.dlq", opts)
	if _, err := s.Read(context.Background(), newFakePeeker(t, msgs...), "orders.dlq", broker.PeekOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	return s.Result(), s
}

func TestStatsShapes(t *testing.T) {
	res, _ := collect(t, incident(1000), "reason", StatsOptions{})
	var got []string
	for _, g := range res.Groups {
		got = append(got, fmt.Sprintf("%d %s %s", g.Count, g.ID, g.Template))
	}
	want := []string{
		"200 " + GroupID(`Cannot deserialize value of type java.time.LocalDate from String "<str>"`) + ` Cannot deserialize value of type java.time.LocalDate from String "<str>"`,
		"200 " + GroupID("Customer <id> not found") + " Customer <id> not found",
		"200 " + GroupID(`ERROR: duplicate key value violates unique constraint "<str>" Detail: Key (id)=(<num>) already exists.`) + ` ERROR: duplicate key value violates unique constraint "<str>" Detail: Key (id)=(<num>) already exists.`,
		"200 " + GroupID("Inventory service returned <num> for <id> (request <uuid>)") + " Inventory service returned <num> for <id> (request <uuid>)",
		"200 " + GroupID(`Post "https://api.example.com/v1/orders/<num>/capture": context deadline exceeded`) + ` Post "https://api.example.com/v1/orders/<num>/capture": context deadline exceeded`,
	}
	if d := testdiff.Lines(want, got); d != "" {
		t.Fatalf("groups:\n%s", d)
	}
	// Hot keys: the customers and SKUs, exactly counted.
	hot := func(tmpl string) []string {
		for _, g := range res.Groups {
			if g.Template == tmpl {
				var out []string
				for _, h := range g.Hot {
					var vs []string
					for _, v := range h.Values {
						vs = append(vs, fmt.Sprintf("%s×%d", v.Value, v.Count))
					}
					out = append(out, fmt.Sprintf("%d %s approx=%v %s", h.Position, h.Placeholder, h.Approximate, strings.Join(vs, " ")))
				}
				return out
			}
		}
		t.Fatalf("no group %q", tmpl)
		return nil
	}
	if d := testdiff.Lines([]string{"1 <id> approx=false cus_9901×29 cus_9903×29 cus_9904×29 cus_9906×29 cus_9900×28"}, hot("Customer <id> not found")); d != "" {
		t.Errorf("customer hot values:\n%s", d)
	}
	h := hot("Inventory service returned <num> for <id> (request <uuid>)")
	if d := testdiff.Lines([]string{"1 <num> approx=false 503×200", "2 <id> approx=false SKU-4822×67 SKU-4823×67 SKU-4821×66"}, h[:2]); d != "" {
		t.Errorf("503 hot values:\n%s", d)
	}
	if !strings.Contains(h[2], "approx=true") {
		t.Errorf("200 distinct request ids are not exact: %s", h[2])
	}
	// Timelines: the 503s run into the last hour, the timeouts stopped.
	for _, g := range res.Groups {
		if len(g.Trend) != TrendBuckets {
			t.Fatalf("%s: trend %v", g.Template, g.Trend)
		}
		var sum int64
		for _, c := range g.Trend {
			sum += c
		}
		if sum != g.Count {
			t.Errorf("%s: trend sums to %d of %d", g.Template, sum, g.Count)
		}
		switch {
		case strings.HasPrefix(g.Template, "Post"):
			if g.LastHour != 0 || g.Trend[TrendBuckets-1] != 0 {
				t.Errorf("timeouts stopped 2h ago: last hour %d, trend %v", g.LastHour, g.Trend)
			}
		case strings.HasPrefix(g.Template, "Inventory"):
			if g.LastHour != 20 {
				t.Errorf("503s in the last hour: %d, want 20", g.LastHour)
			}
		}
	}
	if res.TrendStart == nil || !res.TrendStart.Equal(t0.Add(-10*time.Hour)) || res.TrendStepSeconds != 2248 {
		t.Errorf("trend start %v step %v", res.TrendStart, res.TrendStepSeconds)
	}
}

func TestStatsMergedTemplateHotWords(t *testing.T) {
	var msgs []*broker.Message
	for i, typ := range []string{"OrderShipped", "OrderShipped", "OrderCancelled", "InvoiceIssued"} {
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint(i), Headers: map[string]any{"x-exception-message": "Unknown event type " + typ}})
	}
	res, s := collect(t, msgs, "reason", StatsOptions{})
	if len(res.Groups) != 1 || res.Groups[0].Template != "Unknown event type <*>" {
		t.Fatalf("group templates %q, want [Unknown event type <*>]", testdiff.Pick(res.Groups, func(g GroupStats) string { return g.Template }))
	}
	g := res.Groups[0]
	if g.ID != GroupID("Unknown event type <*>") || len(g.Hot) != 1 || g.Hot[0].Placeholder != PhAny {
		t.Fatalf("group id %q, hot placeholders %q; want %q, [%s]", g.ID, testdiff.Pick(g.Hot, func(h HotValues) string { return h.Placeholder }), GroupID("Unknown event type <*>"), PhAny)
	}
	if d := testdiff.JSON(t, []HotValue{{"OrderShipped", 2}, {"InvoiceIssued", 1}, {"OrderCancelled", 1}}, g.Hot[0].Values); d != "" {
		t.Errorf("hot words:\n%s", d)
	}
	// Classify maps a message to its merged group.
	v, err := s.Classify(context.Background(), msgs[3])
	if err != nil || len(v) != 1 || v[0] != "Unknown event type <*>" {
		t.Fatalf("Classify = %q, %v", v, err)
	}
}

func TestStatsReasonTextAndRedrives(t *testing.T) {
	msgs := incident(10)
	msgs[0].Headers["x-dlq-redrive"] = map[string]any{"count": int64(2)}
	msgs[1].Attributes = map[string]broker.Attribute{"x-dlq-redrive": {DataType: "String", StringValue: `{"count":1,"source":"q"}`}}
	msgs[2].Headers["x-dlq-redrive"] = `{"count":2}`
	res, _ := collect(t, msgs, "redrives", StatsOptions{})
	if d := testdiff.JSON(t, map[string]int64{"0": 7, "1": 1, "2": 2}, counts(res)); d != "" {
		t.Errorf("redrives:\n%s", d)
	}
	if res.Groups[0].ID != "" {
		t.Errorf("a redrives group has a reason ID: %q", res.Groups[0].ID)
	}
	res, _ = collect(t, msgs, "reason-text", StatsOptions{})
	if len(res.Groups) != 10 {
		t.Errorf("reason-text: %d groups, want 10 exact texts", len(res.Groups))
	}
}

// Memory stays bounded with many templates: at most MaxGroups groups, each
// with bounded hot values.
func TestStatsManyTemplatesFold(t *testing.T) {
	var msgs []*broker.Message
	for i := range 3000 {
		w := strings.Repeat("x", i%50+1) + fmt.Sprint(strings.Repeat("y", i/50+1))
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint(i), Headers: map[string]any{"x-exception-message": "failure " + w + " seen"}})
	}
	res, _ := collect(t, msgs, "reason", StatsOptions{MaxGroups: 100})
	if n := len(res.Groups); n != 101 || res.Groups[100].Values[0] != OtherGroup || res.Folded != 2900 {
		t.Fatalf("%d groups, folded %d, last %v", n, res.Folded, res.Groups[len(res.Groups)-1].Values)
	}
}

func TestGroupSelector(t *testing.T) {
	msgs := incident(50)
	for i, typ := range []string{"OrderShipped", "OrderCancelled"} {
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint("ev-", i), Headers: map[string]any{"x-exception-message": "Unknown event type " + typ}})
	}
	ctx := context.Background()
	customers := GroupID("Customer <id> not found")
	events := GroupID("Unknown event type <*>")
	sel := NewGroupSelector([]string{strings.ToUpper(customers), events}, nil)
	if _, err := sel.Resolve(ctx, newFakePeeker(t, msgs...), "orders.dlq", broker.PeekOptions{}, 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		if ok, err := sel.Match(ctx, m); err != nil {
			t.Fatal(err)
		} else if ok {
			got = append(got, m.ID)
		}
	}
	want := []string{"m-3", "m-8", "m-13", "m-18", "m-23", "m-28", "m-33", "m-38", "m-43", "m-48", "ev-0", "ev-1"}
	if d := testdiff.Lines(want, got); d != "" {
		t.Errorf("selected:\n%s", d)
	}
	// Stats counts only the selected groups.
	res, _ := collect(t, msgs, "reason", StatsOptions{Groups: sel})
	if res.Total != 12 || len(res.Groups) != 2 {
		t.Errorf("stats of the selection: total %d, %d groups", res.Total, len(res.Groups))
	}
	bad := NewGroupSelector([]string{customers, "0123456789"}, nil)
	_, err := bad.Resolve(ctx, newFakePeeker(t, msgs...), "orders.dlq", broker.PeekOptions{}, 0)
	var ue *UnknownGroupError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownGroup) || len(ue.IDs) != 1 || ue.IDs[0] != "0123456789" {
		t.Fatalf("unknown group: %v", err)
	}
}

// The timeline widens and shifts to fit whatever order deaths come in:
// newest first and oldest first give the same trend here (in general a
// fine bucket's edges may differ, moving a count by one bucket at most).
func TestStatsTrendOrderIndependent(t *testing.T) {
	var msgs []*broker.Message
	for i := range 64 {
		at := t0.Add(-time.Duration(i+1) * 37 * time.Minute)
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint(i), Death: &broker.Death{Reason: "rejected", First: at}})
	}
	newest, _ := collect(t, msgs, "reason", StatsOptions{})
	reversed := append([]*broker.Message(nil), msgs...)
	slices.Reverse(reversed)
	oldest, _ := collect(t, reversed, "reason", StatsOptions{})
	if d := testdiff.JSON(t, newest.Groups[0].Trend, oldest.Groups[0].Trend); d != "" {
		t.Fatalf("trend depends on order:\n%s", d)
	}
	// Evenly spread deaths give an even trend: 4 a bucket, give or take one.
	for i, c := range newest.Groups[0].Trend {
		if c < 3 || c > 5 {
			t.Errorf("bucket %d holds %d of 64 evenly spread deaths: %v", i, c, newest.Groups[0].Trend)
		}
	}
	if s := Sparkline([]int64{0, 1, 4, 8}); s != "▁▃▅█" {
		t.Errorf("Sparkline = %q", s)
	}
}

// A hot key among many distinct values is found, with a guaranteed count;
// values seen once are not reported as hot.
func TestStatsHotKeyAmongMany(t *testing.T) {
	var msgs []*broker.Message
	for i := range 1000 {
		c := 1000 + i
		if i%10 < 3 {
			c = 42
		}
		msgs = append(msgs, &broker.Message{ID: fmt.Sprint(i), Headers: map[string]any{"x-exception-message": fmt.Sprintf("Customer cus_%d not found", c)}})
	}
	res, _ := collect(t, msgs, "reason", StatsOptions{})
	h := res.Groups[0].Hot[0]
	if !h.Approximate || len(h.Values) != 1 || h.Values[0].Value != "cus_42" || h.Values[0].Count < 200 || h.Values[0].Count > 300 {
		t.Fatalf("hot values %v, approximate %t: want cus_42 alone, 200..300 of its 300, approximate", h.Values, h.Approximate)
	}
	if txt := HotText(res.Groups[0].Hot, 3); !strings.HasPrefix(txt, "<id> cus_42×≥") {
		t.Errorf("HotText = %q: a lower bound shows as ≥", txt)
	}
}
