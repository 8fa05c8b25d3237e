package broker

import (
	"fmt"
	"strings"
)

// Option names a setting a person can change: a flag on the command line,
// a key or a context entry in the TUI. Library messages name settings
// through an Option, never in the syntax of one front end; each front end
// renders them in its own words (see Renderer).
type Option string

// The settings that library messages name.
const (
	OptAllowDrop Option = "allow-drop"
	OptAuth      Option = "auth"
	OptBroker    Option = "broker"
	// OptCommand is a Command a message proposes; its Value is the verb
	// ("queues", "topology apply"). See Command.
	OptCommand            Option = "command"
	OptCAFile             Option = "ca-file"
	OptCertFile           Option = "cert-file"
	OptContext            Option = "context"
	OptDedupeBy           Option = "dedupe-by"
	OptDryRun             Option = "dry-run"
	OptEndpointURL        Option = "endpoint-url"
	OptExcludeID          Option = "exclude-id"
	OptFilter             Option = "filter"
	OptForce              Option = "force"
	OptGetUnreadable      Option = "get-unreadable"
	OptID                 Option = "id"
	OptInsecureSkipVerify Option = "insecure-skip-verify"
	OptKeyFile            Option = "key-file"
	OptLimit              Option = "limit"
	OptManagementCAFile   Option = "management-ca-file"
	OptManagementCertFile Option = "management-cert-file"
	OptManagementKeyFile  Option = "management-key-file"
	OptManagementURL      Option = "management-url"
	OptManagementUser     Option = "management-user"
	OptMaxRedrives        Option = "max-redrives"
	OptMaxUnacked         Option = "max-unacked"
	OptMode               Option = "mode"
	OptNewerThan          Option = "newer-than"
	OptNoRedriveHeader    Option = "no-redrive-header"
	OptOffset             Option = "offset"
	OptOlderThan          Option = "older-than"
	OptPosition           Option = "position"
	OptRate               Option = "rate"
	OptRegion             Option = "region"
	OptResume             Option = "resume"
	OptServerSide         Option = "server-side"
	OptSetHeader          Option = "set-header"
	OptSince              Option = "since"
	OptTimeout            Option = "timeout"
	OptTo                 Option = "to"
	OptTransform          Option = "transform"
)

// Setting is an Option, optionally with the value a message proposes
// ("mode" with "rotate").
type Setting struct {
	Option Option
	Value  string
}

// With is o set to value.
func (o Option) With(value string) Setting { return Setting{Option: o, Value: value} }

// Renderer turns a setting into the words of one front end: the command
// line writes the flag, the TUI names a key or a context entry. It returns
// "" for a setting the front end does not have here (a flag the command
// lacks): an Alternative then takes its other words, and a bare Option or
// Setting is rendered plainly.
type Renderer func(Setting) string

// Alternative is words that name a setting where the front end has it and
// other words where it has not: "run it again with" the resume setting
// "to continue" for redrive, "run it again to continue" for purge, which
// has no such setting.
type Alternative struct {
	Setting Setting
	With    string // a format with one %s: the setting in the front end's words
	Without string
}

// Or is an Alternative naming o: with is a format with one %s for o.
func (o Option) Or(with, without string) Alternative {
	return Alternative{Setting: Setting{Option: o}, With: with, Without: without}
}

// String renders a plainly.
func (a Alternative) String() string { return a.render(PlainSetting) }

func (a Alternative) render(r Renderer) string {
	if w := r(a.Setting); w != "" {
		return fmt.Sprintf(a.With, w)
	}
	return a.Without
}

// renderSetting is s in r's words, or plainly where r has none.
func renderSetting(r Renderer, s Setting) string {
	if w := r(s); w != "" {
		return w
	}
	return PlainSetting(s)
}

// PlainSetting is the rendering without a front end, used by Error and
// String: the option's name and value in backticks ("`mode rotate`"), and a
// command as dlq's ("`dlq queues`").
func PlainSetting(s Setting) string {
	if s.Option == OptCommand {
		return "`dlq " + s.Value + "`"
	}
	if s.Value == "" {
		return "`" + string(s.Option) + "`"
	}
	return "`" + string(s.Option) + " " + s.Value + "`"
}

// Command names a dlq command that a message proposes: "list queues with"
// Cmd("queues"). Libraries never spell a command line, as they never spell
// a flag: Render asks the front end's Renderer for its words for the
// Setting of OptCommand with the verb as Value (the TUI may name a screen
// or a key), and where it has none writes the command line, its settings
// in the front end's words: "`dlq queues --broker file://x.jsonl`".
type Command struct {
	Verb string    // "queues", "topology apply", "peek orders.dlq"
	With []Setting // settings the command is given
}

