package cmd

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
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

// Render writes the table aligned with tabs; bold headers when color is on.
func (t *Table) Render(w io.Writer, color bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	h := strings.Join(t.header, "\t")
	if color {
		h = "\x1b[1m" + strings.Join(t.header, "\t") + "\x1b[0m"
	}
	fmt.Fprintln(tw, h)
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
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
