package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

type dialogKind int

const (
	dialogConfirm dialogKind = iota // y/n
	dialogChoice                    // pick one option
	dialogInput                     // type a value
)

// dialog is a modal box over the current screen: a confirmation, a choice
// (destination picker, reason list) or a text prompt. Its result is handed
// to onDone, which returns the next command.
type dialog struct {
	kind    dialogKind
	title   string
	body    []string
	options []string
	// hints are shown dimmed beside options.
	hints  []string
	cursor int
	offset int
	input  textinput.Model
	danger bool
	// onDone gets the chosen option index (or -1) and the typed text.
	onDone func(m Model, choice int, text string) (Model, tea.Cmd)
}

func newConfirm(title string, body []string, danger bool, onYes func(m Model) (Model, tea.Cmd)) *dialog {
	return &dialog{kind: dialogConfirm, title: title, body: body, danger: danger,
		onDone: func(m Model, _ int, _ string) (Model, tea.Cmd) { return onYes(m) }}
}

func newChoice(title string, body []string, options, hints []string, onDone func(m Model, choice int, text string) (Model, tea.Cmd)) *dialog {
	return &dialog{kind: dialogChoice, title: title, body: body, options: options, hints: hints, onDone: onDone}
}

func newInput(title string, body []string, value, placeholder string, onDone func(m Model, choice int, text string) (Model, tea.Cmd)) (*dialog, tea.Cmd) {
	ti := textinput.New()
	ti.Prompt = "> "
	ti.Placeholder = placeholder
	ti.SetValue(value)
	ti.CursorEnd()
	ti.SetWidth(60)
	cmd := ti.Focus()
	return &dialog{kind: dialogInput, title: title, body: body, input: ti, onDone: onDone}, cmd
}

func (m Model) updateDialog(msg tea.Msg) (tea.Model, tea.Cmd) {
	d := m.dialog
	k := m.c.keys.dialog
	kp, isKey := msg.(tea.KeyPressMsg)
	if isKey && key.Matches(kp, k.Cancel) {
		m.dialog = nil
		return m, nil
	}
	switch d.kind {
	case dialogConfirm:
		if !isKey {
			return m, nil
		}
		if key.Matches(kp, k.Yes) || (key.Matches(kp, k.Confirm) && !d.danger) {
			m.dialog = nil
			return d.onDone(m, 0, "")
		}
		if key.Matches(kp, k.No) {
			m.dialog = nil
		}
		return m, nil
	case dialogChoice:
		if !isKey {
			return m, nil
		}
		switch {
		case key.Matches(kp, k.Up):
			d.cursor = max(0, d.cursor-1)
		case key.Matches(kp, k.Down):
			d.cursor = min(len(d.options)-1, d.cursor+1)
		case key.Matches(kp, k.Confirm):
			m.dialog = nil
			return d.onDone(m, d.cursor, "")
		}
		return m, nil
	case dialogInput:
		if isKey && key.Matches(kp, k.Confirm) {
			m.dialog = nil
			return d.onDone(m, -1, strings.TrimSpace(d.input.Value()))
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

const dialogRows = 12

func (d *dialog) view(st styles, width int) string {
	var b strings.Builder
	title := st.title.Render(d.title)
	if d.danger {
		title = st.danger.Render("⚠ " + d.title)
	}
	b.WriteString(title)
	inner := max(20, min(width-8, 90))
	for _, l := range d.body {
		b.WriteString("\n" + fit(l, inner))
	}
	switch d.kind {
	case dialogConfirm:
		b.WriteString("\n\n" + st.key.Render("y") + " yes   " + st.key.Render("n/esc") + " no")
		if !d.danger {
			b.WriteString("   " + st.key.Render("enter") + " yes")
		}
	case dialogChoice:
		b.WriteString("\n")
		if d.cursor < d.offset {
			d.offset = d.cursor
		}
		if d.cursor >= d.offset+dialogRows {
			d.offset = d.cursor - dialogRows + 1
		}
		end := min(len(d.options), d.offset+dialogRows)
		for i := d.offset; i < end; i++ {
			line := "  " + d.options[i]
			if i < len(d.hints) && d.hints[i] != "" {
				line += "  " + st.subtle.Render(d.hints[i])
			}
			line = fit(line, inner)
			if i == d.cursor {
				line = st.cursor.Render(fit("▸ "+d.options[i], inner))
			}
			b.WriteString("\n" + line)
		}
		if len(d.options) > dialogRows {
			b.WriteString("\n" + st.subtle.Render(strings.Repeat(" ", 2)+"…"+itoa(len(d.options))+" in all"))
		}
		b.WriteString("\n\n" + st.key.Render("enter") + " choose   " + st.key.Render("esc") + " cancel")
	case dialogInput:
		b.WriteString("\n\n" + d.input.View())
		b.WriteString("\n\n" + st.key.Render("enter") + " ok   " + st.key.Render("esc") + " cancel")
	}
	return st.dialog.Render(b.String())
}
