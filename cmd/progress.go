package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/redrive"
)

// redriveBar draws a progress bar on a terminal's stderr.
type redriveBar struct {
	f     *Factory
	verb  string
	shown bool
	last  time.Time
}

func newRedriveBar(f *Factory, verb string) *redriveBar { return &redriveBar{f: f, verb: verb} }

func (b *redriveBar) update(p redrive.Progress) {
	if !b.f.IO.IsStderrTTY() || p.Done {
		return
	}
	if now := time.Now(); now.Sub(b.last) < 200*time.Millisecond {
		return
	} else {
		b.last = now
	}
	b.shown = true
	line := progressCount(b.verb, p)
	if p.Total > 0 {
		const width = 24
		frac := float64(p.Behind()) / float64(p.Total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		line = "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "] " + line
	}
	line += fmt.Sprintf("  %.0f msg/s", p.Rate)
	if eta := p.ETA(); eta > 0 {
		line += "  ETA " + eta.Round(time.Second).String()
	}
	if p.Skipped > 0 || p.Failed > 0 {
		line += fmt.Sprintf("  skipped %d failed %d", p.Skipped, p.Failed)
	}
	if p.Blocked {
		line += "  (paused: broker blocked)"
	}
	fmt.Fprintf(b.f.IO.ErrOut, "\r\x1b[K%s", line)
}

// progressCount words what a progress report measures: moves against the
// selection when it is known ("moved 24/60"), otherwise the messages
// examined against the queue's depth at the start ("moved 24, examined 84
// of ~200 in the queue"), or the moves alone when neither is known.
func progressCount(verb string, p redrive.Progress) string {
	switch {
	case p.Total > 0 && p.Selected:
		return fmt.Sprintf("%s %d/%d", verb, p.Moved, p.Total)
	case p.Total > 0:
		return fmt.Sprintf("%s %d, examined %d of ~%d in the queue", verb, p.Moved, p.Examined, p.Total)
	}
	return fmt.Sprintf("%s %d", verb, p.Moved)
}

func (b *redriveBar) finish() {
	if b.shown {
		fmt.Fprint(b.f.IO.ErrOut, "\r\x1b[K")
	}
}
