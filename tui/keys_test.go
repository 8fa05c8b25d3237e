package tui

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// settle runs cmd and every command its messages lead to, handing each
// message to the model, as the program would. Only for commands that end
// on their own (loading, grouping): a cursor's blink would never stop.
func settle(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	pending := []tea.Cmd{cmd}
	for n := 0; len(pending) > 0; n++ {
		if n > 10_000 {
			t.Fatal("the commands never settle")
		}
		c := pending[0]
		pending = pending[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			pending = append(pending, msg...)
		default:
			next, more := m.Update(msg)
			m = next.(Model)
			pending = append(pending, more)
		}
	}
	return m
}

// press hands keys to the model and settles what they start.
func press(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		next, cmd := m.Update(keyMsg(k))
		m = settle(t, next.(Model), cmd)
	}
	return m
}

// keyState is a screen in a state where every key of its help has
// something to do: a cursor away from both ends, a selection to clear, a
// filter to leave, a running action to cancel.
type keyState struct {
	name  string
	setup func(t *testing.T) Model
	help  func(k keyMap) helpMap
}

func keyStates() []keyState {
	base := func(t *testing.T, queue string) Model {
		f := newFake()
		f.messages["orders.dlq"] = sampleMessages("orders.dlq", 60)
		m := New(context.Background(), f.backend(false), Options{Queue: queue, Refresh: -1, Now: func() time.Time { return testNow }}, nil)
		next, _ := m.Update(tea.WindowSizeMsg{Width: termW, Height: termH})
		m = settle(t, next.(Model), m.Init())
		m.job = &job{id: -1, title: "testing", cancel: func() {}}
		return m
	}
	return []keyState{
		{name: "queues", help: keyMap.queuesHelp, setup: func(t *testing.T) Model {
			m := press(t, base(t, ""), "down", "down")
			m.queues.filter = "s" // every queue: esc has a filter to clear
			m.queues.relist("")
			return m
		}},
		{name: "messages", help: keyMap.messagesHelp, setup: func(t *testing.T) Model {
			m := press(t, base(t, "orders.dlq"), "down", "down", "space", "up")
			return m
		}},
		{name: "detail", help: keyMap.detailHelp, setup: func(t *testing.T) Model {
			return press(t, base(t, "orders.dlq"), "down", "down", "enter", "down")
		}},
		{name: "stats", help: keyMap.statsHelp, setup: func(t *testing.T) Model {
			return press(t, base(t, "orders.dlq"), "s", "down")
		}},
		{name: "review", help: keyMap.reviewHelp, setup: func(t *testing.T) Model {
			m := base(t, "orders.dlq")
			m = press(t, m, "enter")
			next, _ := m.Update(keyMsg("e")) // the editor's cursor blinks: not settled
			m = next.(Model)
			m.edit.ta.SetValue(strings.Replace(m.edit.before, `"status": "failed"`, `"status": "fixed"`, 1))
			next, _ = m.Update(keyMsg("ctrl+s"))
			m = next.(Model)
			if m.edit.stage != stageReview {
				t.Fatalf("no review: %s", m.edit.err)
			}
			next, _ = m.Update(keyMsg("down"))
			return next.(Model)
		}},
		{name: "dialog", help: keyMap.dialogHelp, setup: func(t *testing.T) Model {
			return press(t, base(t, "orders.dlq"), "R", "down")
		}},
	}
}

// TestEveryKeyInTheHelpWorks: each key the help of a screen lists does
// something on that screen: it changes what is shown (styles too: the
// cursor is drawn in reverse) or starts a command.
// A binding in a KeyMap that the screen's update does not handle fails.
func TestEveryKeyInTheHelpWorks(t *testing.T) {
	for _, st := range keyStates() {
		t.Run(st.name, func(t *testing.T) {
			m := st.setup(t)
			hm := st.help(m.c.keys)
			bindings := append([]key.Binding(nil), hm.short...)
			for _, col := range hm.full {
				bindings = append(bindings, col...)
			}
			if len(bindings) == 0 {
				t.Fatal("the help lists no key")
			}
			seen := map[string]bool{}
			for _, b := range bindings {
				for _, k := range b.Keys() {
					if seen[k] {
						continue
					}
					seen[k] = true
					m := st.setup(t)
					before := m.render()
					next, cmd := m.Update(keyMsg(k))
					if cmd == nil && next.(Model).render() == before {
						t.Errorf("%s (%q, help %q) does nothing", k, b.Help().Desc, b.Help().Key)
					}
				}
			}
		})
	}
}

// TestHelpListsOnlyBoundKeys: the short help is part of the full help, and
// every binding shown has keys and a description.
func TestHelpListsOnlyBoundKeys(t *testing.T) {
	km := newKeyMap(capabilitiesOf(newFake().backend(false)))
	for name, hm := range map[string]helpMap{
		"queues": km.queuesHelp(), "messages": km.messagesHelp(), "detail": km.detailHelp(), "edit": km.editHelp(),
		"review": km.reviewHelp(), "stats": km.statsHelp(), "dialog": km.dialogHelp(),
	} {
		full := map[string]bool{}
		for _, col := range hm.full {
			for _, b := range col {
				full[b.Help().Key+" "+b.Help().Desc] = true
				if len(b.Keys()) == 0 || b.Help().Desc == "" {
					t.Errorf("%s: help shows %q with keys %v", name, b.Help().Key, b.Keys())
				}
			}
		}
		for _, b := range hm.short {
			if !full[b.Help().Key+" "+b.Help().Desc] {
				t.Errorf("%s: %q is in the short help only", name, b.Help().Key+" "+b.Help().Desc)
			}
		}
	}
}

// rawKeyDispatch finds keys read by their names rather than through a
// key.Binding.
var rawKeyDispatch = regexp.MustCompile(`switch\s+[\w.]+\.String\(\)|\.String\(\)\s*[!=]=\s*"|\.Code\s*[!=]=`)

func TestNoRawKeyDispatch(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if rawKeyDispatch.MatchString(line) {
				t.Errorf("%s:%d reads a key by name instead of key.Matches with a KeyMap binding: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
