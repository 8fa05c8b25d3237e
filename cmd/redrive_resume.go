package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"maps"
	"slices"

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

// plan is what a journal records to finish the run the same way.
func (o *redriveOptions) plan() map[string]string {
	p := map[string]string{"to": broker.Redact(o.To)}
	add := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	add("filter", o.Select.Filter)
	add("group", strings.Join(o.Select.Groups.IDs, ","))
	add("id", strings.Join(o.Select.IDs, ","))
	add("exclude-id", strings.Join(o.Select.Exclude, ","))
	if o.Select.Limit > 0 {
		p["limit"] = strconv.FormatInt(o.Select.Limit, 10)
	}
	if o.Select.OlderThan > 0 {
		p["older-than"] = o.Select.OlderThan.String()
	}
	if o.MaxRedrives > 0 {
		p["max-redrives"] = strconv.FormatInt(o.MaxRedrives, 10)
	}
	if o.Select.NewerThan > 0 {
		p["newer-than"] = o.Select.NewerThan.String()
	}
	add("transform", o.Transform)
	add("dedupe-by", o.DedupeBy)
	add("set-header", strings.Join(o.SetHeaders, "\x1f"))
	if o.KeepDeathHeaders {
		p["keep-death-headers"] = "true"
	}
	if o.KeepFailure {
		p["keep-failure-headers"] = "true"
	}
	if o.ResetRetries {
		p["reset-retries"] = "true"
	}
	if o.Unwrap {
		p["unwrap"] = "true"
	}
	add("reset-header", strings.Join(o.ResetHeaders, "\x1f"))
	if o.NoRedriveHeader {
		p["no-redrive-header"] = "true"
	}
	if o.AllowDrop {
		p["allow-drop"] = "true"
	}
	o.Canary.plan(p)
	return p
}

// adoptPlan takes the interrupted run's settings for every flag not given
// now.
func (o *redriveOptions) adoptPlan(p map[string]string) error {
	set := func(flag string, fn func(v string) error) error {
		v, ok := p[flag]
		if !ok || o.changed(flag) {
			return nil
		}
		if err := fn(v); err != nil {
			return fmt.Errorf("journal: `--%s %s`: %w", flag, v, err)
		}
		return nil
	}
	errs := []error{
		set("to", func(v string) error { o.To = v; return nil }),
		set("filter", func(v string) error { o.Select.Filter = v; return nil }),
		set("group", func(v string) error { o.Select.Groups.IDs = strings.Split(v, ","); return nil }),
		set("id", func(v string) error { o.Select.IDs = strings.Split(v, ","); return nil }),
		set("exclude-id", func(v string) error { o.Select.Exclude = strings.Split(v, ","); return nil }),
		set("limit", func(v string) (err error) { o.Select.Limit, err = strconv.ParseInt(v, 10, 64); return }),
		set("older-than", func(v string) (err error) { o.Select.OlderThan, err = time.ParseDuration(v); return }),
		set("max-redrives", func(v string) (err error) { o.MaxRedrives, err = strconv.ParseInt(v, 10, 64); return }),
		set("newer-than", func(v string) (err error) { o.Select.NewerThan, err = time.ParseDuration(v); return }),
		set("transform", func(v string) error { o.Transform = v; return nil }),
		set("dedupe-by", func(v string) error { o.DedupeBy = v; return nil }),
		set("set-header", func(v string) error { o.SetHeaders = strings.Split(v, "\x1f"); return nil }),
		set("keep-death-headers", func(v string) error { o.KeepDeathHeaders = v == "true"; return nil }),
		set("keep-failure-headers", func(v string) error { o.KeepFailure = v == "true"; return nil }),
		set("reset-retries", func(v string) error { o.ResetRetries = v == "true"; return nil }),
		set("unwrap", func(v string) error { o.Unwrap = v == "true"; return nil }),
		set("reset-header", func(v string) error { o.ResetHeaders = strings.Split(v, "\x1f"); return nil }),
		set("no-redrive-header", func(v string) error { o.NoRedriveHeader = v == "true"; return nil }),
		set("allow-drop", func(v string) error { o.AllowDrop = v == "true"; return nil }),
		set("canary", func(v string) error { o.Canary.Steps = v; return nil }),
		set("canary-wait", func(v string) (err error) {
			o.Canary.Wait, err = time.ParseDuration(v)
			o.Canary.waitSet = true
			return
		}),
		set("canary-max-returns", func(v string) (err error) { o.Canary.MaxReturns, err = strconv.ParseInt(v, 10, 64); return }),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return o.validate()
}

// unmaskTo gives a journal's `--to`, which holds no password, the password
// of this run: the broker URL of --broker or DLQ_BROKER when it names the
// same broker and user, else DLQ_PASSWORD. Without either it fails with the
// ways to give it.
func (f *Factory) unmaskTo(to string) (string, error) {
	brokerPart, dest, hasDest := strings.Cut(to, "#")
	if !broker.HasPassword(brokerPart) {
		return to, nil
	}
	join := func(b string) string {
		if hasDest {
			return b + "#" + dest
		}
		return b
	}
	candidates := []string{f.Options.Broker, os.Getenv("DLQ_BROKER")}
	if s, err := f.resolveBroker(); err == nil {
		candidates = append(candidates, s.Ref)
	}
	for _, c := range candidates {
		if c != brokerPart && broker.HasPassword(c) && broker.Redact(c) == brokerPart {
			return join(c), nil
		}
	}
	if os.Getenv("DLQ_PASSWORD") != "" {
		return join(broker.Unmask(brokerPart)), nil
	}
	return "", flagErrorf("the journal keeps `--to %s` without its password: pass `--to` again with the password, set DLQ_PASSWORD, or name the broker by a context (`--to CONTEXT#%s`)", to, dest)
}
