package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// splitWords splits a shell command line into words (single and double
// quotes, backslash escapes) and stops at a pipe, a redirection or a
// comment: what an Example line gives dlq.
func splitWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote, escaped := false, rune(0), false
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			if r == '\\' && quote == '"' {
				escaped = true
				continue
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\':
			escaped, in = true, true
		case r == ' ' || r == '\t':
			flush()
		case (r == '|' || r == '>' || r == '#') && !in:
			flush()
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return words
}

// demoQueues are the queues of the embedded demo archive.
var demoQueues = map[string]bool{"orders.dlq": true, "payments.dlq": true, "billing-dlq": true, "events-dlq.fifo": true}

// Every Example line of every command parses (its flags exist and take the
// values shown), and those that only read a queue of the demo archive run
// against it (`--broker demo:`) and succeed.
func TestExamplesRunAsWritten(t *testing.T) {
	f := testFactory(t, "")
	root := NewRootCmd(f)
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	ran := 0
	for _, c := range cmds {
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "dlq ") {
				continue
			}
			words := splitWords(line)[1:]
			t.Run(line, func(t *testing.T) {
				fresh := NewRootCmd(f)
				target, rest, err := fresh.Find(words)
				if err != nil {
					t.Fatalf("no such command: %v", err)
				}
				if target.CommandPath() != c.CommandPath() && c.Runnable() {
					t.Fatalf("the example of `%s` runs `%s`", c.CommandPath(), target.CommandPath())
				}
				if err := target.ParseFlags(rest); err != nil {
					t.Fatalf("flags: %v", err)
				}
				if o, _ := target.Flags().GetString("output"); o != "" && !map[string]bool{"table": true, "json": true, "jsonl": true, "csv": true, "raw": true, "prom": true, "yaml": true}[o] {
					t.Fatalf("`--output %s` is no output format", o)
				}
				if !runsOnDemo(target, words) {
					return
				}
				t.Chdir(t.TempDir())
				_, stderr, code := runDLQ(t, append([]string{"--broker", "demo:"}, words...)...)
				if code != ExitOK {
					t.Fatalf("on the demo archive: exit %d\n%s", code, stderr)
				}
				ran++
			})
		}
	}
	t.Logf("%d examples ran on the demo archive", ran)
	if ran < 8 {
		t.Errorf("only %d examples ran on the demo archive", ran)
	}
}

// runsOnDemo reports whether an example only reads, names no broker of its
// own, and reads a queue the demo archive has.
func runsOnDemo(c *cobra.Command, words []string) bool {
	switch c.Name() {
	case "peek", "stats", "export", "show", "queues":
	default:
		return false
	}
	for _, w := range words {
		if strings.Contains(w, "://") && !strings.HasPrefix(w, "file://") || strings.HasPrefix(w, "arn:") || w == "--broker" || w == "--context" || w == "--offset" || w == "--since" {
			return false
		}
		if strings.HasPrefix(w, "file://") && c.Name() != "export" {
			return false // an archive of the reader's own
		}
	}
	if c.Name() == "queues" {
		return true
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") {
			return demoQueues[w]
		}
	}
	return false
}
