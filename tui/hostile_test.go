package tui

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/dlq-tools/dlq/broker"
)

// screens renders the message list, the first message's detail and the
// statistics grouped by spec, without colour, as the user sees them.
func screens(t *testing.T, msgs []*broker.Message, spec string) map[string]string {
	t.Helper()
	f := newFake()
	b := f.backend(false)
	m := New(context.Background(), b, Options{Refresh: -1, Now: func() time.Time { return testNow }}, nil)
	m.c.width, m.c.height = termW, termH
	m.screen = screenMessages
	m.msgs.queue = "orders.dlq"
	for i, msg := range msgs {
		m.msgs.rows = append(m.msgs.rows, newRow(msg, i, deathReason, nil))
	}
	out := map[string]string{"messages": m.View().Content}
	m.detail = newDetailView(m.c, m.msgs.rows[0], 0)
	m.screen = screenDetail
	out["detail"] = m.View().Content
	g, err := fakeGroup(context.Background(), spec, msgs)
	if err != nil {
		t.Fatal(err)
	}
	m.stats.rows, m.stats.res, m.stats.spec = m.msgs.rows, g, spec
	m.screen = screenStats
	out["stats"] = m.View().Content
	return out
}

// sgr is a Select Graphic Rendition sequence: the TUI's own styling.
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// rawControl is the first control character of a screen, its own styling
// and line breaks aside; -1 when none.
func rawControl(screen string) rune {
	for _, r := range sgr.ReplaceAllString(screen, "") {
		if r != '\n' && unicode.IsControl(r) {
			return r
		}
	}
	return -1
}

// Escape sequences in a message's ID, death record and headers show on
// every screen instead of acting: no screen holds a control character but
// its own styling and line breaks.
func TestHostileFieldsShowInTheViews(t *testing.T) {
	const (
		link  = "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\"
		clear = "\x1b[2J"
	)
	m := sampleMessages("orders.dlq", 1)[0]
	m.ID = "id" + clear + "\u009b1m"
	m.Exchange, m.RoutingKey = "dlx"+link, "rk\a"
	m.Headers["x-exception-message"] = "boom" + link
	m.Headers["x-note"+clear] = "v"
	m.Death.Reason, m.Death.Queue = "rejected"+clear, "orders"+link
	m.Death.History[0].Reason, m.Death.History[0].Queue = m.Death.Reason, m.Death.Queue
	m.Death.History[0].RoutingKeys = []string{"k" + clear}
	for name, screen := range screens(t, []*broker.Message{m}, "reason,source,exchange,routing-key,header:x-exception-message") {
		if r := rawControl(screen); r != -1 {
			t.Errorf("%s screen carries a raw %U:\n%q", name, r, screen)
		}
		want := `\x1b]8;;http:` // the hyperlink, shown
		if name == "messages" {
			want = `id\x1b[2J\u009b1m` // the list cuts the source short
		}
		if !strings.Contains(screen, want) {
			t.Errorf("%s screen does not show %s:\n%s", name, want, screen)
		}
	}
}

// FuzzViews renders the message list, a message and the statistics with
// fuzzed times, sizes, counts and text: no screen panics or lets a control
// character through.
func FuzzViews(f *testing.F) {
	for _, sec := range []int64{0, -1, 1 << 62, -1 << 62, math.MaxInt64, math.MinInt64, 253402300799} {
		for _, n := range []int64{0, -1, math.MaxInt64, math.MinInt64} {
			f.Add(sec, n, uint16(0), "id\x1b[2J", "reason\u009b")
		}
	}
	f.Add(int64(1772366400), int64(3), uint16(1<<15), "", "")
	f.Fuzz(func(t *testing.T, sec, n int64, size uint16, id, reason string) {
		at := time.Unix(sec, 0)
		msgs := sampleMessages("orders.dlq", 3)
		for i, m := range msgs {
			m.ID = id + strings.Repeat("x", i)
			m.Timestamp, m.DeliveryCount = at, n
			m.Body = make([]byte, size)
			m.Headers["x-count"] = n
			m.Death.Reason, m.Death.Count, m.Death.First, m.Death.Last = reason, n, at, at
			m.Death.History[0].Count, m.Death.History[0].Time, m.Death.History[0].Reason = n, at, reason
		}
		msgs[1].Timestamp, msgs[1].Death.First = time.Time{}, testNow
		for _, spec := range []string{"reason", "age,day,hour", "redrives,header:x-count"} {
			for name, screen := range screens(t, msgs, spec) {
				if r := rawControl(screen); r != -1 {
					t.Fatalf("%s screen (%s) carries a raw %U:\n%q", name, spec, r, screen)
				}
			}
		}
	})
}
