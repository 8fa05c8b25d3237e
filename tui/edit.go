package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/textdiff"
)

type editStage int

const (
	stageEditing editStage = iota
	stageReview            // the before/after diff
)

const maxEditLines = 9000

// editView edits one message: body and non-system headers as a JSON
// document, in a textarea or in $EDITOR. Saving validates, shows the diff,
// asks for the destination and a confirmation, then publishes the edited
// message and removes the original.
type editView struct {
	c        *common
	queue    string
	orig     *broker.Message
	before   string
	ta       textarea.Model
	stage    editStage
	edited   *broker.Message
	diff     []string
	diffOff  int
	err      string
	tooLarge bool
	locked   []string
	// attrs: the message keeps its metadata as attributes.
	attrs bool
}

// editorDoneMsg returns from $EDITOR.
type editorDoneMsg struct {
	path string
	err  error
}

func newEditView(c *common, queue string, m *broker.Message) (editView, tea.Cmd, error) {
	attrs := c.backend.Attributes != nil && c.backend.Attributes(m)
	doc, err := editDocument(m, attrs)
	if err != nil {
		return editView{}, nil, err
	}
	ta := textarea.New()
	ta.ShowLineNumbers = true
	ta.MaxHeight = 0
	ta.MaxWidth = 0
	ta.CharLimit = 0
	ta.Placeholder = "{}"
	e := editView{c: c, queue: queue, orig: m, before: doc, attrs: attrs}
	if strings.Count(doc, "\n") > maxEditLines {
		e.tooLarge = true
	} else {
		ta.SetValue(doc)
		ta.MoveToBegin()
	}
	for k := range m.Headers {
		if lockedHeader(k) {
			e.locked = append(e.locked, k)
		}
	}
	e.ta = ta
	e.resize()
	cmd := e.ta.Focus()
	return e, cmd, nil
}

func (e *editView) resize() {
	if e.c == nil {
		return
	}
	e.ta.SetWidth(max(20, e.c.width-2))
	e.ta.SetHeight(max(3, e.c.height-7))
}

func (e *editView) value() string {
	if e.tooLarge {
		return e.before
	}
	return e.ta.Value()
}

// update edits the document and, on save, validates it and shows the diff;
// leaving and publishing are asked of the root model.
func (e editView) update(msg tea.Msg) (editView, tea.Cmd, tea.Msg) {
	km := e.c.keys.edit
	switch msg := msg.(type) {
	case editorDoneMsg:
		defer os.Remove(msg.path)
		if msg.err != nil {
			e.err = "editor: " + msg.err.Error()
			return e, nil, nil
		}
		b, err := os.ReadFile(msg.path)
		if err != nil {
			e.err = "reading the edited file: " + err.Error()
			return e, nil, nil
		}
		text := string(b)
		if strings.Count(text, "\n") <= maxEditLines {
			e.tooLarge = false
			e.ta.SetValue(text)
			e.ta.MoveToBegin()
		} else {
			e.before = text // too large for the textarea: keep the file's text
		}
		e.err = ""
		return e, nil, nil
	case tea.KeyPressMsg:
		if e.stage == stageReview {
			page := e.c.height - 6
			last := max(0, len(e.diff)-1)
			switch {
			case key.Matches(msg, km.Back):
				e.stage = stageEditing
				return e, e.ta.Focus(), nil
			case key.Matches(msg, km.Publish):
				return e, nil, publishEditMsg{}
			case key.Matches(msg, km.Up):
				e.diffOff = max(0, e.diffOff-1)
			case key.Matches(msg, km.Down):
				e.diffOff = min(last, e.diffOff+1)
			case key.Matches(msg, km.PageDown):
				e.diffOff = min(last, e.diffOff+page)
			case key.Matches(msg, km.PageUp):
				e.diffOff = max(0, e.diffOff-page)
			}
			return e, nil, nil
		}
		switch {
		case key.Matches(msg, km.Cancel):
			e.ta.Blur()
			return e, nil, navigateMsg{to: screenDetail}
		case key.Matches(msg, km.Save):
			e.review()
			return e, nil, nil
		case key.Matches(msg, km.External):
			return e, e.openExternal(), nil
		}
	}
	if e.tooLarge || e.stage != stageEditing {
		return e, nil, nil
	}
	var cmd tea.Cmd
	e.ta, cmd = e.ta.Update(msg)
	return e, cmd, nil
}

// review validates the document and, when it changes the message, shows
// the diff.
func (e *editView) review() {
	edited, err := applyEdit(e.orig, e.value())
	if err != nil {
		e.err = err.Error()
		return
	}
	e.err = ""
	after, _ := editDocument(edited, e.attrs)
	e.diff = textdiff.Fold(textdiff.Lines(e.before, after), 3)
	e.edited = edited
	changed := false
	for _, l := range e.diff {
		if strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "- ") {
			changed = true
			break
		}
	}
	if !changed {
		e.err = "nothing changed: edit the document first (" + e.c.keys.edit.Cancel.Help().Key + " leaves without saving)"
		return
	}
	e.stage = stageReview
	e.diffOff = 0
	e.ta.Blur()
}

// openExternal hands the document to $EDITOR and reads it back afterwards.
func (e *editView) openExternal() tea.Cmd {
	editor := e.c.opts.Editor
	if editor == "" {
		editor = "vi"
	}
	f, err := os.CreateTemp(e.c.opts.TempDir, "dlq-edit-*.json")
	if err != nil {
		return func() tea.Msg { return errMsg{fmt.Errorf("cannot create the file for $EDITOR: %w", err)} }
	}
	path := f.Name()
	_, werr := f.WriteString(e.value())
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(path)
		return func() tea.Msg { return errMsg{fmt.Errorf("cannot write %s for $EDITOR", path)} }
	}
	args := strings.Fields(editor)
	c := exec.Command(args[0], append(args[1:], path)...)
	e.c.log.Debug("external editor", "cmd", c.String())
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
}

func (e *editView) view(h, w int) []string {
	st := e.c.styles
	var out []string
	if e.stage == stageReview {
		km := e.c.keys.edit
		out = append(out, st.title.Render("review the change")+st.subtle.Render("  ·  "+km.Publish.Help().Key+": "+km.Publish.Help().Desc+"  ·  "+km.Back.Help().Key+": "+km.Back.Help().Desc))
		rows := h - 1
		for i := e.diffOff; i < len(e.diff) && len(out) <= rows; i++ {
			l := e.diff[i]
			switch {
			case strings.HasPrefix(l, "+ "):
				l = st.diffAdd.Render(l)
			case strings.HasPrefix(l, "- "):
				l = st.diffDel.Render(l)
			default:
				l = st.subtle.Render(l)
			}
			out = append(out, l)
		}
		return out
	}
	title := st.title.Render("edit "+e.orig.ID) + st.subtle.Render("  ·  JSON is validated on save")
	out = append(out, title)
	if len(e.locked) > 0 {
		out = append(out, st.locked.Render("locked system headers (kept, not editable): "+strings.Join(sortedCopy(e.locked), ", ")+" 🔒"))
	} else {
		out = append(out, st.subtle.Render("system headers and properties are kept as they are"))
	}
	if e.tooLarge {
		out = append(out, "", "  this message is too large for the built-in editor: press "+e.c.keys.edit.External.Help().Key+" to edit it in "+filepath.Base(strings.Fields(e.c.opts.Editor + " vi")[0]))
	} else {
		out = append(out, strings.Split(e.ta.View(), "\n")...)
	}
	if e.err != "" {
		out = padLines(out, h-1)
		out = append(out, st.errorNotice.Render("✗ "+e.err))
	}
	return out
}
