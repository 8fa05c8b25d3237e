package tui

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// job is a long action running in the background: a redrive, a discard, an
// export or the publishing of an edited message. One runs at a time; the UI
// stays usable while it does, and the CancelJob key cancels it (the library finishes
// and settles what is in flight, then stops).
type job struct {
	id         int
	title      string
	cancel     context.CancelFunc
	progress   Progress
	started    time.Time
	cancelling bool
	// after runs in Update when the job ends successfully (reload, navigate).
	after func(m Model, res Result) (Model, tea.Cmd)
}

type jobProgressMsg struct {
	job int
	p   Progress
	ch  <-chan tea.Msg
}

type jobDoneMsg struct {
	job int
	res Result
	err error
}

// startJob runs fn in the background and returns the command that reports
// its progress. Progress reports are coalesced: a slow UI sees the latest.
func (m Model) startJob(title string, fn func(ctx context.Context, progress func(Progress)) (Result, error), after func(m Model, res Result) (Model, tea.Cmd)) (Model, tea.Cmd) {
	if m.job != nil {
		m.notice = &notice{text: "an action is already running: wait for it or cancel it with " + m.c.keys.global.CancelJob.Help().Key, isErr: true}
		return m, nil
	}
	m.c.jobSeq++
	id := m.c.jobSeq
	ctx, cancel := context.WithCancel(m.c.ctx)
	m.job = &job{id: id, title: title, cancel: cancel, started: m.c.now(), after: after}
	m.notice = nil
	ch := make(chan tea.Msg, 1)
	log := m.c.log
	log.Info("action started", "action", title)
	go func() {
		defer close(ch)
		defer cancel()
		var res Result
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					log.Error("panic in action", "panic", r, "stack", string(debug.Stack()))
					err = fmt.Errorf("internal error in %s: %v", title, r)
				}
			}()
			res, err = fn(ctx, func(p Progress) {
				// Drop a stale report so the action never waits for the UI.
				select {
				case <-ch:
				default:
				}
				select {
				case ch <- jobProgressMsg{job: id, p: p}:
				default:
				}
			})
		}()
		// Make room for the final message.
		select {
		case <-ch:
		default:
		}
		ch <- jobDoneMsg{job: id, res: res, err: err}
	}()
	return m, waitJob(ch)
}

func waitJob(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		if p, ok := msg.(jobProgressMsg); ok {
			p.ch = ch
			return p
		}
		return msg
	}
}

func (m Model) jobDone(msg jobDoneMsg) (tea.Model, tea.Cmd) {
	if m.job == nil || msg.job != m.job.id {
		return m, nil
	}
	j := m.job
	m.job = nil
	res, err := msg.res, msg.err
	m.c.log.Info("action finished", "action", j.title, "done", res.Done, "failed", res.Failed, "err", err)
	text := res.Summary
	if text == "" {
		text = fmt.Sprintf("%s: %d done, %d skipped, %d failed", j.title, res.Done, res.Skipped, res.Failed)
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		m.notice = &notice{text: fmt.Sprintf("%s cancelled after %d messages; in-flight work was settled", j.title, res.Done), isErr: true}
	case err != nil:
		m.notice = &notice{text: text + ": " + firstLine(m.c.errText(err)), isErr: true}
		if res.Done == 0 && res.Summary == "" {
			m.notice.text = j.title + ": " + firstLine(m.c.errText(err))
		}
	default:
		m.notice = &notice{text: text, isErr: res.Failed > 0}
	}
	if m.quitAfterJob {
		return m, tea.Quit
	}
	var cmds []tea.Cmd
	if j.after != nil && (err == nil || res.Done > 0) {
		var cmd tea.Cmd
		m, cmd = j.after(m, res)
		cmds = append(cmds, cmd)
	}
	return m, tea.Batch(cmds...)
}

func (j *job) view(st styles, cancel key.Binding, width int) string {
	p := j.progress
	label := j.title
	if p.Step != "" {
		label += ": " + p.Step
	}
	if j.cancelling {
		label += " (cancelling…)"
	}
	count := strconv.FormatInt(p.Done, 10)
	frac := 0.0
	if p.Total > 0 {
		count += "/" + strconv.FormatInt(p.Total, 10)
		frac = float64(p.Done) / float64(p.Total)
	}
	if p.Note != "" {
		count = p.Note
	}
	if p.Failed > 0 {
		count += " (" + strconv.FormatInt(p.Failed, 10) + " failed)"
	}
	right := count + "  " + st.key.Render(cancel.Help().Key) + " cancel"
	barW := max(5, width-ansi.StringWidth("⟳ "+label)-ansi.StringWidth(right)-3)
	var b string
	if p.Total > 0 {
		fill, empty := bar(frac, barW)
		b = st.barFill.Render(fill) + st.barEmpty.Render(empty)
	} else {
		// Unknown total: a moving block shows it is alive.
		pos := int(p.Done) % barW
		b = st.barEmpty.Render(fit("", pos)) + st.barFill.Render("███") + st.barEmpty.Render(fit("", max(0, barW-pos-3)))
	}
	return st.warn.Render("⟳ "+label) + " " + b + " " + right
}

func itoa(n int) string { return strconv.Itoa(n) }
