package cmd

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/dlq-tools/dlq/tui"
)

// frameProbe keeps the latest frame of a TUI model, styles stripped, for
// teatest.WaitFor.
type frameProbe struct {
	tea.Model
	frame *atomic.Pointer[string]
}

func (p frameProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	p.Model = m
	return p, cmd
}

func (p frameProbe) View() tea.View {
	v := p.Model.View()
	s := ansi.Strip(v.Content)
	p.frame.Store(&s)
	return v
}

// latestFrame hands teatest.WaitFor the latest frame, once each.
type latestFrame struct {
	frame   *atomic.Pointer[string]
	sent    *string
	pending []byte
}

func (r *latestFrame) Read(b []byte) (int, error) {
	if len(r.pending) == 0 {
		cur := r.frame.Load()
		if cur == nil || cur == r.sent {
			return 0, io.EOF
		}
		r.sent = cur
		// WaitFor accumulates what it reads: a marker starts each frame.
		r.pending = []byte("\x00FRAME\x00" + *cur)
	}
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// The TUI's redrive of the messages a filter matches counts its progress
// against them, as the command's progress line does ("moved 0/4"), not
// against the queue's depth (12).
func TestTUIRedriveProgressCountsTheSelection(t *testing.T) {
	b := &moveFake{dlq: fakeDead(12)}
	// The first publish waits until the test has seen the progress.
	release := make(chan struct{})
	b.published = func() { <-release }
	let := sync.OnceFunc(func() { close(release) })
	defer let()
	f, _ := moveFactory(t, b, true)
	f.Options.Yes = false
	src := depthFake{b}
	backend := tuiBackend(f, src, &tuiOptions{f: f, Queue: "orders.dlq", Limit: 1000}, false, f.Logger)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frame := &atomic.Pointer[string]{}
	model := frameProbe{Model: tui.New(ctx, backend, tui.Options{Queue: "orders.dlq", Refresh: -1, Now: time.Now}, f.Logger), frame: frame}
	tm := teatest.NewTestModel(t, model, teatest.WithInitialTermSize(120, 30))
	waitFor := func(want ...string) {
		t.Helper()
		teatest.WaitFor(t, &latestFrame{frame: frame}, func(out []byte) bool {
			i := strings.LastIndex(string(out), "\x00FRAME\x00")
			if i < 0 {
				return false
			}
			for _, w := range want {
				if !strings.Contains(string(out[i:]), w) {
					return false
				}
			}
			return true
		}, teatest.WithDuration(2*time.Minute), teatest.WithCheckInterval(5*time.Millisecond))
	}
	key := func(k tea.KeyPressMsg) { tm.Send(k) }
	waitFor("12 read")
	key(tea.KeyPressMsg{Code: '/', Text: "/"})
	tm.Type(".body.n < 4")
	key(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFor("4 match")
	key(tea.KeyPressMsg{Code: 'a', Mod: tea.ModCtrl})
	waitFor("redrive 4 message(s) to")
	key(tea.KeyPressMsg{Code: tea.KeyEnter}) // origin
	waitFor("move 4 message(s) from orders.dlq to origin")
	key(tea.KeyPressMsg{Code: 'y', Text: "y"})
	// The first publish waits: the run reports progress meanwhile.
	waitFor("⟳ redriving 4 to origin", "moved 0/4")
	if got := *frame.Load(); strings.Contains(got, "/12") {
		t.Errorf("the progress counts against the queue's depth:\n%s", got)
	}
	let()
	waitFor("moved to origin: 4 of 12 examined")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	tm.FinalModel(t, teatest.WithFinalTimeout(2*time.Minute))
	if len(b.dest) != 4 {
		t.Errorf("moved %d, want 4", len(b.dest))
	}
}
