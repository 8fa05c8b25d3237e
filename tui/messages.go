package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
)

// messagesView lists the messages of one queue. Rows arrive in pages from
// a background peek; only the visible rows are drawn, so scrolling costs the
// same with 100 or 100,000 messages.
type messagesView struct {
	c     *common
	queue string
	rows  []*row

	// visible holds indices into rows when a filter is active.
	visible  []int32
	filtered bool

	cursor, offset int
	selected       map[string]bool

	// loading
	gen     int
	cancel  context.CancelFunc
	loading bool
	report  broker.PeekReport
	loadErr error

	// jq filter and quick filter (a reason or a stats group)
	input      textinput.Model
	filtering  bool
	expr       string
	matcher    Matcher
	quickLabel string
	quick      func(*row) bool
	fgen       int  // filter generation; stale results are dropped
	fbusy      bool // a filter pass is running
	fdone      int  // rows[:fdone] have been filtered
	ferrs      int  // messages the filter failed on
	// selectAll is set when "select all matching" waits for a filter pass.
	selectAll bool
}

// filterMsg is the result of filtering rows[from:to].
type filterMsg struct {
	fgen     int
	from, to int
	idx      []int32
	errs     int
}

func newMessagesView(c *common) messagesView {
	ti := textinput.New()
	ti.Prompt = "jq> "
	ti.Placeholder = `.death.reason == "rejected" and .body.amount > 100`
	return messagesView{c: c, input: ti, selected: map[string]bool{}}
}

// open starts reading queue. Reopening the queue that is open keeps the
// selection and the filters.
func (mv *messagesView) open(name string) tea.Cmd {
	if mv.cancel != nil {
		mv.cancel()
	}
	keepSel := mv.queue == name
	mv.queue = name
	mv.rows = nil
	mv.visible = nil
	mv.cursor, mv.offset = 0, 0
	if !keepSel {
		mv.selected = map[string]bool{}
		mv.expr, mv.matcher, mv.quick, mv.quickLabel = "", nil, nil, ""
		mv.filtered = false
		mv.input.SetValue("")
	}
	mv.loadErr = nil
	mv.report = broker.PeekReport{}
	mv.fgen++
	mv.fbusy, mv.fdone, mv.ferrs = false, 0, 0
	mv.c.loadSeq++
	mv.gen = mv.c.loadSeq
	ctx, cancel := context.WithCancel(mv.c.ctx)
	mv.cancel = cancel
	mv.loading = true
	mv.c.log.Debug("open queue", "queue", name)
	return startLoad(ctx, mv.c.backend, name, mv.c.opts.Limit, mv.gen)
}

// update takes the pages of the queue being read and the results of
// filtering and grouping them.
func (mv messagesView) update(msg tea.Msg) (messagesView, tea.Cmd, tea.Msg) {
	switch msg := msg.(type) {
	case pageMsg:
		if msg.gen != mv.gen {
			return mv, nil, nil // a queue we left
		}
		mv.rows = append(mv.rows, msg.rows...)
		var cmds []tea.Cmd
		var ask tea.Msg
		if msg.done {
			mv.loading = false
			mv.report = msg.report
			if msg.err != nil {
				mv.loadErr = msg.err
				cmds = append(cmds, func() tea.Msg { return errMsg{msg.err} })
			}
			ask = loadedMsg{rows: mv.rows}
		} else {
			cmds = append(cmds, waitPage(msg.ch))
		}
		if mv.filtered {
			cmds = append(cmds, mv.filterMore())
		}
		return mv, tea.Batch(cmds...), ask
	case filterMsg:
		if msg.fgen != mv.fgen {
			return mv, nil, nil
		}
		mv.fbusy = false
		mv.visible = append(mv.visible, msg.idx...)
		mv.fdone = msg.to
		mv.ferrs += msg.errs
		mv.clampCursor()
		more := mv.filterMore()
		if more == nil && mv.selectAll {
			mv.selectAll = false
			return mv, nil, mv.selectAllVisible()
		}
		return mv, more, nil
	case reasonsMsg:
		return mv, nil, mv.showReasons(msg)
	}
	return mv, nil, nil
}

