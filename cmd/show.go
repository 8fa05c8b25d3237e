package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

type showOptions struct {
	f   *Factory
	ctx context.Context

	Ref  string
	ID   string
	Peek peekFlags

	format string
}

func newCmdShow(f *Factory, runF func(*showOptions) error) *cobra.Command {
	opts := &showOptions{f: f}
	cmd := &cobra.Command{
		Use:   "show QUEUE|file://ARCHIVE ID",
		Short: "Show one message in full: headers, death history, body",
		Long: `Find the message with ID (as ` + "`dlq peek`" + ` prints it) in QUEUE and print it
in full: its properties or attributes, every header, its death history and
its whole body (JSON pretty-printed). The queue is read under the peek
rules (` + "`dlq help peek-safety`" + `) until the message is found; nothing is removed.
--output json prints the document --filter sees.`,
		Example: `  dlq show orders.dlq 6400749a-e48d-448b-8e67-c8cab29a1f63
  dlq show file://evidence.jsonl.gz 7f3c2a91 -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref, opts.ID = args[0], strings.TrimSpace(args[1])
			opts.ctx = c.Context()
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if opts.ID == "" {
				return flagErrorf("empty ID: pass an ID that `dlq peek` prints")
			}
			if err := opts.Peek.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts.ctx, opts)
		},
	}
	opts.Peek.register(cmd)
	return cmd
}

func showRun(ctx context.Context, o *showOptions) error {
	f := o.f
	b, p, queue, err := openPeeker(ctx, f, o.Ref)
	if err != nil {
		return err
	}
	defer b.Close()
	now := f.Now()
	var found *broker.Message
	rep, err := inspect.Walk(ctx, p, queue, inspect.WalkOptions{Window: o.Peek.window(b, now), Peek: o.Peek.options(now, 0), Now: now}, func(m *broker.Message) error {
		id := m.ID
		if id == "" {
			id = broker.Fingerprint(m)
		}
		if id != o.ID {
			return nil
		}
		found = m.Clone()
		found.ID = id
		return broker.ErrStop
	})
	if rep.Changed != "" {
		f.IO.Statusf("%s", rep.Changed)
	}
	if err != nil {
		return suggestQueue(ctx, b, queue, err)
	}
	name := shownName(queue, o.Ref)
	if found == nil {
		return broker.Errorf(broker.ErrNotFound, "show", "no message with ID `%s` among %d read from `%s`: check the ID with `dlq peek %s`", o.ID, rep.Read, name, o.Ref)
	}
	doc := peekDocument(found, now)
	doc["source"] = inspect.NewQueueSource(b, queue).Of(ctx, found)
	if o.format == OutputJSON {
		b, err := marshalDoc(doc, true)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f.IO.Out, "%s\n", b)
		return err
	}
	return writeMessage(f.IO.Out, found, doc)
}

// writeMessage prints one message for people: summary lines, properties,
// headers, death history, body. Every value from the message is printed
// through human.Visible, so that escape sequences in it show rather than
// act on the terminal.
func writeMessage(w io.Writer, m *broker.Message, doc map[string]any) error {
	vis := func(v any) string { return human.Visible(fmt.Sprint(v)) }
	line := func(k string, v any) {
		if s := fmt.Sprint(v); s != "" && s != "<nil>" {
			fmt.Fprintf(w, "%-12s %s\n", k+":", human.Visible(s))
		}
	}
	line("id", m.ID)
	line("queue", doc["queue"])
	line("source", doc["source"])
	line("reason", doc["reason"])
	line("size", humanBytes(int64(m.Size())))
	line("deliveries", m.DeliveryCount)
	if m.AcquiredCount > 0 {
		line("acquired", m.AcquiredCount)
	}
	line("deaths", deaths(m))
	line("exchange", m.Exchange)
	line("routing key", m.RoutingKey)
	line("timestamp", doc["timestamp"])
	section := func(title string, v any) {
		mp, _ := v.(map[string]any)
		if len(mp) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		keys := make([]string, 0, len(mp))
		for k := range mp {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", vis(k), vis(compactJSON(mp[k])))
		}
	}
	writeFailure(w, doc["failure"])
	section("properties", doc["properties"])
	section("attributes", doc["attributes"])
	section("headers", doc["headers"])
	if d, ok := doc["death"].(map[string]any); ok {
		if hist, _ := d["history"].([]any); len(hist) > 0 {
			fmt.Fprintf(w, "\ndeath history (newest first):\n")
			for _, h := range hist {
				e, _ := h.(map[string]any)
				fmt.Fprintf(w, "  %s in %s", vis(e["reason"]), vis(e["queue"]))
				if x, ok := e["exchange"]; ok {
					fmt.Fprintf(w, " via %s", vis(x))
				}
				if ks, _ := e["routing_keys"].([]any); len(ks) > 0 {
					fmt.Fprintf(w, " %s", vis(compactJSON(ks)))
				}
				fmt.Fprintf(w, " ×%s", vis(e["count"]))
				if t, ok := e["time"]; ok {
					fmt.Fprintf(w, " at %s", vis(t))
				}
				fmt.Fprintln(w)
			}
		} else {
			fmt.Fprintf(w, "\ndeath: %s\n", vis(compactJSON(d)))
		}
	}
	if env, ok := doc["envelope"].(map[string]any); ok {
		kind := ""
		if f, ok := doc["failure"].(map[string]any); ok {
			kind = fmt.Sprint(f["envelope"])
		}
		section("envelope ("+kind+", the body below is the payload inside it)", env)
	}
	fmt.Fprintf(w, "\nbody (%v):\n", doc["body_kind"])
	switch {
	case doc["body_kind"] == "json":
		b, err := json.MarshalIndent(doc["body"], "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	case doc["body_base64"] != nil:
		fmt.Fprintf(w, "%v\n", doc["body_base64"])
	default:
		fmt.Fprintf(w, "%v\n", doc["body"])
	}
	return nil
}

// stackFold is how many lines of a failure's stack trace show prints; the
// rest are counted, and -o json has them all.
const stackFold = 6

// writeFailure prints a message's failure record (inspect.Failure), its
// stack trace folded to its first lines.
func writeFailure(w io.Writer, v any) {
	f, ok := v.(map[string]any)
	if !ok {
		return
	}
	fmt.Fprintf(w, "\nfailure (%s):\n", human.Visible(fmt.Sprint(f["framework"])))
	item := func(k string, v any) {
		if s := fmt.Sprint(v); s != "" && s != "<nil>" && s != "0" {
			fmt.Fprintf(w, "  %-15s %s\n", k+":", human.Visible(s))
		}
	}
	item("exception type", f["exception_type"])
	item("message", f["message"])
	if o, ok := f["origin"].(map[string]any); ok {
		d := (&inspect.FailureOrigin{Exchange: fmt.Sprint(o["exchange"]), RoutingKey: fmt.Sprint(o["routing_key"]), Queue: fmt.Sprint(o["queue"])}).Destination()
		item("origin", fmt.Sprintf("%s (from %s)", d, o["from"]))
	}
	item("attempts", f["attempts"])
	item("failed at", f["failed_at"])
	item("consumer", f["consumer"])
	item("message type", f["message_type"])
	item("id", f["id"])
	stack, _ := f["stack"].(string)
	if stack = strings.TrimRight(stack, "\n"); stack == "" {
		return
	}
	lines := strings.Split(stack, "\n")
	fmt.Fprintf(w, "  stack (folded to its causes and their first frames):\n")
	for _, l := range inspect.FoldStack(lines, stackFold/2) {
		fmt.Fprintf(w, "    %s\n", human.Visible(strings.ReplaceAll(strings.TrimRight(l, "\r"), "\t", "    ")))
	}
}

func compactJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
