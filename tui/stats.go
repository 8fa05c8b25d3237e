package tui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
)

// statsView is the failure statistics of the open queue as a bar chart,
// grouped by reason shape (with failure group IDs, trends and hot values),
// exact reason text, redrives, source, exchange, routing key, a header, an
// attribute or a body path — the groupings of `dlq stats`, computed by the
// backend.
type statsView struct {
	c       *common
	spec    string
	res     Grouping
	cursor  int
	offset  int
	busy    bool
	pending bool // waiting for the queue to finish loading
	gen     int
	input   textinput.Model
	typing  bool
	rows    []*row
}

type statsMsg struct {
	gen  int
	spec string
	res  Grouping
	err  error
}

var statsSpecs = []string{"reason", "source", "exchange", "routing-key", "redrives", "reason-text", "day", "hour", "age"}

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
	group := s.c.backend.Group
	if group == nil {
		s.busy = false
		return func() tea.Msg {
			return statsMsg{gen: gen, spec: spec, err: errors.New("statistics are not available here")}
		}
	}
	msgs := make([]*broker.Message, len(rows))
	for i, r := range rows {
		msgs[i] = r.msg
	}
	ctx := s.c.ctx
	return s.c.safe(func() tea.Msg {
		res, err := group(ctx, spec, msgs)
		return statsMsg{gen: gen, spec: spec, res: res, err: err}
	})
}

func (s statsView) update(msg tea.Msg) (statsView, tea.Cmd) {
	if m, ok := msg.(statsMsg); ok && m.gen == s.gen {
		s.busy = false
		if m.err != nil {
			return s, func() tea.Msg { return errMsg{m.err} }
		}
		s.res = m.res
		s.cursor = min(s.cursor, max(0, len(s.res.Groups)-1))
	}
	return s, nil
}

// groupRows returns the loaded rows of group i, in queue order.
func (s *statsView) groupRows(i int) []*row {
	of := s.res.Of
	if of == nil || i >= len(s.res.Groups) {
		return nil
	}
	var out []*row
	for _, r := range s.rows {
		if of(r.msg) == i {
			out = append(out, r)
		}
	}
	return out
}

// groupLabel names group i for a notice or a filter.
func (s *statsView) groupLabel(i int) string { return s.res.label(s.spec, i) }

// label names group i of a grouping by spec, for a notice or a filter.
func (g Grouping) label(spec string, i int) string {
	row := g.Groups[i]
	if row.ID != "" {
		return "group " + vis(row.ID) + " (" + oneLine(row.Key, 50) + ")"
	}
	return spec + " = " + oneLine(row.Key, 60)
}

// showGroup shows the loaded messages of group i.
func (g Grouping) showGroup(spec string, i int) showMatchesMsg {
	of := g.Of
	return showMatchesMsg{label: g.label(spec, i), match: func(r *row) bool { return of(r.msg) == i }}
}

// loaded groups the whole queue once it has been read, when the view was
// opened before.
func (s statsView) loaded(rows []*row) (statsView, tea.Cmd) {
	if !s.pending {
		return s, nil
	}
	s.pending = false
	return s, s.compute(rows)
}

// updateKey handles a key on the statistics: groupings change here; the
// messages of a group and the actions on it are asked of the root model.
func (s statsView) updateKey(k tea.KeyPressMsg) (statsView, tea.Cmd, tea.Msg) {
	km := s.c.keys.stats
	if s.typing {
		in := s.c.keys.input
		switch {
		case key.Matches(k, in.Accept):
			s.typing = false
			s.input.Blur()
			spec := strings.TrimSpace(s.input.Value())
			if spec == "" {
				return s, nil, nil
			}
			s.spec = spec
			return s, s.compute(s.rows), nil
		case key.Matches(k, in.Cancel):
			s.typing = false
			s.input.Blur()
			return s, nil, nil
		}
		var cmd tea.Cmd
		s.input, cmd = s.input.Update(k)
		return s, cmd, nil
	}
	switch {
	case key.Matches(k, km.Up):
		s.cursor = max(0, s.cursor-1)
	case key.Matches(k, km.Down):
		s.cursor = min(max(0, len(s.res.Groups)-1), s.cursor+1)
	case key.Matches(k, km.Cycle):
		i := slices.Index(statsSpecs, s.spec)
		s.spec = statsSpecs[(i+1)%len(statsSpecs)]
		s.cursor = 0
		return s, s.compute(s.rows), nil
	case key.Matches(k, km.Custom):
		s.typing = true
		s.input.SetValue("")
		s.input.SetWidth(max(20, s.c.width-14))
		return s, s.input.Focus(), nil
	case key.Matches(k, km.Filter):
		if s.cursor < len(s.res.Groups) && s.res.Of != nil {
			return s, nil, s.res.showGroup(s.spec, s.cursor)
		}
	case key.Matches(k, km.Redrive), key.Matches(k, km.Discard), key.Matches(k, km.Export):
		ids, label, gids, ok := s.group()
		if !ok {
			return s, nil, errNotice("wait until the whole queue is read and grouped to act on a group")
		}
		switch {
		case key.Matches(k, km.Redrive):
			return s, nil, redriveMsg{ids: ids, count: int64(len(ids)), groups: gids}
		case key.Matches(k, km.Discard):
			return s, nil, discardMsg{ids: ids, groups: gids}
		default:
			return s, nil, exportMsg{ids: ids, groups: gids, label: label}
		}
	case key.Matches(k, s.c.keys.global.Back):
		s.pending = false
		return s, nil, navigateMsg{to: screenMessages}
	}
	return s, nil, nil
}

