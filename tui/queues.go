package tui

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/broker"
)

const (
	defaultRefresh = 2 * time.Second
	trendSamples   = 30
)

type sortOrder int

const (
	// sortAttention is `dlq queues`' order: DLQs with messages first,
	// deepest first, then every other queue by name.
	sortAttention sortOrder = iota
	sortName
	sortDepth
	sortDLQFirst
	sortOrders
)

func (s sortOrder) String() string {
	return [...]string{"attention", "name", "depth", "dlq first"}[s]
}

// needsAttention is a DLQ that holds messages, as `dlq queues` says.
func needsAttention(q broker.Queue) bool { return q.IsDLQ && q.Depth > 0 }

// queuesView lists every queue with its health and a live depth trend.
type queuesView struct {
	c       *common
	all     []broker.Queue
	visible []int
	cursor  int
	offset  int
	sort    sortOrder
	// name filter
	input     textinput.Model
	filtering bool
	filter    string

	history  map[string][]int64
	loaded   bool
	err      error
	inflight bool
	updated  time.Time
}

type queuesMsg struct {
	queues []broker.Queue
	err    error
	at     time.Time
}

type refreshTickMsg struct{}

func newQueuesView(c *common) queuesView {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "queue name"
	return queuesView{c: c, input: ti, history: map[string][]int64{}}
}

