package tui

import (
	"context"
	"image/color"
	"log/slog"
	"time"

	"charm.land/lipgloss/v2"
)

// common is what every screen shares: the terminal size, styles, keymaps,
// logger and backend. Screens hold a pointer to the one instance; only
// Update writes to it.
type common struct {
	width, height int
	styles        styles
	keys          keyMap
	log           *slog.Logger
	backend       Backend
	opts          Options
	ctx           context.Context
	jobSeq        int
	loadSeq       int
}

func (c *common) now() time.Time {
	if c.opts.Now != nil {
		return c.opts.Now()
	}
	return time.Now()
}

// readOnly reports whether every mutating action is absent.
func (c *common) readOnly() bool {
	b := c.backend
	return b.ReadOnly || (b.Redrive == nil && b.Discard == nil && b.Replace == nil)
}

// styles are the lipgloss styles of every screen. Without colour they keep
// only bold, faint and reverse, so that the cursor and headings still show.
type styles struct {
	color bool

	title, subtle, header, cursor, selected, dlq, danger, ok, warn lipgloss.Style
	notice, errorNotice, dialog, bar, key, barFill, barEmpty       lipgloss.Style
	jsonKey, jsonString, jsonNumber, jsonLiteral, jsonPunct        lipgloss.Style
	diffAdd, diffDel, locked, spark                                lipgloss.Style
}

func newStyles(useColor bool) styles {
	s := lipgloss.NewStyle()
	fg := func(c string) lipgloss.Style {
		if !useColor {
			return s
		}
		return s.Foreground(lipgloss.Color(c))
	}
	var border color.Color = lipgloss.NoColor{}
	if useColor {
		border = lipgloss.Color("63")
	}
	st := styles{
		color:       useColor,
		title:       fg("212").Bold(true),
		subtle:      fg("245"),
		header:      fg("252").Bold(true),
		cursor:      s.Reverse(true),
		selected:    fg("214").Bold(true),
		dlq:         fg("203").Bold(true),
		danger:      fg("196").Bold(true),
		ok:          fg("42"),
		warn:        fg("214"),
		notice:      fg("42").Bold(true),
		errorNotice: fg("196").Bold(true),
		dialog:      s.Border(lipgloss.RoundedBorder()).BorderForeground(border).Padding(0, 1),
		bar:         fg("245"),
		key:         fg("81").Bold(true),
		barFill:     fg("63"),
		barEmpty:    fg("238"),
		jsonKey:     fg("81"),
		jsonString:  fg("114"),
		jsonNumber:  fg("215"),
		jsonLiteral: fg("176"),
		jsonPunct:   fg("245"),
		diffAdd:     fg("42"),
		diffDel:     fg("203"),
		locked:      fg("240"),
		spark:       fg("69"),
	}
	if !useColor {
		st.subtle = s.Faint(true)
		st.locked = s.Faint(true)
	}
	return st
}
