package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
)

// The messages below are what a screen asks of the root model: screens
// never touch the notice, the dialog or each other. A screen's update
// returns at most one of them beside its command, and the root handles it
// at once, before the next key, so that keys typed ahead reach the screen
// they were meant for.

// noticeMsg shows a notice; an empty text clears it.
type noticeMsg struct {
	text  string
	isErr bool
}

// navigateMsg shows another screen.
type navigateMsg struct{ to screen }

// openQueueMsg asks to show a queue's messages.
type openQueueMsg struct{ name string }

// reloadMsg reads the open queue (or the queue list) again.
type reloadMsg struct{}

// openDetailMsg shows the index-th message of the list, its body in mode.
type openDetailMsg struct {
	index int
	mode  bodyMode
}

// openStatsMsg shows the statistics of the messages read so far.
type openStatsMsg struct{}

// loadedMsg says the open queue has been read to the end.
type loadedMsg struct{ rows []*row }

// openEditMsg opens the editor on a message.
type openEditMsg struct{ msg *broker.Message }

// publishEditMsg asks where to publish the edited message.
type publishEditMsg struct{}

// showMatchesMsg lists the messages that match, under label.
type showMatchesMsg struct {
	label string
	match func(*row) bool
}

// redriveMsg asks to redrive ids (none: every message matching filter).
// sample, when set, is the message destination hints are taken from.
type redriveMsg struct {
	ids    []string
	filter string
	count  int64
	groups []string
	sample *broker.Message
}

// discardMsg asks to discard ids, chosen as the messages of groups.
type discardMsg struct{ ids, groups []string }

// exportMsg asks to export ids, chosen as the messages of groups.
type exportMsg struct {
	ids, groups []string
	label       string
}

// openDialogMsg opens a dialog; cmd starts it (a text field's cursor).
type openDialogMsg struct {
	d   *dialog
	cmd tea.Cmd
}

// dialogDoneMsg is the answer of the open dialog; dialogClosedMsg says it
// was cancelled.
type (
	dialogDoneMsg struct {
		choice int
		text   string
	}
	dialogClosedMsg struct{}
)

func errNotice(text string) noticeMsg { return noticeMsg{text: text, isErr: true} }

// request handles what screens and dialogs ask of the root model.
func (m Model) request(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case noticeMsg:
		m.notice = nil
		if msg.text != "" {
			m.notice = &notice{text: msg.text, isErr: msg.isErr}
		}
		return m, nil, true
	case navigateMsg:
		m.screen = msg.to
		if msg.to == screenQueues {
			return m, m.queues.fetch(), true
		}
		return m, nil, true
	case openQueueMsg:
		m.screen = screenMessages
		return m, m.msgs.open(msg.name), true
	case reloadMsg:
		m, cmd := m.reload()
		return m, cmd, true
	case openDetailMsg:
		mv := &m.msgs
		if msg.index >= 0 && msg.index < mv.length() {
			mv.cursor = msg.index
			mv.clampCursor()
			m.detail = newDetailView(m.c, mv.at(msg.index), msg.index)
			if msg.mode != m.detail.mode {
				m.detail.mode = msg.mode
				m.detail.relayout()
			}
			m.screen = screenDetail
		}
		return m, nil, true
	case openStatsMsg:
		m.screen = screenStats
		var cmd tea.Cmd
		m.stats, cmd = m.stats.open(m.msgs.rows, m.msgs.loading)
		return m, cmd, true
	case loadedMsg:
		var cmd, tcmd tea.Cmd
		m.stats, cmd = m.stats.loaded(msg.rows)
		m.triage, tcmd = m.triage.loaded(msg.rows)
		return m, tea.Batch(cmd, tcmd), true
	case openTriageMsg:
		m.screen = screenTriage
		var cmd tea.Cmd
		m.triage, cmd = m.triage.open(m.msgs.rows, m.msgs.loading)
		return m, cmd, true
	case applyTriageMsg:
		m, cmd := m.reviewTriage()
		return m, cmd, true
	case openEditMsg:
		e, cmd, err := newEditView(m.c, m.msgs.queue, msg.msg)
		if err != nil {
			m.notice = &notice{text: err.Error(), isErr: true}
			return m, nil, true
		}
		m.edit = e
		m.screen = screenEdit
		return m, cmd, true
	case publishEditMsg:
		m, cmd := m.chooseEditDestination()
		return m, cmd, true
	case showMatchesMsg:
		m.screen = screenMessages
		return m, m.msgs.showMatches(msg.label, msg.match), true
	case redriveMsg:
		sample := msg.sample
		if sample == nil {
			sample = m.sampleOf(msg.ids)
		}
		m, cmd := m.askRedrive(msg.ids, msg.filter, msg.count, sample, msg.groups)
		return m, cmd, true
	case discardMsg:
		m, cmd := m.askDiscard(msg.ids, msg.groups)
		return m, cmd, true
	case exportMsg:
		m, cmd := m.askExport(msg.ids, msg.groups, msg.label)
		return m, cmd, true
	case openDialogMsg:
		m.dialog = msg.d
		return m, msg.cmd, true
	case dialogClosedMsg:
		m.dialog = nil
		return m, nil, true
	case dialogDoneMsg:
		d := m.dialog
		m.dialog = nil
		if d == nil {
			return m, nil, true
		}
		m, cmd := d.onDone(m, msg.choice, msg.text)
		return m, cmd, true
	}
	return m, nil, false
}
