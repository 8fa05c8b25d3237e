package topology

import (
	"fmt"
	"io"
	"strings"

	"github.com/dlq-tools/dlq/internal/human"
)

const (
	ansiReset  = "\x1b[0m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
)

// Marker is the one-character sign of an action in a plan: + ~ ! -.
func (a Action) Marker() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Conflict:
		return "!"
	case Remove:
		return "-"
	}
	return " "
}

func (a Action) color() string {
	switch a {
	case Create:
		return ansiGreen
	case Update:
		return ansiYellow
	default:
		return ansiRed
	}
}

// WritePlan prints a plan as a readable diff, coloured when color is true.
func WritePlan(w io.Writer, p *Plan, color bool) error {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	var b strings.Builder
	// Names and values come from the spec and from the broker: vis shows
	// their escape sequences instead of letting them act on the terminal.
	vis := human.Visible
	head := fmt.Sprintf("%s %s", systemName(p), vis(p.Broker))
	if p.Vhost != "" {
		head += " vhost " + vis(p.Vhost)
	}
	b.WriteString(paint(ansiBold, head) + "\n")
	if p.Skipped != "" {
		fmt.Fprintf(&b, "  (the spec's %s section is not for this broker and was not planned)\n", p.Skipped)
	}
	for _, c := range p.Changes {
		line := fmt.Sprintf("  %s %s %s", c.Action.Marker(), c.Kind, vis(c.Name))
		b.WriteString(paint(c.Action.color(), line))
		if c.From != "" {
			b.WriteString(paint(ansiDim, "  ("+vis(c.From)+")"))
		}
		b.WriteByte('\n')
		for _, d := range c.Diffs {
			switch {
			case c.Action == Create:
				fmt.Fprintf(&b, "      %s: %s\n", vis(d.Field), vis(show(d.New)))
			case d.Old == nil:
				fmt.Fprintf(&b, "      %s: (none) → %s\n", vis(d.Field), vis(show(d.New)))
			case d.New == nil:
				fmt.Fprintf(&b, "      %s: %s → (none)\n", vis(d.Field), vis(show(d.Old)))
			default:
				fmt.Fprintf(&b, "      %s: %s → %s\n", vis(d.Field), vis(show(d.Old)), vis(show(d.New)))
			}
		}
		if c.Problem != "" {
			fmt.Fprintf(&b, "      %s %s\n", paint(ansiRed, "problem:"), vis(c.Problem))
		}
		if c.Fix != "" {
			fmt.Fprintf(&b, "      %s %s\n", paint(ansiBold, "fix:"), vis(c.Fix))
		}
		if c.Action == Conflict && c.Pos != nil && c.Pos.Line > 0 {
			fmt.Fprintf(&b, "      %s %s\n", paint(ansiDim, "declared at"), c.Pos)
		}
	}
	for _, wmsg := range p.Warnings {
		fmt.Fprintf(&b, "  %s %s\n", paint(ansiYellow, "warning:"), vis(wmsg))
	}
	s := p.Summary()
	if !p.HasChanges() {
		fmt.Fprintf(&b, "No changes: the broker matches the spec (%d objects checked).\n", s.Unchanged)
	} else {
		fmt.Fprintf(&b, "Plan: %d to create, %d to update, %d to delete, %d conflict(s); %d unchanged.\n",
			s.Create, s.Update, s.Delete, s.Conflict, s.Unchanged)
		if s.Conflict > 0 {
			b.WriteString(paint(ansiRed, "Apply will refuse to start until the conflicts are resolved.") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func systemName(p *Plan) string {
	if t, ok := systemOf(p.System); ok {
		return t.Title
	}
	return string(p.System)
}

func show(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case map[string]any, []any:
		return canonical(x)
	}
	return fmt.Sprint(v)
}
