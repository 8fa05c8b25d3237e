package cmd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// interruptedRuns lists the interrupted journals of one source (key).
func interruptedRuns(dir, key string) []redrive.JournalInfo {
	js, _ := redrive.ListJournals(dir)
	var out []redrive.JournalInfo
	for _, j := range js {
		if j.State == redrive.JournalInterrupted && j.Header.Key == key {
			out = append(out, j)
		}
	}
	return out
}

// journalHeader is the header this run's journal has, redacted as journals
// keep it.
func (o *redriveOptions) journalHeader() redrive.JournalHeader {
	p := o.plan()
	for k, v := range p {
		p[k] = broker.Redact(v)
	}
	return redrive.JournalHeader{Destination: broker.Redact(o.To), Plan: p}
}

// matchesJournal is whether every setting given now is the interrupted
// run's: the settings not given are taken from its journal.
func (o *redriveOptions) matchesJournal(h redrive.JournalHeader) bool {
	now := o.journalHeader().Plan
	for _, k := range slices.Concat(slices.Collect(maps.Keys(now)), slices.Collect(maps.Keys(h.Plan))) {
		if o.changed(k) && now[k] != h.Plan[k] {
			return false
		}
	}
	return true
}

// samePlan is whether two journals are of the same run: one destination,
// one selection, one way.
func samePlan(a, b redrive.JournalHeader) bool {
	return a.Destination == b.Destination && maps.Equal(a.Plan, b.Plan)
}

// describeJournal is one line naming an interrupted run: its id, when, from
// where to where, and what it selected.
func describeJournal(j redrive.JournalInfo) string {
	h := j.Header
	var sel []string
	for _, k := range slices.Sorted(maps.Keys(h.Plan)) {
		if k != "to" {
			sel = append(sel, fmt.Sprintf("--%s %s", k, strings.ReplaceAll(h.Plan[k], "\x1f", ",")))
		}
	}
	what := "every message"
	if len(sel) > 0 {
		what = strings.Join(sel, " ")
	}
	if h.Chosen > 0 {
		what += fmt.Sprintf(" (only the %d messages its preview chose)", h.Chosen)
	}
	return fmt.Sprintf("  %s  %s  %s → %s  %s", h.RunID, h.Started.UTC().Format("2006-01-02 15:04 MST"), h.Source, h.Destination, what)
}

// resumeCandidates picks the interrupted runs of this source that --resume
// finishes: those whose settings match every one given now, all of one
// plan. Otherwise it names them and fails, moving nothing.
func (o *redriveOptions) resumeCandidates(cands []redrive.JournalInfo, srcName string) ([]string, error) {
	var match []redrive.JournalInfo
	for _, c := range cands {
		if o.matchesJournal(c.Header) {
			match = append(match, c)
		}
	}
	list := func(js []redrive.JournalInfo) {
		for _, j := range js {
			o.f.IO.Statusf("%s", describeJournal(j))
		}
	}
	if len(match) == 0 {
		o.f.IO.Statusf("interrupted redrives of `%s`:", srcName)
		list(cands)
		return nil, fmt.Errorf("no interrupted redrive of `%s` (listed above) has this destination and selection: pass the same --to and selection to finish one, or remove them with `dlq redrive journals --prune --interrupted`", srcName)
	}
	for _, m := range match[1:] {
		if !samePlan(m.Header, match[0].Header) {
			o.f.IO.Statusf("interrupted redrives of `%s`:", srcName)
			list(match)
			return nil, fmt.Errorf("%d interrupted redrives of `%s` (listed above) differ in destination or selection: pass the --to and selection of the one to finish", len(match), srcName)
		}
	}
	paths := make([]string, len(match))
	for i, m := range match {
		paths[i] = m.Path
	}
	return paths, nil
}

// supersede ends the interrupted journals of this source that this run,
// finished, did the work of (same destination and selection): they are no
// longer offered to --resume.
func (o *redriveOptions) supersede(dir, key, srcName string, now time.Time) {
	h := o.journalHeader()
	var paths []string
	for _, c := range interruptedRuns(dir, key) {
		if samePlan(c.Header, h) {
			paths = append(paths, c.Path)
		}
	}
	n, err := redrive.EndInterrupted(paths, "superseded", now)
	if n > 0 {
		o.f.IO.Statusf("closed %d interrupted journal(s) of `%s` to %s: this run did their work", n, srcName, h.Destination)
	}
	if err != nil {
		o.f.IO.Statusf("dlq: %v", err)
	}
}