// fetch lists the queues in the background.
func (q queuesView) fetch() tea.Cmd {
	b, ctx, now := q.c.backend, q.c.ctx, q.c.now
	return q.c.safeAs(func() tea.Msg {
		if b.Queues == nil {
			return queuesMsg{err: nil, at: now()}
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		qs, err := b.Queues(cctx)
		return queuesMsg{queues: qs, err: err, at: now()}
	}, func(err error) tea.Msg { return queuesMsg{err: err, at: now()} })
}

func (q queuesView) update(msg tea.Msg) (queuesView, tea.Cmd) {
	switch msg := msg.(type) {
	case queuesMsg:
		q.inflight = false
		q.loaded = true
		var cmds []tea.Cmd
		if msg.err != nil {
			q.err = msg.err
			cmds = append(cmds, func() tea.Msg { return errMsg{msg.err} })
		} else {
			q.err = nil
			q.updated = msg.at
			var selected string
			if len(q.visible) > 0 && q.cursor < len(q.visible) {
				selected = q.all[q.visible[q.cursor]].Name
			}
			q.all = msg.queues
			seen := map[string]bool{}
			for _, qu := range q.all {
				h := append(q.history[qu.Name], qu.Depth)
				if len(h) > trendSamples {
					h = h[len(h)-trendSamples:]
				}
				q.history[qu.Name] = h
				seen[qu.Name] = true
			}
			for name := range q.history {
				if !seen[name] {
					delete(q.history, name)
				}
			}
			q.relist(selected)
		}
		if r := q.c.opts.Refresh; r > 0 {
			cmds = append(cmds, tea.Tick(r, func(time.Time) tea.Msg { return refreshTickMsg{} }))
		}
		return q, tea.Batch(cmds...)
	case refreshTickMsg:
		if q.inflight {
			return q, nil
		}
		q.inflight = true
		return q, q.fetch()
	}
	return q, nil
}

// relist applies the name filter and the sort, keeping the cursor on the
// queue it was on.
func (q *queuesView) relist(keep string) {
	q.visible = q.visible[:0]
	f := strings.ToLower(q.filter)
	for i, qu := range q.all {
		if f == "" || strings.Contains(strings.ToLower(qu.Name), f) {
			q.visible = append(q.visible, i)
		}
	}
	slices.SortStableFunc(q.visible, func(a, b int) int {
		x, y := q.all[a], q.all[b]
		switch q.sort {
		case sortAttention:
			if na, nb := needsAttention(x), needsAttention(y); na != nb {
				if na {
					return -1
				}
				return 1
			} else if na {
				if c := cmp.Compare(y.Depth, x.Depth); c != 0 {
					return c
				}
			}
		case sortDepth:
			if c := cmp.Compare(y.Depth, x.Depth); c != 0 {
				return c
			}
		case sortDLQFirst:
			if c := cmp.Compare(roleRank(x.Role), roleRank(y.Role)); c != 0 {
				return c
			}
		}
		return cmp.Compare(x.Name, y.Name)
	})
	q.cursor = min(q.cursor, max(0, len(q.visible)-1))
	if keep != "" {
		for i, idx := range q.visible {
			if q.all[idx].Name == keep {
				q.cursor = i
			}
		}
	}
}

// roleRank orders roles for the "dlq first" sort: dead letters first,
// then retry steps, then work queues.
func roleRank(r broker.Role) int {
	switch r {
	case broker.RoleDLQ:
		return 0
	case broker.RoleParking:
		return 1
	case broker.RoleRetry:
		return 2
	}
	return 3
}

// roleLabel is a queue's ROLE cell: its role, with * when only its name
// gives it.
func roleLabel(qu broker.Queue) string {
	if qu.RoleSource == broker.RoleFromName {
		return string(qu.Role) + "*"
	}
	return string(qu.Role)
}

func (q queuesView) current() (broker.Queue, bool) {
	if q.cursor < len(q.visible) {
		return q.all[q.visible[q.cursor]], true
	}
	return broker.Queue{}, false
}

func (q queuesView) depthOf(name string) (broker.Queue, bool) {
	for _, qu := range q.all {
		if qu.Name == name {
			return qu, true
		}
	}
	return broker.Queue{}, false
}

// updateKey handles a key on the queue list; opening a queue is asked of
// the root model.
func (q queuesView) updateKey(k tea.KeyPressMsg) (queuesView, tea.Cmd, tea.Msg) {
	km := q.c.keys.queues
	if q.filtering {
		in := q.c.keys.input
		switch {
		case key.Matches(k, in.Accept):
			q.filtering = false
			q.input.Blur()
			return q, nil, nil
		case key.Matches(k, in.Cancel):
			q.filtering = false
			q.input.Blur()
			q.input.SetValue("")
			q.filter = ""
			q.relist("")
			return q, nil, nil
		}
		var cmd tea.Cmd
		q.input, cmd = q.input.Update(k)
		q.filter = q.input.Value()
		q.relist("")
		return q, cmd, nil
	}
	page := max(1, q.c.height-6)
	switch {
	case key.Matches(k, km.Up):
		q.cursor = max(0, q.cursor-1)
	case key.Matches(k, km.Down):
		q.cursor = min(max(0, len(q.visible)-1), q.cursor+1)
	case key.Matches(k, km.PageUp):
		q.cursor = max(0, q.cursor-page)
	case key.Matches(k, km.PageDown):
		q.cursor = min(max(0, len(q.visible)-1), q.cursor+page)
	case key.Matches(k, km.Top):
		q.cursor = 0
	case key.Matches(k, km.Bottom):
		q.cursor = max(0, len(q.visible)-1)
	case key.Matches(k, km.Sort):
		cur, _ := q.current()
		q.sort = (q.sort + 1) % sortOrders
		q.relist(cur.Name)
	case key.Matches(k, km.Filter):
		q.filtering = true
		return q, q.input.Focus(), nil
	case key.Matches(k, km.Reload):
		q.inflight = true
		return q, q.fetch(), nil
	case key.Matches(k, q.c.keys.global.Back):
		if q.filter != "" {
			q.filter = ""
			q.input.SetValue("")
			q.relist("")
		}
	case key.Matches(k, km.Open):
		if cur, ok := q.current(); ok {
			return q, nil, openQueueMsg{name: cur.Name}
		}
	}
	return q, nil, nil
}

func (q *queuesView) view(h, w int) []string {
	st := q.c.styles
	var out []string
	status := "sort: " + q.sort.String()
	if !q.updated.IsZero() {
		status += "  ·  " + itoa(len(q.visible)) + "/" + itoa(len(q.all)) + " queues  ·  updated " + q.updated.Format("15:04:05")
	}
	for _, qu := range q.all {
		if qu.RoleSource == broker.RoleFromName {
			status += "  ·  * role from the name"
			break
		}
	}
	if q.filtering {
		out = append(out, q.input.View())
	} else if q.filter != "" {
		out = append(out, st.subtle.Render("filter: ")+q.filter+st.subtle.Render("  ("+q.c.keys.global.Back.Help().Key+" clears)  ·  "+status))
	} else {
		out = append(out, st.subtle.Render(status))
	}
	if !q.loaded {
		return append(out, "", "  loading queues…")
	}
	if len(q.all) == 0 {
		return append(out, "", "  no queues")
	}
	// Columns: NAME KIND DEPTH IN-FLIGHT CONSUMERS ROLE TREND
	const roleW = 9
	trendW := min(trendSamples, max(8, w/6))
	fixed := 12 + 9 + 10 + 10 + roleW + trendW + 6
	// NAME is as wide as the longest name, no wider: on a wide screen the
	// numbers stay next to the names they belong to.
	widest := 12
	for _, i := range q.visible {
		widest = max(widest, ansi.StringWidth(vis(q.all[i].Name))+2)
	}
	nameW := max(12, min(w-fixed, widest))
	hdr := fit("NAME", nameW) + " " + fit("KIND", 12) + " " + fitRight("DEPTH", 9) + " " + fitRight("IN-FLIGHT", 10) + " " + fitRight("CONSUMERS", 10) + " " + fit(" ROLE", roleW) + " " + "TREND"
	out = append(out, st.header.Render(hdr))
	rows := h - len(out)
	if q.cursor < q.offset {
		q.offset = q.cursor
	}
	if q.cursor >= q.offset+rows {
		q.offset = q.cursor - rows + 1
	}
	for i := q.offset; i < len(q.visible) && i < q.offset+rows; i++ {
		qu := q.all[q.visible[i]]
		role := fit(" "+roleLabel(qu), roleW)
		cells := fit(vis(qu.Name), nameW) + " " + fit(string(qu.Kind), 12) + " " + fitRight(itoa64(qu.Depth), 9) + " " +
			fitRight(optInt(qu.InFlight), 10) + " " + fitRight(optInt(qu.Consumers), 10) + " "
		spark := sparkline(q.history[qu.Name], trendW)
		if i == q.cursor {
			out = append(out, st.cursor.Render(fit(cells+role+" "+spark, w)))
			continue
		}
		switch {
		case qu.IsDLQ:
			role = st.dlq.Render(role)
		case qu.Role == broker.RoleRetry:
			role = st.subtle.Render(role)
		}
		out = append(out, cells+role+" "+st.spark.Render(spark))
	}
	return out
}
