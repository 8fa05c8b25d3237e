package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

func (mv *messagesView) view(h, w int) []string {
	st := mv.c.styles
	var out []string
	// Status line: counts, loading, filter.
	status := itoa(len(mv.rows)) + " read"
	if mv.loading {
		status = "reading… " + itoa(len(mv.rows)) + " so far"
	}
	if n := mv.length(); n > 0 {
		status = "row " + itoa(mv.cursor+1) + "/" + itoa(n) + " · " + status
	}
	if !mv.loading && mv.report.Changed != "" {
		status += " · " + mv.report.Changed
	}
	if mv.filtered {
		status = itoa(len(mv.visible)) + " match · " + status
		if mv.fbusy {
			status += " · filtering…"
		}
		if mv.ferrs > 0 {
			status += " · filter failed on " + itoa(mv.ferrs)
		}
	}
	if len(mv.selected) > 0 {
		status += " · " + st.selected.Render(itoa(len(mv.selected))+" selected")
	}
	if mv.filtering {
		out = append(out, mv.input.View())
	} else {
		var f []string
		if mv.expr != "" {
			f = append(f, "jq: "+mv.expr)
		}
		if mv.quickLabel != "" {
			f = append(f, mv.quickLabel)
		}
		line := st.subtle.Render(status)
		if len(f) > 0 {
			line = st.warn.Render(strings.Join(f, " · ")) + st.subtle.Render("  ("+mv.c.keys.global.Back.Help().Key+" clears) · ") + line
		}
		out = append(out, line)
	}

	l := mv.layout(w)
	idW, ageW, reasonW, srcW, delivW, deathW, sizeW, previewW := l.id, 5, l.reason, l.source, 10, 6, 7, l.body
	hdr := "  " + fit("ID", idW) + " " + fitRight("AGE", ageW) + " " + fit("REASON", reasonW) + " " + fit("SOURCE", srcW) + " " +
		fitRight("DELIVERIES", delivW) + " " + fitRight("DEATHS", deathW) + " " + fitRight("SIZE", sizeW) + " " + "BODY"
	out = append(out, st.header.Render(fit(hdr, w)))
	rows := max(1, h-len(out))
	n := mv.length()
	if n == 0 {
		switch {
		case mv.loading:
			out = append(out, "  reading messages (peek: nothing is removed)…")
		case mv.filtered && mv.fbusy:
			out = append(out, "  filtering…")
		case mv.filtered:
			out = append(out, "  no message matches the filter")
		default:
			out = append(out, "  the queue is empty")
		}
		return out
	}
	off := max(0, min(mv.offset, n-rows))
	if mv.cursor < off {
		off = mv.cursor
	}
	if mv.cursor >= off+rows {
		off = mv.cursor - rows + 1
	}
	now := mv.c.now()
	for i := off; i < n && i < off+rows; i++ {
		r := mv.at(i)
		mark := "  "
		if mv.selected[r.id] {
			mark = "● "
		}
		line := mark + fit(l.showID(vis(r.id)), idW) + " " + fitRight(humanAge(r.msg.Age(now)), ageW) + " " + fit(reasonCell(r), reasonW) + " " +
			fit(vis(r.source), srcW) + " " + fitRight(strconv.FormatInt(r.deliv, 10), delivW) + " " + fitRight(strconv.FormatInt(r.deaths, 10), deathW) + " " + fitRight(humanBytes(int64(r.size)), sizeW) + " " +
			fit(r.preview, previewW)
		switch {
		case i == mv.cursor:
			line = st.cursor.Render(line)
		case mv.selected[r.id]:
			line = st.selected.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// listLayout is the width of each variable column of the message list.
type listLayout struct {
	id, reason, source, body int
	short                    bool // IDs cut to their first runes (the detail view shows them whole)
}

// shortID is how many runes of an ID a narrow screen shows, then "…".
const shortID = 8

// layout sizes the columns for w cells: IDs in full (redrive --id and dlq
// show take them) when the screen leaves the rest room, else their first
// runes; then REASON takes the width it needs before SOURCE and BODY.
func (mv *messagesView) layout(w int) listLayout {
	const fixed = 2 + 5 + 10 + 6 + 7 + 7 // mark, AGE, DELIVERIES, DEATHS, SIZE, the spaces between columns
	var l listLayout
	l.id = 2
	widestReason, widestSource := len("REASON"), len("SOURCE")
	for i := 0; i < mv.length() && i < firstPage; i++ {
		r := mv.at(i)
		l.id = max(l.id, ansi.StringWidth(vis(r.id)))
		widestReason = max(widestReason, ansi.StringWidth(reasonCell(r)))
		widestSource = max(widestSource, ansi.StringWidth(vis(r.source)))
	}
	if l.id > shortID+1 && w-fixed-l.id < 40 {
		l.id, l.short = shortID+1, true
	}
	rest := max(0, w-fixed-l.id)
	l.source = min(widestSource, 18)
	if rest < 60 {
		l.source = min(l.source, 10)
	}
	l.reason = min(widestReason, max(14, (rest-l.source)*2/3))
	l.body = max(0, rest-l.source-l.reason)
	return l
}

// showID is an ID as the list shows it: whole, or cut on a narrow screen.
func (l listLayout) showID(id string) string {
	if !l.short || ansi.StringWidth(id) <= l.id {
		return id
	}
	return ansi.Truncate(id, shortID, "") + "…"
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// reasonCell is a row's REASON: its failure template, marked UNREADABLE for
// a message dlq's client could not decode.
func reasonCell(r *row) string {
	if r.msg.Unreadable != "" {
		return "UNREADABLE " + vis(r.shape)
	}
	return vis(r.shape)
}
