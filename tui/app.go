package tui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

type screen int

const (
	screenQueues screen = iota
	screenMessages
	screenDetail
	screenEdit
	screenStats
	screenTriage
)

func (s screen) String() string {
	return [...]string{"queues", "messages", "detail", "edit", "stats", "triage"}[s]
}

// Model is the whole TUI. It routes input to the focused screen (or to the
// dialog on top of it) and every other message to whoever asked for it.
type Model struct {
	c *common

	screen  screen
	queues  queuesView
	msgs    messagesView
	detail  detailView
	edit    editView
	stats   statsView
	triage  triageView
	dialog  *dialog
	job     *job
	notice  *notice
	help    help.Model
	helpAll bool
	// quitAfterJob quits once the cancelled action has settled.
	quitAfterJob bool
}

type notice struct {
	text  string
	isErr bool
}

// errMsg reports a failure; it becomes a dismissible notice.
type errMsg struct{ err error }

// New builds the TUI over a backend. ctx bounds every background call; when
// it is cancelled, running actions stop after their in-flight work.
func New(ctx context.Context, b Backend, opts Options, logger *slog.Logger) Model {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Limit <= 0 {
		opts.Limit = defaultMax
	}
	if opts.Refresh == 0 {
		opts.Refresh = defaultRefresh
	}
	c := &common{
		width: 100, height: 30,
		styles:  newStyles(opts.Color),
		keys:    newKeyMap(capabilitiesOf(b)),
		log:     logger,
		backend: b,
		opts:    opts,
		ctx:     ctx,
	}
	h := help.New()
	if !opts.Color {
		h.Styles = help.Styles{}
	}
	m := Model{c: c, help: h}
	m.queues = newQueuesView(c)
	m.msgs = newMessagesView(c)
	m.stats = newStatsView(c)
	m.triage = newTriageView(c)
	return m
}

// Init loads the queues (and opens the queue named in Options).
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.queues.fetch()}
	if m.c.opts.Queue != "" {
		cmds = append(cmds, func() tea.Msg { return openQueueMsg{name: m.c.opts.Queue} })
	}
	return tea.Batch(cmds...)
}

// Update handles one message. It never blocks: anything slow is a tea.Cmd.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.c.width, m.c.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.edit.resize()
		m.detail.relayout()
		return m, nil
	case errMsg:
		m.c.log.Debug("error", "err", msg.err)
		m.notice = &notice{text: firstLine(m.c.errText(msg.err)), isErr: true}
		return m, nil
	case jobProgressMsg:
		if m.job != nil && msg.job == m.job.id {
			m.job.progress = msg.p
			return m, waitJob(msg.ch)
		}
		return m, nil
	case jobDoneMsg:
		return m.jobDone(msg)
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	case tea.PasteMsg:
		if m.dialog != nil {
			return m.updateDialog(msg)
		}
		if m.screen == screenEdit {
			return m.updateEdit(msg)
		}
		return m, nil
	}
	if mm, cmd, ok := m.request(msg); ok {
		return mm, cmd
	}
	return m.route(msg)
}

// handle is Update for the root's own callbacks.
func (m Model) handle(msg tea.Msg) (Model, tea.Cmd) {
	next, cmd := m.Update(msg)
	return next.(Model), cmd
}

// then handles what a screen asked for, after the screen's own command.
func (m Model) then(cmd tea.Cmd, ask tea.Msg) (tea.Model, tea.Cmd) {
	if ask == nil {
		return m, cmd
	}
	next, more := m.handle(ask)
	return next, tea.Batch(cmd, more)
}

// reload reads the open queue again (after an action changed it).
func (m Model) reload() (Model, tea.Cmd) {
	if m.msgs.queue == "" {
		return m, m.queues.fetch()
	}
	m.screen = screenMessages
	cmd := m.msgs.open(m.msgs.queue)
	return m, tea.Batch(cmd, m.queues.fetch())
}