// length is how many rows the list shows.
func (mv *messagesView) length() int {
	if mv.filtered {
		return len(mv.visible)
	}
	return len(mv.rows)
}

// at returns the i-th visible row.
func (mv *messagesView) at(i int) *row {
	if mv.filtered {
		return mv.rows[mv.visible[i]]
	}
	return mv.rows[i]
}

func (mv *messagesView) current() *row {
	if mv.cursor < mv.length() {
		return mv.at(mv.cursor)
	}
	return nil
}

func (mv *messagesView) clampCursor() {
	n := mv.length()
	mv.cursor = max(0, min(mv.cursor, n-1))
	rows := mv.listRows()
	if mv.cursor < mv.offset {
		mv.offset = mv.cursor
	}
	if mv.cursor >= mv.offset+rows {
		mv.offset = mv.cursor - rows + 1
	}
	mv.offset = max(0, min(mv.offset, n-rows))
}

// listRows is how many message rows fit on screen.
func (mv *messagesView) listRows() int {
	return max(1, mv.c.height-2-2-1)
}

// setFilter restarts filtering with the current jq matcher and quick filter.
func (mv *messagesView) setFilter() tea.Cmd {
	mv.fgen++
	mv.selectAll = false
	mv.visible = mv.visible[:0:0]
	mv.fdone, mv.ferrs, mv.fbusy = 0, 0, false
	mv.cursor, mv.offset = 0, 0
	mv.filtered = mv.matcher != nil || mv.quick != nil
	if !mv.filtered {
		return nil
	}
	return mv.filterMore()
}

// filterMore filters the rows that arrived since the last pass, in the
// background, one pass at a time so that results stay in queue order.
func (mv *messagesView) filterMore() tea.Cmd {
	if !mv.filtered || mv.fbusy || mv.fdone >= len(mv.rows) {
		return nil
	}
	mv.fbusy = true
	from, to := mv.fdone, len(mv.rows)
	rows := mv.rows[from:to]
	match, quick, fgen := mv.matcher, mv.quick, mv.fgen
	return mv.c.safe(func() tea.Msg {
		out := filterMsg{fgen: fgen, from: from, to: to}
		for i, r := range rows {
			if quick != nil && !quick(r) {
				continue
			}
			if match != nil {
				ok, err := match(r.msg)
				if err != nil {
					out.errs++
					continue
				}
				if !ok {
					continue
				}
			}
			out.idx = append(out.idx, int32(from+i))
		}
		return out
	})
}

