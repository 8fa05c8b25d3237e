package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
)

// Triage is a triage plan of the loaded messages, as `dlq triage` makes it:
// per failure group, the suggested action, the rule that chose it and the
// evidence.
type Triage struct {
	Groups []TriageGroup
	// Of returns the index in Groups of m's group, -1 when m is in none.
	Of func(m *broker.Message) int
}

// TriageGroup is one group of a Triage.
type TriageGroup struct {
	ID, Template string
	Count        int
	// Action is redrive, wait, fix, park or look; Rule chose it, for Why.
	Action, Rule, Kind, Why string
	// Transform is the --transform skeleton of a fix.
	Transform string
	// Evidence is shown line by line (types, frameworks, attempts, …).
	Evidence []string
}

// triageChoices are the actions a key cycles a group through. A fix needs
// its transform completed in a plan file, so the view never makes one.
var triageChoices = []string{"redrive", "wait", "park", "look", "skip"}

// triageView lists the failure groups with their suggested actions; keys
// change an action, show the evidence, and apply the plan after a review.
type triageView struct {
	c        *common
	plan     Triage
	actions  []string // the action chosen per group
	cursor   int
	offset   int
	evidence bool
	busy     bool
	pending  bool
	gen      int
	rows     []*row
}

type triageMsg struct {
	gen  int
	plan Triage
	err  error
}

// openTriageMsg shows the triage of the messages read so far.
type openTriageMsg struct{}

func newTriageView(c *common) triageView { return triageView{c: c} }

func (t triageView) open(rows []*row, loading bool) (triageView, tea.Cmd) {
	t.cursor, t.offset, t.evidence = 0, 0, false
	t.pending = loading
	return t, t.compute(rows)
}

func (t *triageView) compute(rows []*row) tea.Cmd {
	t.gen++
	t.busy = true
	t.rows = rows
	gen := t.gen
	tri := t.c.backend.Triage
	if tri == nil {
		t.busy = false
		return func() tea.Msg { return triageMsg{gen: gen, err: errors.New("triage is not available here")} }
	}
	msgs := make([]*broker.Message, len(rows))
	for i, r := range rows {
		msgs[i] = r.msg
	}
	ctx := t.c.ctx
	return t.c.safe(func() tea.Msg {
		p, err := tri(ctx, msgs)
		return triageMsg{gen: gen, plan: p, err: err}
	})
}

func (t triageView) update(msg tea.Msg) (triageView, tea.Cmd) {
	if m, ok := msg.(triageMsg); ok && m.gen == t.gen {
		t.busy = false
		if m.err != nil {
			return t, func() tea.Msg { return errMsg{m.err} }
		}
		old := map[string]string{}
		for i, g := range t.plan.Groups {
			if i < len(t.actions) {
				old[g.ID] = t.actions[i]
			}
		}
		t.plan = m.plan
		t.actions = make([]string, len(m.plan.Groups))
		for i, g := range m.plan.Groups {
			t.actions[i] = g.Action
			if a, ok := old[g.ID]; ok {
				t.actions[i] = a
			}
		}
		t.cursor = min(t.cursor, max(0, len(t.plan.Groups)-1))
	}
	return t, nil
}

func (t triageView) loaded(rows []*row) (triageView, tea.Cmd) {
	if !t.pending {
		return t, nil
	}
	t.pending = false
	return t, t.compute(rows)
}

// groupIDs returns the message IDs of group i among the loaded rows.
func (t *triageView) groupIDs(i int) []string {
	var ids []string
	if t.plan.Of == nil {
		return nil
	}
	for _, r := range t.rows {
		if t.plan.Of(r.msg) == i {
			ids = append(ids, r.id)
		}
	}
	return ids
}

