package tui

import (
	"charm.land/bubbles/v2/key"
)

// keyMap holds the bindings of every screen. Screens match keys only
// through these bindings, and the help is drawn from them, so that what the
// help shows is what works. A dangerous binding whose
// capability is missing (read-only mode, or a backend that cannot do it) is
// the zero Binding: it matches no key and is left out of every help view.
type keyMap struct {
	global   globalKeys
	queues   queuesKeys
	messages messagesKeys
	detail   detailKeys
	edit     editKeys
	stats    statsKeys
	triage   triageKeys
	dialog   dialogKeys
	input    inputKeys
}

type globalKeys struct {
	Quit, Help, Back, Dismiss, CancelJob key.Binding
	// Interrupt quits from anywhere but a dialog or the editor, even while
	// a text field has the keyboard.
	Interrupt key.Binding
}

type queuesKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Filter, Sort, Reload              key.Binding
}

type messagesKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Filter, Reasons, Stats, Reload    key.Binding
	Select, SelectAll, SelectNone           key.Binding
	Export                                  key.Binding
	// dangerous
	Redrive, RedriveAll, Discard key.Binding
}

type detailKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Raw, Next, Prev, Export                 key.Binding
	// dangerous
	Edit, Redrive, Discard key.Binding
}

type editKeys struct {
	Save, External, Cancel key.Binding
	// the review of the diff
	Up, Down, PageUp, PageDown key.Binding
	Publish, Back              key.Binding
}

type statsKeys struct {
	Up, Down, Cycle, Custom, Filter key.Binding
	Export                          key.Binding
	// dangerous
	Redrive, Discard key.Binding
}

type dialogKeys struct {
	Up, Down, Confirm, Cancel, Yes, No key.Binding
}

// inputKeys end typing in a one-line field (a filter, a grouping).
type inputKeys struct {
	Accept, Cancel key.Binding
}

func bind(keys []string, helpKey, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
}

// capabilities says which dangerous actions exist.
type capabilities struct {
	redrive, discard, edit, export bool
}

func capabilitiesOf(b Backend) capabilities {
	if b.ReadOnly {
		return capabilities{export: b.Export != nil}
	}
	return capabilities{
		redrive: b.Redrive != nil,
		discard: b.Discard != nil,
		edit:    b.Replace != nil,
		export:  b.Export != nil,
	}
}

func newKeyMap(c capabilities) keyMap {
	up := bind([]string{"up", "k"}, "↑/k", "up")
	down := bind([]string{"down", "j"}, "↓/j", "down")
	pgup := bind([]string{"pgup", "ctrl+b"}, "pgup", "page up")
	pgdn := bind([]string{"pgdown", "ctrl+f"}, "pgdn", "page down")
	top := bind([]string{"home"}, "home", "first")
	bottom := bind([]string{"end", "G"}, "end/G", "last")
	reload := bind([]string{"ctrl+r"}, "ctrl+r", "reload")

	km := keyMap{
		global: globalKeys{
			Quit:      bind([]string{"q"}, "q", "quit"),
			Interrupt: bind([]string{"ctrl+c"}, "ctrl+c", "quit"),
			Help:      bind([]string{"?"}, "?", "help"),
			Back:      bind([]string{"esc"}, "esc", "back"),
			Dismiss:   bind([]string{"esc", "enter"}, "esc", "dismiss notice"),
			CancelJob: bind([]string{"ctrl+x"}, "ctrl+x", "cancel running action"),
		},
		queues: queuesKeys{
			Up: up, Down: down, PageUp: pgup, PageDown: pgdn, Top: top, Bottom: bottom,
			Open:   bind([]string{"enter"}, "enter", "open queue"),
			Filter: bind([]string{"/"}, "/", "filter by name"),
			Sort:   bind([]string{"s"}, "s", "sort: attention/name/depth/dlq"),
			Reload: reload,
		},
		messages: messagesKeys{
			Up: up, Down: down, PageUp: pgup, PageDown: pgdn, Top: top, Bottom: bottom,
			Open:       bind([]string{"enter"}, "enter", "open message"),
			Filter:     bind([]string{"/"}, "/", "jq filter"),
			Reasons:    bind([]string{"g"}, "g", "group by reason"),
			Stats:      bind([]string{"s"}, "s", "stats"),
			Reload:     reload,
			Select:     bind([]string{"space"}, "space", "select"),
			SelectAll:  bind([]string{"a"}, "a", "select all matching"),
			SelectNone: bind([]string{"u"}, "u", "clear selection"),
		},
		detail: detailKeys{
			Up: up, Down: down, PageUp: pgup, PageDown: pgdn, Top: top, Bottom: bottom,
			Raw:  bind([]string{"r"}, "r", "raw/hex/pretty"),
			Next: bind([]string{"n"}, "n", "next message"),
			Prev: bind([]string{"p"}, "p", "previous message"),
		},
		edit: editKeys{
			Save:     bind([]string{"ctrl+s"}, "ctrl+s", "validate, diff, save"),
			External: bind([]string{"ctrl+e"}, "ctrl+e", "open in $EDITOR"),
			Cancel:   bind([]string{"esc"}, "esc", "cancel edit"),
			Up:       up, Down: down, PageUp: pgup, PageDown: pgdn,
			Publish: bind([]string{"enter", "y"}, "enter", "choose destination and save"),
			Back:    bind([]string{"esc"}, "esc", "back to editing"),
		},
		stats: statsKeys{
			Up: up, Down: down,
			Cycle:  bind([]string{"tab"}, "tab", "next grouping"),
			Custom: bind([]string{"/"}, "/", "group by header:/attr:/body:"),
			Filter: bind([]string{"enter"}, "enter", "show group's messages"),
		},
		dialog: dialogKeys{
			Up: up, Down: down,
			Confirm: bind([]string{"enter"}, "enter", "choose"),
			Cancel:  bind([]string{"esc"}, "esc", "cancel"),
			Yes:     bind([]string{"y"}, "y", "yes"),
			No:      bind([]string{"n"}, "n", "no"),
		},
		input: inputKeys{
			Accept: bind([]string{"enter"}, "enter", "apply"),
			Cancel: bind([]string{"esc"}, "esc", "cancel"),
		},
	}
	km.triage = newTriageKeys(c, up, down)
	if c.export {
		km.messages.Export = bind([]string{"x"}, "x", "export to archive")
		km.detail.Export = bind([]string{"x"}, "x", "export to archive")
		km.stats.Export = bind([]string{"x"}, "x", "export group to archive")
	}
	if c.redrive {
		km.messages.Redrive = bind([]string{"R"}, "R", "redrive selected ⚠")
		km.messages.RedriveAll = bind([]string{"ctrl+a"}, "ctrl+a", "redrive all matching ⚠")
		km.detail.Redrive = bind([]string{"R"}, "R", "redrive this ⚠")
		km.stats.Redrive = bind([]string{"R"}, "R", "redrive group ⚠")
	}
	if c.discard {
		km.messages.Discard = bind([]string{"D"}, "D", "discard selected ⚠")
		km.detail.Discard = bind([]string{"D"}, "D", "discard this ⚠")
		km.stats.Discard = bind([]string{"D"}, "D", "discard group ⚠")
	}
	if c.edit {
		km.detail.Edit = bind([]string{"e"}, "e", "edit and republish ⚠")
	}
	return km
}

