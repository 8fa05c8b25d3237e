package cmd

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

// Output formats a command may accept through the global `--output`.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputCSV   = "csv"
)

// annotOutputs is the command annotation that lists the `--output` formats
// a command supports, the default first, comma-separated.
const annotOutputs = "dlq/outputs"

// addOutputFlags declares the `--output` formats c supports (the global
// flag's completion and the docs read them) and, when JSON is one of them,
// adds `--jq`. c's run must validate with outputFormat and the same list.
func addOutputFlags(c *cobra.Command, f *Factory, formats ...string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[annotOutputs] = strings.Join(formats, ",")
	if slices.Contains(formats, OutputJSON) {
		c.Flags().StringVar(&f.Options.JQ, "jq", "", "filter the JSON output with a jq expression, as gh does; strings print raw (implies --output json)")
	}
}

// outputFormats is what addOutputFlags declared for c (nil for none).
func outputFormats(c *cobra.Command) []string {
	if s := c.Annotations[annotOutputs]; s != "" {
		return strings.Split(s, ",")
	}
	return nil
}

// outputFormat validates `--output` against the formats a command supports
// (the first one is the default) and returns the one to use. `--jq` implies
// json (jsonl too, where a command has it: each line is filtered).
func outputFormat(f *Factory, supported ...string) (string, error) {
	o := f.Options.Output
	if f.Options.JQ != "" {
		switch {
		case !slices.Contains(supported, OutputJSON):
			return "", flagErrorf("`--jq` filters JSON output, which this command does not write")
		case o == "" || o == OutputJSON:
			return OutputJSON, nil
		case o == OutputJSONL && slices.Contains(supported, OutputJSONL):
			return OutputJSONL, nil
		default:
			return "", flagErrorf("`--jq` filters JSON output: drop `--output %s`, or use `--output json`", o)
		}
	}
	if o == "" {
		return supported[0], nil
	}
	if !slices.Contains(supported, o) {
		return "", flagErrorf("unknown `--output` %q for this command: use one of %s", o, strings.Join(supported, ", "))
	}
	return o, nil
}

// jqFilter holds back a command's standard output and, when the command is
// done, writes the `--jq` expression's results over the JSON it wrote:
// strings as they are, other values as JSON (indented on a terminal, one
// line each otherwise, as gh does).
type jqFilter struct {
	q   *inspect.Query
	out io.Writer
	tty bool
	buf bytes.Buffer
}

// startJQ compiles `--jq` and diverts f.IO.Out into the filter.
func (f *Factory) startJQ() error {
	if f.Options.JQ == "" || f.jq != nil {
		return nil
	}
	q, err := compileFlag("--jq", f.Options.JQ)
	if err != nil {
		return err
	}
	f.jq = &jqFilter{q: q, out: f.IO.Out, tty: f.IO.IsStdoutTTY()}
	f.IO.Out = &f.jq.buf
	return nil
}

// finishJQ filters what the command wrote. runErr is the command's error:
// after one, output that is not whole JSON (a listing cut short) is
// dropped without a second message.
func (f *Factory) finishJQ(ctx context.Context, runErr error) error {
	j := f.jq
	if j == nil {
		return nil
	}
	f.IO.Out, f.jq = j.out, nil
	dec := json.NewDecoder(&j.buf)
	dec.UseNumber()
	var vals []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if runErr != nil {
				return nil
			}
			return fmt.Errorf("`--jq`: the command's output is not JSON (%v): report this as a bug", err)
		}
		vals = append(vals, v)
	}
	for _, v := range vals {
		var werr error
		err := j.q.Each(ctx, v, func(r any) bool {
			werr = j.write(r)
			return werr == nil
		})
		if err != nil {
			return flagErrorf("`--jq`: %v", err)
		}
		if werr != nil {
			return werr
		}
	}
	return nil
}

func (j *jqFilter) write(v any) error {
	if s, ok := v.(string); ok {
		_, err := io.WriteString(j.out, s+"\n")
		return err
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return err
	}
	if j.tty {
		var ind bytes.Buffer
		if json.Indent(&ind, b, "", "  ") == nil {
			b = ind.Bytes()
		}
	}
	_, err = j.out.Write(append(b, '\n'))
	return err
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
	// Shrink lists the columns that give up width, in order, before a
	// line wider than Width is cut at its end: each down to its minimum,
	// its cells cut with "…".
	Shrink []Shrink
}

// Shrink is a column that may be narrower than its widest cell.
type Shrink struct {
	Column, Min int
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
	rows := t.visibleRows()
	measure(t.header)
	for _, r := range rows {
		measure(r)
	}
	t.shrink(widths)
	line := func(r []string, bold bool) string {
		var b strings.Builder
		for i, c := range r {
			if i < len(widths) && ansi.StringWidth(c) > widths[i] {
				c = ansi.Truncate(c, widths[i], "…")
			}
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
	for _, r := range rows {
		if _, err := fmt.Fprintln(w, line(r, false)); err != nil {
			return err
		}
	}
	return nil
}

// shrink narrows the Shrink columns, in order, until a line fits Width.
func (t *Table) shrink(widths []int) {
	if t.Width <= 0 {
		return
	}
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for _, s := range t.Shrink {
		if total <= t.Width {
			return
		}
		if s.Column >= len(widths) || widths[s.Column] <= s.Min {
			continue
		}
		cut := min(total-t.Width, widths[s.Column]-s.Min)
		widths[s.Column] -= cut
		total -= cut
	}
}

// visibleRows are the rows for a terminal: each cell through
// human.Visible, so that escape sequences in a queue name, a reason or a
// header show rather than act. RenderCSV keeps the exact values, as JSON
// does: CSV is data for files and spreadsheets.
func (t *Table) visibleRows() [][]string {
	out := make([][]string, len(t.rows))
	for i, r := range t.rows {
		out[i] = make([]string, len(r))
		for j, c := range r {
			out[i][j] = human.Visible(c)
		}
	}
	return out
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