// route hands a non-key message to the screen that owns it.
func (m Model) route(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	var ask tea.Msg
	switch msg.(type) {
	case queuesMsg, refreshTickMsg:
		m.queues, cmd = m.queues.update(msg)
		return m, cmd
	case pageMsg, filterMsg, reasonsMsg:
		m.msgs, cmd, ask = m.msgs.update(msg)
		return m.then(cmd, ask)
	case statsMsg:
		m.stats, cmd = m.stats.update(msg)
		return m, cmd
	case triageMsg:
		m.triage, cmd = m.triage.update(msg)
		return m, cmd
	case editorDoneMsg:
		return m.updateEdit(msg)
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	switch m.screen {
	case screenEdit:
		return m.updateEdit(msg)
	}
	return m, nil
}

func (m Model) handleKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	g := m.c.keys.global
	if key.Matches(k, g.Interrupt) && m.dialog == nil && m.screen != screenEdit {
		return m.quit()
	}
	if m.notice != nil && key.Matches(k, g.Dismiss) {
		m.notice = nil
		return m, nil
	}
	if m.helpAll {
		// Any key closes the full help; q still quits.
		m.helpAll = false
		if key.Matches(k, g.Quit) {
			return m.quit()
		}
		return m, nil
	}
	if m.dialog != nil {
		return m.updateDialog(k)
	}
	if m.job != nil && key.Matches(k, g.CancelJob) {
		if !m.job.cancelling {
			m.job.cancelling = true
			m.job.cancel()
		}
		return m, nil
	}
	if !m.typing() {
		switch {
		case key.Matches(k, g.Help):
			m.helpAll = true
			return m, nil
		case key.Matches(k, g.Quit):
			return m.quit()
		}
	}
	var cmd tea.Cmd
	var ask tea.Msg
	switch m.screen {
	case screenQueues:
		m.queues, cmd, ask = m.queues.updateKey(k)
	case screenMessages:
		m.msgs, cmd, ask = m.msgs.updateKey(k)
	case screenDetail:
		m.detail, cmd, ask = m.detail.updateKey(k)
	case screenEdit:
		return m.updateEdit(k)
	case screenStats:
		m.stats, cmd, ask = m.stats.updateKey(k)
	case screenTriage:
		m.triage, cmd, ask = m.triage.updateKey(k)
	}
	return m.then(cmd, ask)
}

func (m Model) updateDialog(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd, ask := m.dialog.update(m.c.keys.dialog, msg)
	return m.then(cmd, ask)
}

func (m Model) updateEdit(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	var ask tea.Msg
	m.edit, cmd, ask = m.edit.update(msg)
	return m.then(cmd, ask)
}

// quit leaves the TUI. With an action running it asks first, cancels it,
// and quits only after the action settled its in-flight messages.
func (m Model) quit() (Model, tea.Cmd) {
	if m.job == nil {
		return m, tea.Quit
	}
	title := m.job.title
	m.dialog = newConfirm("quit while "+title+"?", []string{
		"the action is cancelled; messages in flight are settled before dlq exits.",
	}, true, func(m Model) (Model, tea.Cmd) {
		if m.job == nil {
			return m, tea.Quit
		}
		m.quitAfterJob = true
		if !m.job.cancelling {
			m.job.cancelling = true
			m.job.cancel()
		}
		return m, nil
	})
	return m, nil
}

// typing reports whether the keyboard is writing text: in the editor or in
// a screen's text field.
func (m Model) typing() bool {
	switch m.screen {
	case screenEdit:
		return true
	case screenQueues:
		return m.queues.filtering
	case screenMessages:
		return m.msgs.filtering
	case screenStats:
		return m.stats.typing
	}
	return false
}

// View draws exactly the terminal's size: header, body, notice, footer.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "dlq"
	return v
}

