package tui

import (
	"regexp"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// A message dlq's client could not decode (shown through the management
// API, with its position) is marked UNREADABLE in the list, and its detail
// says why and how to take it.
func TestUnreadableMessageIsMarked(t *testing.T) {
	m := sampleMessages("orders.dlq", 1)[0]
	m.Unreadable, m.Position = "its headers nest tables 40 levels deep", "3"
	s := screens(t, []*broker.Message{m}, "reason")
	list := sgr.ReplaceAllString(s["messages"], "")
	if !regexp.MustCompile(`UNREADABLE`).MatchString(list) {
		t.Errorf("the list does not mark the unreadable message:\n%s", list)
	}
	detail := sgr.ReplaceAllString(s["detail"], "")
	if !regexp.MustCompile(`UNREADABLE +its headers nest tables 40 levels deep`).MatchString(detail) ||
		!regexp.MustCompile(`position +3 \(.dlq redrive --position 3. or .dlq discard --position 3. takes it\)`).MatchString(detail) {
		t.Errorf("the detail does not say why and how to take it:\n%s", detail)
	}
	m.Unreadable = ""
	s = screens(t, []*broker.Message{m}, "reason")
	if regexp.MustCompile(`UNREADABLE`).MatchString(sgr.ReplaceAllString(s["messages"]+s["detail"], "")) {
		t.Error("a readable message is marked UNREADABLE")
	}
}
