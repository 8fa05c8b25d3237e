package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
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

// update handles input to the dialog; its answer (or its cancellation)
// goes to the root model as a dialogDoneMsg (dialogClosedMsg).
func (d *dialog) update(k dialogKeys, msg tea.Msg) (tea.Cmd, tea.Msg) {
	kp, isKey := msg.(tea.KeyPressMsg)
	if isKey && key.Matches(kp, k.Cancel) {
		return nil, dialogClosedMsg{}
	}
	switch d.kind {
	case dialogConfirm:
		if !isKey {
			return nil, nil
		}
		if key.Matches(kp, k.Yes) || (key.Matches(kp, k.Confirm) && !d.danger) {
			return nil, dialogDoneMsg{}
		}
		if key.Matches(kp, k.No) {
			return nil, dialogClosedMsg{}
		}
		return nil, nil
	case dialogChoice:
		if !isKey {
			return nil, nil
		}
		switch {
		case key.Matches(kp, k.Up):
			d.cursor = max(0, d.cursor-1)
		case key.Matches(kp, k.Down):
			d.cursor = min(len(d.options)-1, d.cursor+1)
		case key.Matches(kp, k.Confirm):
			return nil, dialogDoneMsg{choice: d.cursor}
		}
		return nil, nil
	case dialogInput:
		if isKey && key.Matches(kp, k.Confirm) {
			return nil, dialogDoneMsg{choice: -1, text: strings.TrimSpace(d.input.Value())}
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return cmd, nil
	}
	return nil, nil
}

const dialogRows = 12

func (d *dialog) view(st styles, k dialogKeys, width int) string {
	keyHelp := func(b key.Binding) string { return st.key.Render(b.Help().Key) }
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
		b.WriteString("\n\n" + keyHelp(k.Yes) + " yes   " + st.key.Render(k.No.Help().Key+"/"+k.Cancel.Help().Key) + " no")
		if !d.danger {
			b.WriteString("   " + keyHelp(k.Confirm) + " yes")
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
		// Each row is its option, cut at a word, then its hint in a
		// column of its own, on the selected row too.
		hintW := 0
		for _, h := range d.hints {
			hintW = max(hintW, ansi.StringWidth(h))
		}
		hintW = min(hintW, inner/2)
		labelW := inner - 2
		if hintW > 0 {
			labelW -= hintW + 2
		}
		for i := d.offset; i < end; i++ {
			mark, hint := "  ", ""
			if i < len(d.hints) {
				hint = d.hints[i]
			}
			if i == d.cursor {
				mark = "▸ "
			}
			line := mark + fit(cutWords(d.options[i], labelW), labelW)
			if hintW > 0 {
				if i == d.cursor {
					line += "  " + fit(hint, hintW)
				} else {
					line += "  " + st.subtle.Render(fit(hint, hintW))
				}
			}
			if i == d.cursor {
				line = st.cursor.Render(line)
			}
			b.WriteString("\n" + line)
		}
		if len(d.options) > dialogRows {
			b.WriteString("\n" + st.subtle.Render(strings.Repeat(" ", 2)+"…"+itoa(len(d.options))+" in all"))
		}
		b.WriteString("\n\n" + keyHelp(k.Confirm) + " choose   " + keyHelp(k.Cancel) + " cancel")
	case dialogInput:
		b.WriteString("\n\n" + d.input.View())
		b.WriteString("\n\n" + keyHelp(k.Confirm) + " ok   " + keyHelp(k.Cancel) + " cancel")
	}
	return st.dialog.Render(b.String())
}