func (t triageView) updateKey(k tea.KeyPressMsg) (triageView, tea.Cmd, tea.Msg) {
	km := t.c.keys.triage
	n := len(t.plan.Groups)
	switch {
	case key.Matches(k, km.Up):
		t.cursor = max(0, t.cursor-1)
	case key.Matches(k, km.Down):
		t.cursor = min(max(0, n-1), t.cursor+1)
	case key.Matches(k, km.Evidence):
		t.evidence = !t.evidence
	case key.Matches(k, km.Action):
		if t.cursor < n {
			choices := triageChoices
			if g := t.plan.Groups[t.cursor]; g.Action == "fix" {
				choices = append([]string{"fix"}, triageChoices...)
			}
			i := slices.Index(choices, t.actions[t.cursor])
			t.actions[t.cursor] = choices[(i+1)%len(choices)]
		}
	case key.Matches(k, km.Apply):
		if t.busy || t.pending {
			return t, nil, errNotice("wait until the whole queue is read and triaged to apply the plan")
		}
		return t, nil, applyTriageMsg{}
	case key.Matches(k, t.c.keys.global.Back):
		return t, nil, navigateMsg{to: screenMessages}
	}
	return t, nil, nil
}

// applyTriageMsg asks the root model to review and apply the plan.
type applyTriageMsg struct{}

// triageStep is one acting group of a plan being applied.
type triageStep struct {
	id, action, template string
	ids                  []string
}

// reviewTriage shows the whole plan (as `dlq triage apply` does) and, when
// confirmed, runs each acting group's action in order: a redrive with a
// canary, or a discard archive-first; it stops at the first group that
// fails or whose canary stops itself.
func (m Model) reviewTriage() (Model, tea.Cmd) {
	t := &m.triage
	queue := m.msgs.queue
	var steps []triageStep
	var body []string
	for i, g := range t.plan.Groups {
		a := t.actions[i]
		sign := " "
		switch a {
		case "redrive", "fix":
			sign = "~"
		case "park":
			sign = "-"
		}
		body = append(body, fmt.Sprintf("%s %-7s %-10s %6d  %s", sign, a, vis(g.ID), g.Count, oneLine(g.Template, 60)))
		switch a {
		case "fix":
			m.notice = &notice{text: fmt.Sprintf("group %s is to fix: its transform (%s) must be completed in a plan file (dlq triage -o yaml); change its action with a, or apply the plan from the command line", g.ID, g.Transform), isErr: true}
			return m, nil
		case "redrive", "park":
			if g.ID == "" {
				continue
			}
			ids := t.groupIDs(i)
			if len(ids) == 0 {
				continue
			}
			steps = append(steps, triageStep{id: g.ID, action: a, template: g.Template, ids: ids})
		}
	}
	if len(steps) == 0 {
		m.notice = &notice{text: "nothing to apply: no group is to redrive or park"}
		return m, nil
	}
	redrive, discard := m.c.backend.Redrive, m.c.backend.Discard
	for _, s := range steps {
		if s.action == "redrive" && redrive == nil || s.action == "park" && discard == nil {
			m.notice = &notice{text: "this broker cannot " + s.action + " here", isErr: true}
			return m, nil
		}
	}
	body = append(body, "", "redrive: a canary (1, 5, 10%, 25%, rest) to each message's origin; park: discard, archived first.",
		"the groups run in this order; the first that fails or whose canary stops ends the plan.")
	archives := map[string]string{}
	for _, s := range steps {
		if s.action == "park" {
			archives[s.id] = m.defaultArchive("parked-" + s.id)
		}
	}
	words := m.c.settingWords
	m.dialog = newConfirm(fmt.Sprintf("apply the triage plan to %s (%d groups)?", queue, len(steps)), body, true, func(m Model) (Model, tea.Cmd) {
		return m.startJob(fmt.Sprintf("applying the triage plan (%d groups)", len(steps)), func(ctx context.Context, p func(Progress)) (Result, error) {
			var total Result
			var done []string
			for _, s := range steps {
				req := ActionRequest{Queue: queue, IDs: s.ids, Expected: int64(len(s.ids)), Groups: []string{s.id}, Words: words}
				var res Result
				var err error
				if s.action == "park" {
					req.Archive = archives[s.id]
					res, err = discard(ctx, req, p)
				} else {
					req.Dest, req.Canary = broker.Destination{Kind: broker.ToOrigin}, true
					res, err = redrive(ctx, req, p)
				}
				total.Done += res.Done
				total.Skipped += res.Skipped
				total.Failed += res.Failed
				if err != nil {
					total.Summary = strings.Join(append(done, fmt.Sprintf("%s %s stopped", s.action, s.id)), "; ")
					return total, fmt.Errorf("group %s (%s): %w; the groups after it were not touched", s.id, s.action, err)
				}
				done = append(done, fmt.Sprintf("%s %s: %s", s.action, s.id, res.Summary))
			}
			total.Summary = "triage plan applied: " + strings.Join(done, "; ")
			return total, nil
		}, func(m Model, _ Result) (Model, tea.Cmd) { return m.reload() })
	})
	return m, nil
}