// Cmd is the command verb with settings.
func Cmd(verb string, with ...Setting) Command { return Command{Verb: verb, With: with} }

// String renders c plainly: its command line.
func (c Command) String() string { return c.render(nil) }

// render words c with r; nil (no front end) writes its command line.
func (c Command) render(r Renderer) string {
	if r != nil && len(c.With) == 0 {
		if w := r(OptCommand.With(c.Verb)); w != "" {
			return w
		}
	}
	line := "dlq " + c.Verb
	for _, s := range c.With {
		w := ""
		if r != nil {
			w = strings.Trim(r(s), "`")
		}
		if w == "" {
			// The command line's own words for a setting.
			w = "--" + string(s.Option)
			if s.Value != "" {
				w += " " + s.Value
			}
		}
		line += " " + w
	}
	return "`" + line + "`"
}

// Hint is a message that names settings. It is an error too, so that a
// library can return it where it would return fmt.Errorf; Error renders
// the settings plainly, Render in the words of a front end.
type Hint struct {
	format string
	args   []any
	err    error // fmt.Errorf of format and args, for Unwrap
}

// Hintf formats a message as fmt.Errorf does (%w included); arguments
// that are an Option, a Setting or an Alternative are rendered late, by
// Render.
func Hintf(format string, args ...any) *Hint {
	return &Hint{format: format, args: args, err: fmt.Errorf(format, args...)}
}

// Render returns the message with every setting rendered by r (nil:
// PlainSetting), including those of wrapped errors among the arguments.
func (h *Hint) Render(r Renderer) string {
	words := r // nil: a Command writes its command line
	if r == nil {
		r = PlainSetting
	}
	args := make([]any, len(h.args))
	for i, a := range h.args {
		switch a := a.(type) {
		case Option:
			args[i] = renderSetting(r, Setting{Option: a})
		case Setting:
			args[i] = renderSetting(r, a)
		case Alternative:
			args[i] = a.render(r)
		case Command:
			args[i] = a.render(words)
		case error:
			args[i] = rendered{text: RenderError(a, r), err: a}
		default:
			args[i] = a
		}
	}
	return fmt.Errorf(h.format, args...).Error()
}

func (h *Hint) Error() string  { return h.Render(nil) }
func (h *Hint) String() string { return h.Render(nil) }

// Unwrap returns the errors the format wraps with %w.
func (h *Hint) Unwrap() []error {
	switch u := h.err.(type) {
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return []error{e}
		}
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	}
	return nil
}

// rendered stands in for a wrapped error while a Hint is rendered.
type rendered struct {
	text string
	err  error
}

func (r rendered) Error() string { return r.text }
func (r rendered) Unwrap() error { return r.err }

// renderable is an error whose settings a Renderer can word.
type renderable interface {
	error
	render(Renderer) string
}

func (h *Hint) render(r Renderer) string { return h.Render(r) }

// RenderError returns err's text with the settings named by every Hint and
// *Error in its chain rendered by r. Wrappers that quote an inner error
// verbatim (fmt.Errorf with %w, errors.Join) keep their own words; the
// inner error's words are replaced by its rendering.
func RenderError(err error, r Renderer) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if r == nil {
		return s
	}
	walkRenderable(err, func(h renderable) {
		if plain := h.Error(); plain != "" {
			s = strings.Replace(s, plain, h.render(r), 1)
		}
	})
	return s
}

// walkRenderable calls fn for the outermost renderable errors of err's
// tree; their rendering covers what they wrap.
func walkRenderable(err error, fn func(renderable)) {
	if h, ok := err.(renderable); ok {
		fn(h)
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			walkRenderable(e, fn)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil {
				walkRenderable(e, fn)
			}
		}
	}
}

// NamesOption reports whether err, or an error it wraps, is a message that
// names o (a Hint, or an *Error whose Hint does): a front end that would
// add "raise the timeout" leaves it out when the broker's words say so.
func NamesOption(err error, o Option) bool {
	found := false
	var walk func(error)
	walk = func(err error) {
		if err == nil || found {
			return
		}
		switch e := err.(type) {
		case *Hint:
			for _, a := range e.args {
				switch a := a.(type) {
				case Option:
					found = found || a == o
				case Setting:
					found = found || a.Option == o
				case Alternative:
					found = found || a.Setting.Option == o
				case Command:
					for _, s := range a.With {
						found = found || s.Option == o
					}
				case error:
					walk(a)
				}
			}
		case *Error:
			if e.Hint != nil {
				walk(e.Hint)
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return found
}
