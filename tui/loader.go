package tui

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
)

// row is one message in the list, with the columns computed once when it
// is loaded (off the UI goroutine), so that drawing a row costs nothing.
type row struct {
	msg     *broker.Message
	id      string
	reason  string
	shape   string // the reason with its variable parts masked
	source  string
	deliv   int64 // delivery or receive count
	deaths  int64 // times dead-lettered
	size    int
	preview string
	seq     int // position in the queue as read
}

const (
	firstPage   = 64   // small, so the first frame comes at once
	pageSize    = 2048 // later pages
	defaultMax  = 100_000
	previewRune = 160
)

// pageMsg carries one page of rows from a running peek.
type pageMsg struct {
	gen    int
	rows   []*row
	done   bool
	report broker.PeekReport
	err    error
	ch     <-chan pageMsg
}

// startLoad reads queue in the background and returns the command that
// delivers its first page; each page re-arms the wait for the next one. The
// walk itself never waits for the UI beyond a small buffer, so a peek that
// holds deliveries on the broker finishes as fast as the broker allows.
func startLoad(ctx context.Context, b Backend, queue string, limit, gen int) tea.Cmd {
	ch := make(chan pageMsg, 8)
	reason := b.Reason
	if reason == nil {
		reason = deathReason
	}
	decode := b.Decode
	shape := b.Shape
	go func() {
		defer close(ch)
		var rep broker.PeekReport
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("reading %s failed: %v\n%s", queue, r, debug.Stack())
			}
			select {
			case ch <- pageMsg{gen: gen, done: true, report: rep, err: err, ch: ch}:
			case <-ctx.Done():
			}
		}()
		if b.Peek == nil {
			err = errors.New("this broker cannot list messages")
			return
		}
		page := make([]*row, 0, firstPage)
		want := firstPage
		seq := 0
		last := time.Now()
		rep, err = b.Peek(ctx, queue, func(m *broker.Message) error {
			r := newRow(m, seq, reason, decode)
			if shape != nil {
				r.shape = shape(r.reason)
			}
			page = append(page, r)
			seq++
			if len(page) >= want || (len(page) > 0 && time.Since(last) > 100*time.Millisecond) {
				select {
				case ch <- pageMsg{gen: gen, rows: page, ch: ch}:
				case <-ctx.Done():
					return ctx.Err()
				}
				want = pageSize
				page = make([]*row, 0, want)
				last = time.Now()
			}
			if limit > 0 && seq >= limit {
				return broker.ErrStop
			}
			return nil
		})
		if errors.Is(err, broker.ErrStop) {
			err = nil
		}
		if len(page) > 0 {
			select {
			case ch <- pageMsg{gen: gen, rows: page, ch: ch}:
			case <-ctx.Done():
			}
		}
		if err != nil && ctx.Err() != nil {
			err = nil // the user left the queue
		}
	}()
	return waitPage(ch)
}

func waitPage(ch <-chan pageMsg) tea.Cmd {
	return func() tea.Msg {
		p, ok := <-ch
		if !ok {
			return nil
		}
		return p
	}
}

func newRow(m *broker.Message, seq int, reason func(*broker.Message) string, decode func(*broker.Message) ([]byte, string)) *row {
	r := &row{msg: m, id: m.ID, size: m.Size(), seq: seq, deliv: m.DeliveryCount}
	if r.id == "" {
		r.id = broker.Fingerprint(m)
		m.ID = r.id
	}
	r.reason = reason(m)
	r.shape = r.reason
	if d := m.Death; d != nil {
		r.source = d.Queue
		r.deaths = d.Count
	}
	if r.source == "" {
		r.source = broker.RecordedSource(m)
	}
	body := m.Body
	if decode != nil {
		body, _ = decode(m)
	}
	if broker.IsText(body) {
		r.preview = oneLine(string(body[:min(len(body), previewRune*4)]), previewRune)
	} else {
		r.preview = fmt.Sprintf("<%d bytes binary>", len(m.Body))
	}
	return r
}

// deathReason is the broker's own reason, used when the backend has no
// failure-reason extraction.
func deathReason(m *broker.Message) string {
	if m.Death != nil && m.Death.Reason != "" {
		return m.Death.Reason
	}
	return "-"
}