// present drops the zero bindings, so that help never lists a key that does
// not exist.
func present(bs ...key.Binding) []key.Binding {
	out := bs[:0:0]
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// helpMap adapts a screen's bindings to bubbles' help.KeyMap.
type helpMap struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpMap) ShortHelp() []key.Binding  { return h.short }
func (h helpMap) FullHelp() [][]key.Binding { return h.full }

func (k keyMap) queuesHelp() helpMap {
	q, g := k.queues, k.global
	return helpMap{
		short: present(q.Open, q.Filter, q.Sort, g.Help, g.Quit),
		full: [][]key.Binding{
			present(q.Up, q.Down, q.PageUp, q.PageDown, q.Top, q.Bottom),
			present(q.Open, q.Filter, q.Sort, q.Reload),
			present(g.Help, g.Back, g.CancelJob, g.Quit),
		},
	}
}

func (k keyMap) messagesHelp() helpMap {
	m, g := k.messages, k.global
	return helpMap{
		short: present(m.Open, m.Filter, m.Select, m.Redrive, m.Discard, m.Stats, g.Help, g.Back),
		full: [][]key.Binding{
			present(m.Up, m.Down, m.PageUp, m.PageDown, m.Top, m.Bottom),
			present(m.Open, m.Filter, m.Reasons, m.Stats, k.triage.Open, m.Reload),
			present(m.Select, m.SelectAll, m.SelectNone, m.Export),
			present(m.Redrive, m.RedriveAll, m.Discard),
			present(g.Help, g.Back, g.CancelJob, g.Quit),
		},
	}
}

func (k keyMap) detailHelp() helpMap {
	d, g := k.detail, k.global
	return helpMap{
		short: present(d.Raw, d.Edit, d.Redrive, d.Next, d.Prev, g.Help, g.Back),
		full: [][]key.Binding{
			present(d.Up, d.Down, d.PageUp, d.PageDown, d.Top, d.Bottom),
			present(d.Raw, d.Next, d.Prev, d.Export),
			present(d.Edit, d.Redrive, d.Discard),
			present(g.Help, g.Back, g.CancelJob, g.Quit),
		},
	}
}

func (k keyMap) editHelp() helpMap {
	e := k.edit
	return helpMap{
		short: present(e.Save, e.External, e.Cancel),
		full:  [][]key.Binding{present(e.Save, e.External, e.Cancel)},
	}
}

func (k keyMap) reviewHelp() helpMap {
	e := k.edit
	return helpMap{
		short: present(e.Publish, e.Back),
		full:  [][]key.Binding{present(e.Up, e.Down, e.PageUp, e.PageDown), present(e.Publish, e.Back)},
	}
}

func (k keyMap) statsHelp() helpMap {
	s, g := k.stats, k.global
	return helpMap{
		short: present(s.Cycle, s.Custom, s.Filter, g.Help, g.Back),
		full: [][]key.Binding{
			present(s.Up, s.Down),
			present(s.Cycle, s.Custom, s.Filter, s.Export),
			present(s.Redrive, s.Discard),
			present(g.Help, g.Back, g.Quit),
		},
	}
}

func (k keyMap) dialogHelp() helpMap {
	d := k.dialog
	return helpMap{
		short: present(d.Up, d.Down, d.Confirm, d.Cancel),
		full:  [][]key.Binding{present(d.Up, d.Down, d.Confirm, d.Cancel)},
	}
}