func (mv *messagesView) selectedIDs() []string {
	ids := make([]string, 0, len(mv.selected))
	for id := range mv.selected {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// updateKey handles a key on the message list. Opening a message or the
// statistics, notices and actions are asked of the root model.
func (mv messagesView) updateKey(k tea.KeyPressMsg) (messagesView, tea.Cmd, tea.Msg) {
	km := mv.c.keys.messages
	if mv.filtering {
		in := mv.c.keys.input
		switch {
		case key.Matches(k, in.Accept):
			expr := strings.TrimSpace(mv.input.Value())
			if expr == "" {
				mv.filtering = false
				mv.input.Blur()
				mv.expr, mv.matcher = "", nil
				return mv, mv.setFilter(), nil
			}
			compile := mv.c.backend.Compile
			if compile == nil {
				return mv, nil, errNotice("jq filters are not available for this broker")
			}
			match, err := compile(expr)
			if err != nil {
				// Stay in the bar so the user can fix it.
				return mv, nil, errNotice("filter: " + firstLine(err.Error()))
			}
			mv.filtering = false
			mv.input.Blur()
			mv.expr, mv.matcher = expr, match
			return mv, mv.setFilter(), noticeMsg{}
		case key.Matches(k, in.Cancel):
			mv.filtering = false
			mv.input.Blur()
			mv.input.SetValue(mv.expr)
			return mv, nil, nil
		}
		var cmd tea.Cmd
		mv.input, cmd = mv.input.Update(k)
		return mv, cmd, nil
	}
	n := mv.length()
	page := mv.listRows()
	switch {
	case key.Matches(k, km.Up):
		mv.cursor--
	case key.Matches(k, km.Down):
		mv.cursor++
	case key.Matches(k, km.PageUp):
		mv.cursor -= page
		mv.offset -= page
	case key.Matches(k, km.PageDown):
		mv.cursor += page
		mv.offset += page
	case key.Matches(k, km.Top):
		mv.cursor = 0
	case key.Matches(k, km.Bottom):
		mv.cursor = n - 1
	case key.Matches(k, km.Open):
		if mv.current() != nil {
			return mv, nil, openDetailMsg{index: mv.cursor}
		}
		return mv, nil, nil
	case key.Matches(k, km.Filter):
		mv.filtering = true
		mv.input.SetValue(mv.expr)
		mv.input.CursorEnd()
		mv.input.SetWidth(max(20, mv.c.width-8))
		return mv, mv.input.Focus(), nil
	case key.Matches(k, km.Reasons):
		return mv, mv.countReasons(), nil
	case key.Matches(k, km.Stats):
		return mv, nil, openStatsMsg{}
	case key.Matches(k, mv.c.keys.triage.Open):
		return mv, nil, openTriageMsg{}
	case key.Matches(k, km.Reload):
		return mv, nil, reloadMsg{}
	case key.Matches(k, km.Select):
		if r := mv.current(); r != nil {
			if mv.selected[r.id] {
				delete(mv.selected, r.id)
			} else {
				mv.selected[r.id] = true
			}
			mv.cursor++
		}
	case key.Matches(k, km.SelectAll):
		if mv.filtered && mv.fbusy {
			mv.selectAll = true // when the filter pass ends
			return mv, nil, nil
		}
		return mv, nil, mv.selectAllVisible()
	case key.Matches(k, km.SelectNone):
		mv.selected = map[string]bool{}
	case key.Matches(k, km.Export):
		return mv, nil, exportMsg{ids: mv.targetIDs(), label: mv.targetLabel()}
	case key.Matches(k, km.Redrive):
		ids := mv.targetIDs()
		return mv, nil, redriveMsg{ids: ids, count: int64(len(ids))}
	case key.Matches(k, km.RedriveAll):
		return mv, nil, mv.redriveAll()
	case key.Matches(k, km.Discard):
		return mv, nil, discardMsg{ids: mv.targetIDs()}
	case key.Matches(k, mv.c.keys.global.Back):
		switch {
		case mv.quick != nil:
			mv.quick, mv.quickLabel = nil, ""
			return mv, mv.setFilter(), nil
		case mv.matcher != nil:
			mv.matcher, mv.expr = nil, ""
			mv.input.SetValue("")
			return mv, mv.setFilter(), nil
		case len(mv.selected) > 0:
			mv.selected = map[string]bool{}
			return mv, nil, nil
		}
		if mv.cancel != nil {
			mv.cancel()
		}
		mv.loading = false
		return mv, nil, navigateMsg{to: screenQueues}
	}
	mv.clampCursor()
	return mv, nil, nil
}

// showMatches lists the messages that match (a reason, a stats group).
func (mv *messagesView) showMatches(label string, match func(*row) bool) tea.Cmd {
	mv.quickLabel = label
	mv.quick = match
	return mv.setFilter()
}

// redriveAll asks to redrive every message matching the filter bar. A jq
// filter alone goes to the library as a filter (it re-reads the queue); a
// quick filter (reason, stats group) becomes the list of matching IDs.
func (mv *messagesView) redriveAll() tea.Msg {
	if mv.loading || mv.fbusy {
		return errNotice("still reading the queue: wait until every message is read to redrive all matching")
	}
	n := int64(mv.length())
	if n == 0 {
		return errNotice("no message matches")
	}
	if mv.quick == nil {
		if limit := mv.c.opts.Limit; mv.expr == "" && len(mv.rows) >= limit {
			return errNotice(fmt.Sprintf("the list stops at %d messages: redrive the whole queue with `dlq redrive %s`", limit, mv.queue))
		}
		return redriveMsg{filter: mv.expr, count: n, sample: mv.at(0).msg}
	}
	ids := make([]string, 0, n)
	for i := range int(n) {
		ids = append(ids, mv.at(i).id)
	}
	return redriveMsg{ids: ids, count: n}
}

func (mv *messagesView) selectAllVisible() noticeMsg {
	for i := range mv.length() {
		mv.selected[mv.at(i).id] = true
	}
	text := fmt.Sprintf("%d messages selected", len(mv.selected))
	if mv.loading {
		text += " (the queue is still being read: more may match)"
	}
	return noticeMsg{text: text}
}

// targetIDs are the selected messages, or the one under the cursor.
func (mv *messagesView) targetIDs() []string {
	if len(mv.selected) > 0 {
		return mv.selectedIDs()
	}
	if r := mv.current(); r != nil {
		return []string{r.id}
	}
	return nil
}

func (mv *messagesView) targetLabel() string {
	if len(mv.selected) > 0 {
		return fmt.Sprintf("%d selected messages", len(mv.selected))
	}
	if r := mv.current(); r != nil {
		return "message " + r.id
	}
	return "nothing"
}

// reasonsMsg is the quick group-by of failure reasons: the failure groups
// of the loaded messages, as `dlq stats` and the statistics screen count
// them (shapes merged into templates).
type reasonsMsg struct {
	res Grouping
	err error
}

func (mv *messagesView) countReasons() tea.Cmd {
	group := mv.c.backend.Group
	if group == nil {
		return func() tea.Msg { return noticeMsg{text: "grouping is not available here"} }
	}
	msgs := make([]*broker.Message, mv.length())
	for i := range msgs {
		msgs[i] = mv.at(i).msg
	}
	ctx := mv.c.ctx
	return mv.c.safe(func() tea.Msg {
		res, err := group(ctx, "reason", msgs)
		return reasonsMsg{res: res, err: err}
	})
}

// showReasons asks for the dialog that lists the failure groups; choosing
// one shows its messages.
func (mv *messagesView) showReasons(msg reasonsMsg) tea.Msg {
	if msg.err != nil {
		return errMsg{msg.err}
	}
	groups := msg.res.Groups
	if len(groups) == 0 {
		return noticeMsg{text: "no messages to group"}
	}
	total := max(msg.res.Total, 1)
	opts := make([]string, len(groups))
	hints := make([]string, len(groups))
	for i, g := range groups {
		opts[i] = fitRight(strconv.Itoa(g.Count), 7) + "  " + fit(vis(g.ID), 10) + "  " + oneLine(g.Key, previewRune)
		hints[i] = fmt.Sprintf("%3.0f%%", 100*float64(g.Count)/float64(total))
	}
	groupsWord := "failure groups"
	if len(groups) == 1 {
		groupsWord = "failure group"
	}
	return openDialogMsg{d: newChoice("failure reasons", []string{fmt.Sprintf("%d messages, %d %s — %s shows one group's messages", msg.res.Total, len(opts), groupsWord, mv.c.keys.dialog.Confirm.Help().Key)}, opts, hints,
		func(m Model, choice int, _ string) (Model, tea.Cmd) {
			if msg.res.Of == nil {
				return m, nil
			}
			return m.handle(msg.res.showGroup("reason", choice))
		})}
}
