package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// uuidIDs gives the messages full UUIDs as IDs, as SQS does.
func uuidIDs(msgs []*broker.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		m.ID = fmt.Sprintf("3f2a9c4e-1b7d-4e8a-9c01-5d6e7f80%04d", i)
		ids[i] = m.ID
	}
	return ids
}

// frameLine is the first line of the frame that contains s.
func frameLine(frame, s string) string {
	for _, l := range strings.Split(frame, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestMessagesNarrowShortensIDs: at 80×24 a full UUID would leave no room
// for DELIVERIES; the list shows the first runes of each ID, every header
// whole, and the detail view the full ID.
func TestMessagesNarrowShortensIDs(t *testing.T) {
	f := newFake()
	ids := uuidIDs(f.messages["orders.dlq"])
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.tm.Send(tea.WindowSizeMsg{Width: 80, Height: 24})
	teatestWaitLines(t, h, 24, 80)
	h.waitFor("3f2a9c4e… ")
	frame := *h.frame.Load()
	hdr := frameLine(frame, "AGE")
	for _, col := range []string{"ID", "AGE", "REASON", "SOURCE", "DELIVERIES", "DEATHS", "SIZE"} {
		if !strings.Contains(hdr, col+" ") {
			t.Errorf("the header at 80 columns lacks a whole %s:\n%s", col, hdr)
		}
	}
	if strings.Contains(frame, ids[0]) {
		t.Errorf("the list at 80 columns shows the full ID %s:\n%s", ids[0], frame)
	}
	h.key("enter")
	h.waitFor("message " + ids[0])
	h.final()
}

// TestMessagesWideGivesReasonTheWidth: at 200 columns REASON shows the
// longest reason whole, instead of the first 22 cells.
func TestMessagesWideGivesReasonTheWidth(t *testing.T) {
	f := newFake()
	msgs := f.messages["orders.dlq"]
	const long = "Inventory service returned 503 Service Unavailable for SKU-4821"
	msgs[0].Body = []byte(`{"order_id":1000,"error":"` + long + `"}`)
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.tm.Send(tea.WindowSizeMsg{Width: 200, Height: 30})
	teatestWaitLines(t, h, 30, 200)
	h.waitFor("msg-00000")
	m := h.final()
	shape := m.msgs.at(0).shape
	if len(shape) < 40 {
		t.Fatalf("the reason is %q, want one longer than the old column", shape)
	}
	line := frameLine(*h.frame.Load(), "msg-00000")
	if !strings.Contains(line, shape) || ansi.StringWidth(line) > 200 {
		t.Errorf("at 200 columns the row does not show the reason %q whole:\n%s", shape, line)
	}
}

// TestGroupPickerShareAndWordCut: the failure-group picker shows each
// group's share on the selected row too, and cuts a long label after a
// whole word.
func TestGroupPickerShareAndWordCut(t *testing.T) {
	f := newFake()
	const long = "Inventory service unavailable while reserving stock for the order after three attempts with exponential backoff and jitter"
	for i, m := range f.messages["orders.dlq"] {
		if i%3 == 0 {
			m.Body = []byte(`{"error":"` + long + `"}`)
		}
	}
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("g")
	h.waitFor("failure reasons", "3 failure groups")
	frame := *h.frame.Load()
	h.final()
	selected := frameLine(frame, "│ ▸ ")
	if !strings.Contains(selected, "33%") {
		t.Errorf("the selected row lacks its share:\n%s", selected)
	}
	line := selected // the first group: the long reason's
	i, j := strings.Index(line, "Inventory"), strings.Index(line, "…")
	if i < 0 || j < i {
		t.Fatalf("the long label is not cut:\n%s", frame)
	}
	shown := line[i:j]
	if !strings.HasPrefix(long, shown) || (long[len(shown)] != ' ' && !strings.ContainsAny(shown[len(shown)-1:], "/:,;=")) {
		t.Errorf("the label is cut inside a word: %q", shown)
	}
}

// TestQueuesSortLikeTheCLI: the queue list opens in `dlq queues`' order,
// DLQs with messages first (deepest first), then the others by name.
func TestQueuesSortLikeTheCLI(t *testing.T) {
	f := newFake()
	f.queues = append(f.queues, broker.Queue{System: broker.RabbitMQ, Name: "billing.dlq", Kind: broker.KindClassic, Depth: 40, IsDLQ: true, Role: broker.RoleDLQ})
	broker.AssignRoles(f.queues, nil)
	h := start(t, f.backend(false), Options{})
	h.waitFor("billing.dlq", "orders.dlq", "sort: attention")
	m := h.final()
	var got []string
	for _, i := range m.queues.visible {
		got = append(got, m.queues.all[i].Name)
	}
	want := []string{"billing.dlq", "orders.dlq", "orders", "orders.retry", "payments", "payments.dlq"}
	if d := testdiff.Lines(want, got); d != "" {
		t.Errorf("queue order:\n%s", d)
	}
}

// TestDetailDeathHistoryNewestFirst: the detail view lists deaths newest
// first, as `dlq show` does and as the broker records them.
func TestDetailDeathHistoryNewestFirst(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("down", "enter")
	h.waitFor("message msg-00001", "expired in orders.retry", "rejected in orders")
	frame := *h.frame.Load()
	h.final()
	newer, older := strings.Index(frame, "expired in orders.retry"), strings.Index(frame, "rejected in orders")
	if newer > older || !strings.Contains(frame, "death history (newest first)") {
		t.Errorf("the death in orders.retry (30s later) is listed after the one in orders:\n%s", frame)
	}
}

// TestQueuesWideNameColumn: at 200 columns NAME is as wide as the longest
// name, not the whole rest of the screen.
func TestQueuesWideNameColumn(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{})
	h.waitFor("payments.dlq")
	h.tm.Send(tea.WindowSizeMsg{Width: 200, Height: 30})
	teatestWaitLines(t, h, 30, 200)
	h.waitFor("payments.dlq")
	frame := *h.frame.Load()
	h.final()
	hdr := frameLine(frame, "NAME")
	if i := strings.Index(hdr, "KIND"); i > len("orders.retry")+4 {
		t.Errorf("at 200 columns KIND starts at column %d, after names of at most %d:\n%s", i, len("orders.retry"), hdr)
	}
}
