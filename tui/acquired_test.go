package tui

import (
	"regexp"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// The detail view shows x-acquired-count beside the delivery count when
// the message carries it, and nothing of it otherwise.
func TestDetailShowsAcquiredCount(t *testing.T) {
	m := sampleMessages("orders.dlq", 1)[0]
	m.DeliveryCount, m.AcquiredCount = 2, 9
	detail := sgr.ReplaceAllString(screens(t, []*broker.Message{m}, "reason")["detail"], "")
	if !regexp.MustCompile(`delivery count +2 *\n +acquired count +9 *\n`).MatchString(detail) {
		t.Errorf("detail view lacks the acquired count after the delivery count:\n%s", detail)
	}
	m.AcquiredCount = 0
	detail = sgr.ReplaceAllString(screens(t, []*broker.Message{m}, "reason")["detail"], "")
	if regexp.MustCompile(`acquired count`).MatchString(detail) {
		t.Errorf("detail view of a message without x-acquired-count shows one:\n%s", detail)
	}
}