func (m Model) render() string {
	c := m.c
	w, h := max(c.width, 20), max(c.height, 5)
	st := c.styles

	header := st.title.Render("dlq") + st.subtle.Render(" ▸ "+c.backend.Name)
	switch m.screen {
	case screenMessages, screenDetail, screenEdit, screenStats, screenTriage:
		header += st.subtle.Render(" ▸ ") + st.header.Render(m.msgs.queue)
		header += st.subtle.Render(" ▸ " + m.screen.String())
	default:
		header += st.subtle.Render(" ▸ queues")
	}
	if c.backend.ReadOnly {
		header += "  " + st.warn.Render("[read-only]")
	}

	footer := m.help.ShortHelpView(m.currentHelp().short)
	var bottom []string
	if m.job != nil {
		bottom = append(bottom, m.job.view(st, c.keys.global.CancelJob, w))
	}
	if m.notice != nil {
		style := st.notice
		prefix := "✓ "
		if m.notice.isErr {
			style, prefix = st.errorNotice, "✗ "
		}
		bottom = append(bottom, style.Render(prefix+m.notice.text)+st.subtle.Render("  (esc to dismiss)"))
	}
	bodyH := h - 2 - len(bottom)
	var body []string
	switch m.screen {
	case screenQueues:
		body = m.queues.view(bodyH, w)
	case screenMessages:
		body = m.msgs.view(bodyH, w)
	case screenDetail:
		body = m.detail.view(bodyH, w)
	case screenEdit:
		body = m.edit.view(bodyH, w)
	case screenStats:
		body = m.stats.view(bodyH, w)
	case screenTriage:
		body = m.triage.view(bodyH, w)
	}
	body = padLines(body, bodyH)
	if m.helpAll {
		hm := m.currentHelp()
		box := st.dialog.Render(st.title.Render("keys: "+m.screen.String()) + "\n\n" + m.fullHelp(hm.full, w-6) + "\n\n" + st.subtle.Render("any key to close"))
		body = padLines(overlay(body, box, w), bodyH)
	} else if m.dialog != nil {
		body = padLines(overlay(body, m.dialog.view(st, c.keys.dialog, w), w), bodyH)
	}

	lines := make([]string, 0, h)
	lines = append(lines, fit(header, w))
	for _, l := range body {
		lines = append(lines, fit(l, w))
	}
	for _, l := range bottom {
		lines = append(lines, fit(l, w))
	}
	lines = append(lines, fit(footer, w))
	return strings.Join(lines, "\n")
}

// fullHelp lays the help columns out in as many rows as the width needs,
// so that no key is ever cut off.
func (m Model) fullHelp(groups [][]key.Binding, width int) string {
	h := m.help
	h.SetWidth(0)
	var rows []string
	var cur []string
	curW := 0
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		col := h.FullHelpView([][]key.Binding{g})
		cw := lipgloss.Width(col) + 4
		if curW > 0 && curW+cw > width {
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, cur...))
			cur, curW = nil, 0
		}
		if curW > 0 {
			col = lipgloss.NewStyle().PaddingLeft(4).Render(col)
		}
		cur = append(cur, col)
		curW += cw
	}
	if len(cur) > 0 {
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, cur...))
	}
	return strings.Join(rows, "\n\n")
}

func (m Model) currentHelp() helpMap {
	k := m.c.keys
	if m.dialog != nil {
		return k.dialogHelp()
	}
	switch m.screen {
	case screenMessages:
		return k.messagesHelp()
	case screenDetail:
		return k.detailHelp()
	case screenEdit:
		if m.edit.stage == stageReview {
			return k.reviewHelp()
		}
		return k.editHelp()
	case screenStats:
		return k.statsHelp()
	case screenTriage:
		return k.triageHelp()
	}
	return k.queuesHelp()
}

func padLines(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:max(h, 0)]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// safe runs fn and turns a panic into an error notice: a bug in one action
// must not take the terminal down with it.
func (c *common) safe(fn func() tea.Msg) tea.Cmd {
	return c.safeAs(fn, func(err error) tea.Msg { return errMsg{err} })
}

// safeAs is safe for commands whose view waits for their answer: the panic
// comes back as that answer (built by failed), so the view does not wait
// for ever.
func (c *common) safeAs(fn func() tea.Msg, failed func(error) tea.Msg) tea.Cmd {
	log := c.log
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in background command", "panic", r, "stack", string(debug.Stack()))
				msg = failed(fmt.Errorf("internal error: %v (details in the debug log)", r))
			}
		}()
		return fn()
	}
}

// Screen reports the current screen (for tests and the benchmark).
func (m Model) Screen() string { return m.screen.String() }

// Selected returns the fingerprints of the selected messages.
func (m Model) Selected() []string { return m.msgs.selectedIDs() }

// Cursor returns the message-list cursor position in the visible rows.
func (m Model) Cursor() int { return m.msgs.cursor }

// Visible returns how many messages the list shows (after filters).
func (m Model) Visible() int { return m.msgs.length() }

// Loaded returns how many messages of the open queue have been read.
func (m Model) Loaded() int { return len(m.msgs.rows) }

// Notice returns the text of the notice on screen, if any.
func (m Model) Notice() string {
	if m.notice == nil {
		return ""
	}
	return m.notice.text
}

// Plain renders the current frame without styles (golden files).
func (m Model) Plain() string { return stripStyles(m.render()) }
