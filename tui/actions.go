package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
)

// destinationChoices lists where a message (or the selection) can be sent:
// its origin first (the default), then the queue it died in, then a typed
// destination. A nil destination means "ask".
func destinationChoices(sample *broker.Message, queue string) ([]string, []string, []*broker.Destination) {
	opts := []string{"origin"}
	hints := []string{"where each message was dead-lettered from (default)"}
	dests := []*broker.Destination{{Kind: broker.ToOrigin}}
	if sample != nil && sample.Death != nil && sample.Death.Queue != "" && sample.Death.Queue != queue {
		q := sample.Death.Queue
		opts = append(opts, "queue:"+q)
		hints = append(hints, "straight to the queue it died in")
		dests = append(dests, &broker.Destination{Kind: broker.ToQueue, Queue: q})
	}
	opts = append(opts, "other…")
	hints = append(hints, "queue:NAME, exchange:NAME[:KEY] or file://PATH")
	dests = append(dests, nil)
	return opts, hints, dests
}

func (m Model) askCustomDestination(then func(m Model, d broker.Destination) (Model, tea.Cmd)) (Model, tea.Cmd) {
	d, cmd := newInput("destination", []string{"origin, queue:NAME, exchange:NAME[:KEY] or file://PATH"}, "", "queue:orders",
		func(m Model, _ int, text string) (Model, tea.Cmd) {
			dest, err := broker.ParseDestination(strings.TrimSpace(text))
			if err != nil {
				m.notice = &notice{text: err.Error(), isErr: true}
				return m, nil
			}
			return then(m, dest)
		})
	m.dialog = d
	return m, cmd
}

// sampleOf returns a loaded message with one of ids, for destination hints.
func (m Model) sampleOf(ids []string) *broker.Message {
	if len(ids) == 0 {
		return nil
	}
	for _, r := range m.msgs.rows {
		if r.id == ids[0] {
			return r.msg
		}
	}
	return nil
}

// askRedrive picks a destination for the given messages (chosen as the
// messages of groups, or by hand), shows the count and asks to confirm. With
// no ids it redrives everything matching filter. sample gives the
// destination hints.
func (m Model) askRedrive(ids []string, filter string, count int64, sample *broker.Message, groups []string) (Model, tea.Cmd) {
	if m.c.backend.Redrive == nil {
		return m, nil
	}
	if len(ids) == 0 && filter == "" && count == 0 {
		m.notice = &notice{text: "nothing to redrive", isErr: true}
		return m, nil
	}
	queue := m.msgs.queue
	opts, hints, dests := destinationChoices(sample, queue)
	what := fmt.Sprintf("%d message(s)", count)
	m.dialog = newChoice("redrive "+what+" to", []string{"messages are removed from " + queue + " only after the destination confirms them"}, opts, hints,
		func(m Model, choice int, _ string) (Model, tea.Cmd) {
			confirm := func(m Model, dest broker.Destination) (Model, tea.Cmd) {
				req := ActionRequest{Queue: queue, IDs: ids, Filter: filter, Dest: dest, Expected: count, Groups: groups, Words: m.c.settingWords}
				if len(groups) > 0 {
					return m.askCanary(req)
				}
				return m.confirmRedrive(req)
			}
			if dests[choice] == nil {
				return m.askCustomDestination(confirm)
			}
			return confirm(m, *dests[choice])
		})
	return m, nil
}

// askCanary offers a group redrive in canary steps (the default) or all
// at once.
func (m Model) askCanary(req ActionRequest) (Model, tea.Cmd) {
	m.dialog = newChoice(fmt.Sprintf("redrive %d message(s): how", req.Expected), []string{"a group often fails the same way again until its cause is fixed"},
		[]string{"canary", "all at once"},
		[]string{"1, 5, 10%, 25%, rest; stops if any come back", "move every message of the group in one run"},
		func(m Model, choice int, _ string) (Model, tea.Cmd) {
			req.Canary = choice == 0
			return m.confirmRedrive(req)
		})
	return m, nil
}

func (m Model) confirmRedrive(req ActionRequest) (Model, tea.Cmd) {
	body := []string{
		fmt.Sprintf("move %d message(s) from %s to %s.", req.Expected, req.Queue, req.Dest),
		"each is removed from the DLQ only after the destination confirmed it.",
	}
	if req.Canary {
		body = append(body, "in steps of 1, 5, 10%, 25%, then the rest: after each step dlq waits for moved",
			"messages that fail again and stops, leaving the rest in the DLQ, when any come back.")
	}
	if req.Filter != "" {
		body = append(body, "filter: "+req.Filter+" (evaluated again on the queue)")
	}
	if len(req.IDs) > 0 && len(req.IDs) <= 5 {
		body = append(body, "ids: "+strings.Join(req.IDs, ", "))
	}
	redrive := m.c.backend.Redrive
	title := fmt.Sprintf("redrive %d message(s)?", req.Expected)
	job := fmt.Sprintf("redriving %d to %s", req.Expected, req.Dest)
	if req.Canary {
		title = fmt.Sprintf("canary redrive %d message(s)?", req.Expected)
		job = fmt.Sprintf("canary redriving %d to %s", req.Expected, req.Dest)
	}
	m.dialog = newConfirm(title, body, true, func(m Model) (Model, tea.Cmd) {
		m.msgs.selected = map[string]bool{}
		return m.startJob(job, func(ctx context.Context, p func(Progress)) (Result, error) {
			return redrive(ctx, req, p)
		}, func(m Model, _ Result) (Model, tea.Cmd) { return m.reload() })
	})
	return m, nil
}