// group returns the messages of the group under the cursor, for the
// actions on a whole group: their IDs, the group's label and its failure
// group ID. ok is false until the whole queue is read and grouped.
func (s *statsView) group() (ids []string, label string, gids []string, ok bool) {
	if s.busy || s.pending || s.cursor >= len(s.res.Groups) {
		return nil, "", nil, false
	}
	for _, r := range s.groupRows(s.cursor) {
		ids = append(ids, r.id)
	}
	if id := s.res.Groups[s.cursor].ID; id != "" {
		gids = []string{id}
	}
	return ids, s.groupLabel(s.cursor), gids, len(ids) > 0
}

func (s *statsView) view(h, w int) []string {
	st := s.c.styles
	groups := s.res.Groups
	var out []string
	if s.typing {
		out = append(out, s.input.View())
	} else {
		line := "group by " + st.header.Render(s.spec) + st.subtle.Render(fmt.Sprintf("  ·  %s, %s", countOf(s.res.Total, "message"), countOf(len(groups), "group")))
		if s.res.TrendStep > 0 {
			line += st.subtle.Render(fmt.Sprintf("  ·  trend %s, %s a bar", humanAge(human.Times(s.res.TrendStep, trendWidth(groups))), humanAge(s.res.TrendStep)))
		}
		if s.busy {
			line += st.subtle.Render("  ·  counting…")
		}
		if s.pending {
			line += st.subtle.Render("  ·  queue still being read")
		}
		out = append(out, line)
	}
	if len(groups) == 0 {
		if s.busy {
			return append(out, "", "  counting…")
		}
		return append(out, "", "  no messages")
	}
	ids := groups[0].ID != "" || len(groups) > 1 && groups[1].ID != ""
	idW := 0
	if ids {
		idW = 11
	}
	trendW := max(5, trendWidth(groups))
	numW := 7
	tailW := 6 + 1 + 5 + 1 + trendW + 1 + 9 + 1 + 9
	labelW := min(60, max(12, w-idW-numW-tailW-4-8))
	barW := max(3, w-idW-labelW-numW-tailW-4)
	hdr := ""
	if ids {
		hdr = fit("ID", idW)
	}
	hdr += fit("GROUP", labelW) + " " + fit("", barW) + " " + fitRight("COUNT", numW) + " " + fitRight("SHARE", 6) + " " + fitRight("1H", 5) + " " + fit("TREND", trendW) + " " + fitRight("OLDEST", 9) + " " + fitRight("NEWEST", 9)
	out = append(out, st.header.Render(fit(hdr, w)))
	top := groups[0].Count
	rows := h - len(out) - 1 // the last line shows the hot values
	if s.cursor < s.offset {
		s.offset = s.cursor
	}
	if s.cursor >= s.offset+rows {
		s.offset = s.cursor - rows + 1
	}
	now := s.c.now()
	for i := s.offset; i < len(groups) && i < s.offset+rows; i++ {
		g := groups[i]
		fill, empty := bar(float64(g.Count)/float64(top), barW)
		share := fmt.Sprintf("%.1f%%", 100*float64(g.Count)/float64(max(1, s.res.Total)))
		label := oneLine(g.Key, 200)
		if label == "" {
			label = "(none)"
		}
		head := ""
		if ids {
			head = fit(vis(g.ID), idW)
		}
		tail := " " + fitRight(strconv.Itoa(g.Count), numW) + " " + fitRight(share, 6) + " " + fitRight(strconv.FormatInt(g.LastHour, 10), 5) + " " +
			fit(g.Trend, trendW) + " " + fitRight(ageOrDash(now, g.Oldest), 9) + " " + fitRight(ageOrDash(now, g.Newest), 9)
		if i == s.cursor {
			out = append(out, st.cursor.Render(head+fit(label, labelW)+" "+fill+empty+tail))
			continue
		}
		out = append(out, head+fit(label, labelW)+" "+st.barFill.Render(fill)+empty+tail)
	}
	for len(out) < h-1 {
		out = append(out, "")
	}
	if s.cursor < len(groups) && groups[s.cursor].Hot != "" {
		out = append(out, st.subtle.Render(fit("hot: "+vis(groups[s.cursor].Hot), w)))
	}
	return out
}

// trendWidth is the width of the groups' sparklines (all have the same).
func trendWidth(groups []GroupRow) int {
	if len(groups) == 0 {
		return 0
	}
	return utf8.RuneCountInString(groups[0].Trend)
}

func ageOrDash(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return humanAge(now.Sub(t)) + " ago"
}

func stripStyles(s string) string { return ansi.Strip(s) }

// countOf is "1 group", "2 groups".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
