package tui

import (
	"strings"
	"testing"
)

// TestEditKeepsTheGroupFilter: saving an edit reloads the list; a list
// filtered on a failure group still shows that group's messages (the
// reloaded ones, which are new copies), not "no message matches".
func TestEditKeepsTheGroupFilter(t *testing.T) {
	f := newFake()
	f.messages["orders.dlq"] = incidentMessages("orders.dlq")
	f.expectCall("replace")
	ed := writeEditor(t, `s/"order_id": 0/"order_id": 10/`)
	h := start(t, f.backend(false), Options{Queue: "orders.dlq", Editor: ed, TempDir: t.TempDir()})
	h.waitFor("45 read")
	h.key("g")
	h.waitFor("failure reasons", "3 failure groups")
	h.key("enter")
	h.waitFor("15 match", "inc-00")
	h.key("enter")
	h.waitFor("message inc-00")
	h.key("e")
	h.waitFor("edit inc-00")
	h.key("ctrl+e")
	h.waitFor(`"order_id": 10`)
	h.key("ctrl+s")
	h.waitFor("review the change")
	h.key("enter")
	h.waitFor("publish the edited message to")
	h.key("enter")
	h.waitFor("save edited message?")
	h.key("y")
	h.waitFor("published edited inc-00")
	// The reload, then the filter over it, are done: wait for both (the
	// filter runs after the reload; a frame between the two shows
	// "filtering…" with 0 match).
	h.waitFrame(func(frame string) bool {
		return strings.Contains(frame, "45 read") && !strings.Contains(frame, "reading") &&
			!strings.Contains(frame, "filtering") && strings.Contains(frame, " match")
	})
	frame := *h.frame.Load()
	m := h.final()
	f.verify(t)
	if m.Visible() != 15 || !strings.Contains(frame, "15 match") {
		t.Fatalf("after the edit the group filter shows %d messages, want 15:\n%s", m.Visible(), frame)
	}
}
