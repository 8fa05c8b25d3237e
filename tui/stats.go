package tui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/broker"
)

// statsView is the failure statistics of the open queue as a bar chart,
// grouped by reason, source, exchange, routing key, a header, an attribute
// or a body path.
type statsView struct {
	c       *common
	spec    string
	groups  []group
	total   int
	cursor  int
	offset  int
	busy    bool
	pending bool // waiting for the queue to finish loading
	gen     int
	input   textinput.Model
	typing  bool
	rows    []*row
	key     func(*row) string
}

type group struct {
	key            string
	count          int
	bytes          int64
	oldest, newest time.Time
}

type statsMsg struct {
	gen    int
	spec   string
	groups []group
	total  int
	err    error
	key    func(*row) string
}

var statsSpecs = []string{"reason", "source", "exchange", "routing-key", "day", "hour", "age"}

func newStatsView(c *common) statsView {
	ti := textinput.New()
	ti.Prompt = "group by> "
	ti.Placeholder = "header:x-exception-type  attr:ErrorCode  body:.customer.country"
	return statsView{c: c, spec: "reason", input: ti}
}

func (s statsView) open(rows []*row, loading bool) (statsView, tea.Cmd) {
	s.rows = rows
	s.cursor, s.offset = 0, 0
	if loading {
		// Group what is there now, and again once everything is read.
		s.pending = true
	}
	return s, s.compute(rows)
}

// compute groups rows in the background.
func (s *statsView) compute(rows []*row) tea.Cmd {
	s.gen++
	s.busy = true
	s.rows = rows
	gen, spec := s.gen, s.spec
	keyFn, err := s.keyFunc(spec)
	if err != nil {
		s.busy = false
		return func() tea.Msg { return statsMsg{gen: gen, spec: spec, err: err} }
	}
	return s.c.safe(func() tea.Msg {
		by := map[string]*group{}
		for _, r := range rows {
			k := keyFn(r)
			g := by[k]
			if g == nil {
				g = &group{key: k}
				by[k] = g
			}
			g.count++
			g.bytes += int64(r.size)
			t := r.msg.Timestamp
			if r.msg.Death != nil && !r.msg.Death.First.IsZero() {
				t = r.msg.Death.First
			}
			if !t.IsZero() {
				if g.oldest.IsZero() || t.Before(g.oldest) {
					g.oldest = t
				}
				if t.After(g.newest) {
					g.newest = t
				}
			}
		}
		out := statsMsg{gen: gen, spec: spec, total: len(rows), key: keyFn}
		for _, g := range by {
			out.groups = append(out.groups, *g)
		}
		slices.SortFunc(out.groups, func(a, b group) int {
			if c := cmp.Compare(b.count, a.count); c != 0 {
				return c
			}
			return cmp.Compare(a.key, b.key)
		})
		return out
	})
}

func (s *statsView) keyFunc(spec string) (func(*row) string, error) {
	if spec == "reason" {
		return func(r *row) string { return r.reason }, nil
	}
	if g := s.c.backend.Group; g != nil {
		fn, err := g(spec)
		if err != nil {
			return nil, err
		}
		if fn != nil {
			return func(r *row) string { return fn(r.msg) }, nil
		}
	}
	fn, err := defaultGroup(spec, s.c.now())
	if err != nil {
		return nil, err
	}
	return func(r *row) string { return fn(r.msg) }, nil
}

func (s statsView) update(msg tea.Msg) (statsView, tea.Cmd) {
	if m, ok := msg.(statsMsg); ok && m.gen == s.gen {
		s.busy = false
		if m.err != nil {
			return s, func() tea.Msg { return errMsg{m.err} }
		}
		s.groups, s.total, s.key = m.groups, m.total, m.key
		s.cursor = min(s.cursor, max(0, len(s.groups)-1))
	}
	return s, nil
}

func (m Model) updateStatsKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := &m.stats
	km := m.c.keys.stats
	if s.typing {
		switch k.String() {
		case "enter":
			s.typing = false
			s.input.Blur()
			spec := strings.TrimSpace(s.input.Value())
			if spec == "" {
				return m, nil
			}
			s.spec = spec
			return m, s.compute(m.msgs.rows)
		case "esc":
			s.typing = false
			s.input.Blur()
			return m, nil
		}
		var cmd tea.Cmd
		s.input, cmd = s.input.Update(k)
		return m, cmd
	}
	switch {
	case key.Matches(k, km.Up):
		s.cursor = max(0, s.cursor-1)
	case key.Matches(k, km.Down):
		s.cursor = min(max(0, len(s.groups)-1), s.cursor+1)
	case key.Matches(k, km.Cycle):
		i := slices.Index(statsSpecs, s.spec)
		s.spec = statsSpecs[(i+1)%len(statsSpecs)]
		s.cursor = 0
		return m, s.compute(m.msgs.rows)
	case key.Matches(k, km.Custom):
		s.typing = true
		s.input.SetValue("")
		s.input.SetWidth(max(20, m.c.width-14))
		return m, s.input.Focus()
	case key.Matches(k, km.Filter):
		if s.cursor < len(s.groups) && s.key != nil {
			g := s.groups[s.cursor].key
			fn := s.key
			m.msgs.quickLabel = s.spec + " = " + oneLine(g, 60)
			m.msgs.quick = func(r *row) bool { return fn(r) == g }
			m.screen = screenMessages
			return m, m.msgs.setFilter()
		}
	case key.Matches(k, m.c.keys.global.Back):
		s.pending = false
		m.screen = screenMessages
	}
	return m, nil
}

