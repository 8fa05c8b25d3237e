package cmd

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Output formats a command may accept through the global `--output`.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputCSV   = "csv"
)

// outputFormat validates `--output` against the formats a command supports
// (the first one is the default) and returns the one to use.
func outputFormat(f *Factory, supported ...string) (string, error) {
	o := f.Options.Output
	if o == "" {
		return supported[0], nil
	}
	if !slices.Contains(supported, o) {
		return "", flagErrorf("unknown `--output` %q for this command: use one of %s", o, strings.Join(supported, ", "))
	}
	return o, nil
}

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Table collects rows and prints them aligned (on a TTY, with a bold header)
// or as CSV.
type Table struct {
	header []string
	rows   [][]string
	// Width, when positive, is the terminal width lines are cut to.
	Width int
}

// NewTable starts a table with the given column names.
func NewTable(header ...string) *Table { return &Table{header: header} }

// Row adds a row; values are formatted with %v.
func (t *Table) Row(cells ...any) {
	r := make([]string, len(cells))
	for i, c := range cells {
		r[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, r)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table aligned, two spaces between columns; bold
// headers when color is on. Widths are measured without escape codes (a
// styled cell is as wide as its text). With a Width, each line is cut to
// it, so that a long last column (examples, errors) never wraps.
func (t *Table) Render(w io.Writer, color bool) error {
	widths := make([]int, len(t.header))
	measure := func(r []string) {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	measure(t.header)
	for _, r := range t.rows {
		measure(r)
	}
	line := func(r []string, bold bool) string {
		var b strings.Builder
		for i, c := range r {
			if bold {
				c = "\x1b[1m" + c + "\x1b[0m"
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2))
			}
		}
		out := strings.TrimRight(b.String(), " ")
		if t.Width > 0 && ansi.StringWidth(out) > t.Width {
			out = ansi.Truncate(out, t.Width, "…")
		}
		return out
	}
	if _, err := fmt.Fprintln(w, line(t.header, color)); err != nil {
		return err
	}
	for _, r := range t.rows {
		if _, err := fmt.Fprintln(w, line(r, false)); err != nil {
			return err
		}
	}
	return nil
}

// terminalWidth is the width tables are cut to: the terminal's, or none
// when stdout is not a terminal (a file or pipe gets whole lines).
func terminalWidth(f *Factory) int {
	if !f.IO.IsStdoutTTY() {
		return 0
	}
	return f.IO.Width()
}

// RenderCSV writes the table as CSV with a header line.
func (t *Table) RenderCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(t.header))
	for i, h := range t.header {
		header[i] = strings.ToLower(strings.ReplaceAll(h, " ", "_"))
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(t.rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}
