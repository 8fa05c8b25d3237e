package inspect

import (
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// AgeWindow selects messages by age (broker.Message.Age: since the first
// death, else publication), as redrive's --older-than and --newer-than do.
// The zero value admits every message.
type AgeWindow struct {
	OlderThan time.Duration // only messages at least this old
	NewerThan time.Duration // only messages at most this old (age known)
}

// IsZero reports whether w admits every message.
func (w AgeWindow) IsZero() bool { return w.OlderThan <= 0 && w.NewerThan <= 0 }

// Admits reports whether m, at now, is inside the window. A message of
// unknown age is never newer than anything.
func (w AgeWindow) Admits(m *broker.Message, now time.Time) bool {
	tooNew, tooOld := w.Outside(m, now)
	return !tooNew && !tooOld
}

// Outside reports on which side of the window m lies at now: tooNew when
// it is younger than OlderThan, tooOld when it is older than NewerThan or
// its age is unknown while NewerThan is set.
func (w AgeWindow) Outside(m *broker.Message, now time.Time) (tooNew, tooOld bool) {
	if w.IsZero() {
		return false, false
	}
	age := m.Age(now)
	return w.OlderThan > 0 && age < w.OlderThan, w.NewerThan > 0 && (age == 0 || age > w.NewerThan)
}