func (s *statsView) view(h, w int) []string {
	st := s.c.styles
	var out []string
	if s.typing {
		out = append(out, s.input.View())
	} else {
		line := "group by " + st.header.Render(s.spec) + st.subtle.Render(fmt.Sprintf("  ·  %s, %s", countOf(s.total, "message"), countOf(len(s.groups), "group")))
		if s.busy {
			line += st.subtle.Render("  ·  counting…")
		}
		if s.pending {
			line += st.subtle.Render("  ·  queue still being read")
		}
		out = append(out, line)
	}
	if len(s.groups) == 0 {
		if s.busy {
			return append(out, "", "  counting…")
		}
		return append(out, "", "  no messages")
	}
	labelW := min(40, max(12, w/3))
	numW := 8
	tailW := 6 + 1 + 8 + 1 + 11 + 1 + 11
	barW := max(5, w-labelW-numW-tailW-4)
	hdr := fit("GROUP", labelW) + " " + fit("", barW) + " " + fitRight("COUNT", numW) + " " + fitRight("SHARE", 6) + " " + fitRight("BYTES", 8) + " " + fit(" OLDEST", 11) + " " + fit(" NEWEST", 11)
	out = append(out, st.header.Render(fit(hdr, w)))
	top := s.groups[0].count
	rows := h - len(out)
	if s.cursor < s.offset {
		s.offset = s.cursor
	}
	if s.cursor >= s.offset+rows {
		s.offset = s.cursor - rows + 1
	}
	now := s.c.now()
	for i := s.offset; i < len(s.groups) && i < s.offset+rows; i++ {
		g := s.groups[i]
		fill, empty := bar(float64(g.count)/float64(top), barW)
		share := fmt.Sprintf("%.1f%%", 100*float64(g.count)/float64(max(1, s.total)))
		label := oneLine(g.key, 200)
		if label == "" {
			label = "(none)"
		}
		tail := " " + fitRight(strconv.Itoa(g.count), numW) + " " + fitRight(share, 6) + " " + fitRight(humanBytes(g.bytes), 8) + " " +
			fitRight(ageOrDash(now, g.oldest), 11) + " " + fitRight(ageOrDash(now, g.newest), 11)
		if i == s.cursor {
			out = append(out, st.cursor.Render(fit(label, labelW)+" "+fill+empty+tail))
			continue
		}
		out = append(out, fit(label, labelW)+" "+st.barFill.Render(fill)+empty+tail)
	}
	return out
}

func ageOrDash(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanAge(now.Sub(t)) + " ago"
}

// defaultGroup implements the grouping specs when the backend has none of
// its own.
func defaultGroup(spec string, now time.Time) (func(*broker.Message) string, error) {
	switch {
	case spec == "source":
		return func(m *broker.Message) string {
			if m.Death != nil {
				return m.Death.Queue
			}
			return ""
		}, nil
	case spec == "exchange":
		return func(m *broker.Message) string {
			if m.Death != nil {
				return m.Death.Exchange
			}
			return m.Exchange
		}, nil
	case spec == "routing-key":
		return func(m *broker.Message) string {
			if m.Death != nil && len(m.Death.RoutingKeys) > 0 {
				return strings.Join(m.Death.RoutingKeys, ",")
			}
			return m.RoutingKey
		}, nil
	case spec == "day", spec == "hour":
		layout := "2006-01-02"
		if spec == "hour" {
			layout = "2006-01-02 15:00"
		}
		return func(m *broker.Message) string {
			t := deathTime(m)
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(layout)
		}, nil
	case spec == "age":
		return func(m *broker.Message) string {
			t := deathTime(m)
			if t.IsZero() {
				return "unknown"
			}
			switch d := now.Sub(t); {
			case d < time.Hour:
				return "< 1h"
			case d < 24*time.Hour:
				return "1h–1d"
			case d < 7*24*time.Hour:
				return "1d–7d"
			default:
				return "> 7d"
			}
		}, nil
	case strings.HasPrefix(spec, "header:"):
		name := strings.TrimPrefix(spec, "header:")
		return func(m *broker.Message) string {
			if v, ok := m.Headers[name]; ok {
				return headerString(v)
			}
			return ""
		}, nil
	case strings.HasPrefix(spec, "attr:"):
		name := strings.TrimPrefix(spec, "attr:")
		return func(m *broker.Message) string {
			if a, ok := m.Attributes[name]; ok {
				return a.StringValue
			}
			return m.SystemAttributes[name]
		}, nil
	case strings.HasPrefix(spec, "body:"):
		path := strings.TrimPrefix(strings.TrimPrefix(spec, "body:"), ".")
		var parts []string
		if path != "" {
			parts = strings.Split(path, ".")
		}
		return func(m *broker.Message) string {
			var v any
			if json.Unmarshal(m.Body, &v) != nil {
				return ""
			}
			for _, p := range parts {
				o, ok := v.(map[string]any)
				if !ok {
					return ""
				}
				v = o[p]
			}
			if s, ok := v.(string); ok {
				return s
			}
			if v == nil {
				return ""
			}
			b, _ := jsonMarshal(v)
			return string(b)
		}, nil
	}
	return nil, fmt.Errorf("unknown grouping %q: use reason, source, exchange, routing-key, day, hour, age, header:NAME, attr:NAME or body:.path", spec)
}

func deathTime(m *broker.Message) time.Time {
	if m.Death != nil && !m.Death.Last.IsZero() {
		return m.Death.Last
	}
	if m.Death != nil && !m.Death.First.IsZero() {
		return m.Death.First
	}
	return m.Timestamp
}

func stripStyles(s string) string { return ansi.Strip(s) }

// countOf is "1 group", "2 groups".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