// askDiscard discards ids, chosen as the messages of groups (none: by
// hand). It asks for the archive path first: a discard always archives what
// it removes, and the archive is synced before anything is deleted.
func (m Model) askDiscard(ids, groups []string) (Model, tea.Cmd) {
	if m.c.backend.Discard == nil || len(ids) == 0 {
		return m, nil
	}
	queue := m.msgs.queue
	def := m.defaultArchive("discarded")
	d, cmd := newInput("discard: archive to", []string{
		fmt.Sprintf("%d message(s) are written to this archive and synced before they are removed", len(ids)),
	}, def, "file path", func(m Model, _ int, path string) (Model, tea.Cmd) {
		if path == "" {
			m.notice = &notice{text: "discard needs an archive file: nothing was removed", isErr: true}
			return m, nil
		}
		path = strings.TrimPrefix(path, "file://")
		req := ActionRequest{Queue: queue, IDs: ids, Archive: path, Expected: int64(len(ids)), Groups: groups, Words: m.c.settingWords}
		discard := m.c.backend.Discard
		m.dialog = newConfirm(fmt.Sprintf("discard %d message(s)?", len(ids)), []string{
			fmt.Sprintf("remove %d message(s) from %s after archiving them to %s.", len(ids), queue, path),
			"the action is written to the audit log.",
		}, true, func(m Model) (Model, tea.Cmd) {
			m.msgs.selected = map[string]bool{}
			return m.startJob(fmt.Sprintf("discarding %d", len(ids)), func(ctx context.Context, p func(Progress)) (Result, error) {
				return discard(ctx, req, p)
			}, func(m Model, _ Result) (Model, tea.Cmd) { return m.reload() })
		})
		return m, nil
	})
	m.dialog = d
	return m, cmd
}

// askExport copies ids, chosen as the messages of groups (none: by hand),
// to an archive; nothing changes on the broker.
func (m Model) askExport(ids, groups []string, label string) (Model, tea.Cmd) {
	if m.c.backend.Export == nil || len(ids) == 0 {
		return m, nil
	}
	queue := m.msgs.queue
	d, cmd := newInput("export "+label+" to", []string{"the messages stay in " + queue + "; the archive is a dlq JSON Lines file (.jsonl or .jsonl.gz)"},
		m.defaultArchive("export"), "file path", func(m Model, _ int, path string) (Model, tea.Cmd) {
			if path == "" {
				return m, nil
			}
			path = strings.TrimPrefix(path, "file://")
			req := ActionRequest{Queue: queue, IDs: ids, Archive: path, Expected: int64(len(ids)), Messages: m.messagesOf(ids), Groups: groups}
			export := m.c.backend.Export
			return m.startJob(fmt.Sprintf("exporting %d", len(ids)), func(ctx context.Context, p func(Progress)) (Result, error) {
				return export(ctx, req, p)
			}, nil)
		})
	m.dialog = d
	return m, cmd
}

// chooseEditDestination asks where to publish the edited message.
func (m Model) chooseEditDestination() (Model, tea.Cmd) {
	e := &m.edit
	opts, hints, dests := destinationChoices(e.orig, m.msgs.queue)
	m.dialog = newChoice("publish the edited message to", []string{"the original is removed from " + e.queue + " only after the broker confirms"}, opts, hints,
		func(m Model, choice int, _ string) (Model, tea.Cmd) {
			if dests[choice] == nil {
				return m.askCustomDestination(func(m Model, d broker.Destination) (Model, tea.Cmd) { return m.confirmReplace(d) })
			}
			return m.confirmReplace(*dests[choice])
		})
	return m, nil
}

func (m Model) confirmReplace(dest broker.Destination) (Model, tea.Cmd) {
	e := m.edit
	body := []string{
		fmt.Sprintf("publish the edited message %s to %s with confirms,", e.orig.ID, dest),
		fmt.Sprintf("then remove the original from %s.", e.queue),
		"the action is written to the audit log.",
	}
	m.dialog = newConfirm("save edited message?", body, true, func(m Model) (Model, tea.Cmd) {
		req := ReplaceRequest{Queue: m.edit.queue, Original: m.edit.orig, Edited: m.edit.edited, Dest: dest}
		replace := m.c.backend.Replace
		return m.startJob("publishing edited message", func(ctx context.Context, progress func(Progress)) (Result, error) {
			progress(Progress{Total: 1})
			res, err := replace(ctx, req)
			if err == nil {
				progress(Progress{Done: 1, Total: 1})
				if res.Summary == "" {
					res.Summary = fmt.Sprintf("published edited %s to %s and removed the original from %s", req.Original.ID, dest, req.Queue)
				}
			}
			return res, err
		}, func(m Model, res Result) (Model, tea.Cmd) {
			return m.reload()
		})
	})
	return m, nil
}

// messagesOf returns the loaded messages with the given fingerprints, in
// queue order.
func (m Model) messagesOf(ids []string) []*broker.Message {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []*broker.Message
	for _, r := range m.msgs.rows {
		if want[r.id] {
			out = append(out, r.msg)
		}
	}
	return out
}

func (m Model) defaultArchive(what string) string {
	name := strings.NewReplacer("/", "_", ":", "_", " ", "_").Replace(m.msgs.queue)
	file := fmt.Sprintf("dlq-%s-%s-%s.jsonl", what, name, m.c.now().UTC().Format("20060102T150405Z"))
	if m.c.opts.ArchiveDir != "" {
		return filepath.Join(m.c.opts.ArchiveDir, file)
	}
	return file
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