func (t *triageView) view(h, w int) []string {
	st := t.c.styles
	groups := t.plan.Groups
	line := "triage" + st.subtle.Render(fmt.Sprintf("  ·  %s", countOf(len(groups), "group")))
	if t.busy {
		line += st.subtle.Render("  ·  triaging…")
	}
	if t.pending {
		line += st.subtle.Render("  ·  queue still being read")
	}
	out := []string{line}
	if len(groups) == 0 {
		if t.busy {
			return append(out, "", "  triaging…")
		}
		return append(out, "", "  no messages")
	}
	hdr := fit("ID", 11) + fit("ACTION", 9) + fitRight("COUNT", 7) + "  " + fit("RULE", 20) + " " + "TEMPLATE"
	out = append(out, st.header.Render(fit(hdr, w)))
	var ev []string
	if t.evidence && t.cursor < len(groups) {
		g := groups[t.cursor]
		ev = append(ev, st.subtle.Render(fit("── "+vis(g.ID)+": "+vis(g.Why), w)))
		if g.Transform != "" {
			ev = append(ev, fit("   transform: "+vis(g.Transform), w))
		}
		for _, e := range g.Evidence {
			ev = append(ev, fit("   "+vis(e), w))
		}
	}
	rows := h - len(out) - len(ev)
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+rows {
		t.offset = t.cursor - rows + 1
	}
	for i := t.offset; i < len(groups) && i < t.offset+rows; i++ {
		g := groups[i]
		a := t.actions[i]
		if a != g.Action {
			a += "*"
		}
		l := fit(vis(g.ID), 11) + fit(a, 9) + fitRight(strconv.Itoa(g.Count), 7) + "  " + fit(g.Rule, 20) + " " + oneLine(g.Template, 200)
		if i == t.cursor {
			out = append(out, st.cursor.Render(fit(l, w)))
			continue
		}
		out = append(out, fit(l, w))
	}
	for len(out) < h-len(ev) {
		out = append(out, "")
	}
	return append(out, ev...)
}

// triageKeys are the triage screen's bindings (Open is on the messages
// screen).
type triageKeys struct {
	Open, Up, Down, Evidence, Action key.Binding
	// dangerous
	Apply key.Binding
}

func newTriageKeys(c capabilities, up, down key.Binding) triageKeys {
	k := triageKeys{
		Open: bind([]string{"t"}, "t", "triage"),
		Up:   up, Down: down,
		Evidence: bind([]string{"enter"}, "enter", "show/hide evidence"),
		Action:   bind([]string{"a"}, "a", "change action"),
	}
	if c.redrive || c.discard {
		k.Apply = bind([]string{"A"}, "A", "review and apply plan ⚠")
	}
	return k
}

func (k keyMap) triageHelp() helpMap {
	t, g := k.triage, k.global
	return helpMap{
		short: present(t.Evidence, t.Action, t.Apply, g.Help, g.Back),
		full: [][]key.Binding{
			present(t.Up, t.Down),
			present(t.Evidence, t.Action),
			present(t.Apply),
			present(g.Help, g.Back, g.CancelJob, g.Quit),
		},
	}
}
