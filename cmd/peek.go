package cmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

// OutputRaw writes message bodies only; OutputJSONL one JSON object a line.
const (
	OutputRaw   = "raw"
	OutputJSONL = "jsonl"
)

// peekFlags are the peek-safety flags that peek, stats and export share.
type peekFlags struct {
	Mode       string
	Offset     string
	Since      string
	Force      bool
	MaxUnacked int
	// GetUnreadable accepts the counted read of an unreadable message.
	GetUnreadable bool
	OlderThan     time.Duration
	NewerThan     time.Duration
}

func (p *peekFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&p.Mode, "mode", "", "how to read without removing: hold, rotate, stream, receive, requeue (default: the safest for the queue kind; see dlq help peek-safety)")
	fs.StringVar(&p.Offset, "offset", "", "where a stream (or archive) read starts: first, last, next, an offset number, or an RFC 3339 time")
	fs.StringVar(&p.Since, "since", "", "stream read from this long ago (30m, 2h, 7d) or this RFC 3339 time")
	fs.BoolVar(&p.Force, "force", false, "accept a peek that dlq refuses as unsafe (it never permits losing a message)")
	fs.IntVar(&p.MaxUnacked, "max-unacked", 0, "most deliveries held unacknowledged at once in hold mode (0: the adapter's default)")
	fs.BoolVar(&p.GetUnreadable, "get-unreadable", false, "on a RabbitMQ quorum queue with a delivery limit, below RabbitMQ 4.3, show a message dlq's AMQP client cannot decode through the management API, which there adds 1 to the x-delivery-count of the messages it reads (see dlq help peek-safety)")
	fs.DurationVar(&p.OlderThan, "older-than", 0, "only messages dead-lettered longer ago than this (e.g. 1h)")
	fs.DurationVar(&p.NewerThan, "newer-than", 0, "only messages dead-lettered within this (e.g. 30m)")
	_ = c.RegisterFlagCompletionFunc("mode", choices(peekModes...))
}

// window is the age window of --older-than and --newer-than. On a broker
// without time offsets to start at (an archive: Traits.SinceByAge),
// --since means --newer-than: it is taken out of the read options and
// into the window.
func (p *peekFlags) window(b broker.Broker, now time.Time) inspect.AgeWindow {
	w := inspect.AgeWindow{OlderThan: p.OlderThan, NewerThan: p.NewerThan}
	if p.Since != "" && broker.TraitsOf(b, broker.Queue{}).SinceByAge {
		if t, err := parseSince(p.Since, now); err == nil {
			if d := now.Sub(t); w.NewerThan == 0 || d < w.NewerThan {
				w.NewerThan = d
			}
			p.Since = ""
		}
	}
	return w
}

var peekModes = []string{"hold", "rotate", "stream", "receive", "requeue"}

// validate checks the flags; now resolves --since.
func (p *peekFlags) validate() error {
	if p.Mode != "" && p.Mode != "auto" && !contains(peekModes, p.Mode) {
		return flagErrorf("unknown `--mode` %q: use one of %s (or leave it out for the safest)", p.Mode, strings.Join(peekModes, ", "))
	}
	if p.Offset != "" && p.Since != "" {
		return flagErrorf("`--offset` and `--since` both say where to start: give only one")
	}
	if p.Since != "" {
		if _, err := parseSince(p.Since, time.Now()); err != nil {
			return err
		}
	}
	if p.MaxUnacked < 0 {
		return flagErrorf("`--max-unacked` must be positive")
	}
	if p.OlderThan < 0 || p.NewerThan < 0 {
		return flagErrorf("`--older-than` and `--newer-than` take a positive duration such as 30m or 24h")
	}
	if p.OlderThan > 0 && p.NewerThan > 0 && p.NewerThan <= p.OlderThan {
		return flagErrorf("`--newer-than %s` with `--older-than %s` selects nothing: the newer-than window must be longer", p.NewerThan, p.OlderThan)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// options builds the broker.PeekOptions of the flags.
func (p *peekFlags) options(now time.Time, limit int) broker.PeekOptions {
	o := broker.PeekOptions{Limit: limit, Offset: p.Offset, Force: p.Force, MaxUnacked: p.MaxUnacked, GetUnreadable: p.GetUnreadable}
	if p.Mode != "auto" {
		o.Mode = broker.PeekMode(p.Mode)
	}
	if p.Since != "" {
		if t, err := parseSince(p.Since, now); err == nil {
			o.Offset = t.UTC().Format(time.RFC3339)
		}
	}
	return o
}

type peekOptions struct {
	f   *Factory
	ctx context.Context

	Ref    string
	Limit  int
	Filter string
	Reason string
	Null   bool
	Peek   peekFlags
	Groups groupFlag

	format string
	filter *inspect.Query
	reason inspect.ReasonFunc
}

func newCmdPeek(f *Factory, runF func(*peekOptions) error) *cobra.Command {
	opts := &peekOptions{f: f}
	cmd := &cobra.Command{
		Use:   "peek QUEUE|file://ARCHIVE",
		Short: "Show the first messages of a queue without removing them",
		Long: `Show the first messages of a dead-letter queue (default 20) with their ID,
age, size, delivery or receive count, source queue, failure reason (as
the message carries it; ` + "`dlq stats`" + ` groups reasons by their shape, with ids,
numbers, times and quoted values masked) and a body preview. DELIVERIES is the broker's delivery or receive count
(x-delivery-count, ApproximateReceiveCount), followed by "(acq N)" when the
message carries x-acquired-count (RabbitMQ 4.3 quorum queues count every
delivery there, a requeued one included, and only failed deliveries in
x-delivery-count), DEATHS how often it was
dead-lettered (x-death counts). Nothing is removed; what a peek changes on each kind of queue
(redelivered flags, receive counts) is printed on stderr afterwards and
explained in ` + "`dlq help peek-safety`" + `. A peek that could push a message over a
delivery limit is refused (exit code 1) unless you pick a safe --mode.

The ID is the stable fingerprint that redrive --id, dlq show and the TUI
use; it is always printed in full.

Output: a table on a terminal (tab-separated without one); --output json
writes a JSON array of full messages (headers, properties or attributes,
death record, the failure record that a framework or AWS service left
(.failure: framework, exception_type, message, stack, origin, attempts,
failed_at, consumer, message_type, id), decoded body; the same document that
--filter sees), jsonl one
such object per line, raw the bodies only, as stored, one per line (with -0
separated by NUL bytes instead, for bodies that contain newlines). The
failure reason is the root cause where a framework wraps it (the innermost
Java "Caused by:", a .NET inner exception), after its exception type. When
the body is an envelope (MassTransit, SNS, a Lambda on-failure record,
NServiceBus on SQS), the preview, .body and filters see the payload inside
it, and .envelope holds the envelope's other fields.`,
		Example: `  dlq peek orders.dlq
  dlq peek orders.dlq --limit 5 --output json
  dlq peek orders.dlq --filter '.reason | test("timeout")'
  dlq peek orders.dlq --group 2b50f3125b     # a failure group from dlq stats
  dlq peek orders_error --filter '.failure.exception_type == "System.TimeoutException"'
  dlq peek orders.dlq --output raw -0 | xargs -0 -n1 echo
  dlq peek events.dlq --since 2h            # a stream, from two hours ago
  dlq peek file://dead-letters.jsonl.gz`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Ref = queue
		opts.ctx = c.Context()
		opts.format = format
		if opts.Limit < 0 {
			return flagErrorf("`--limit` must be 0 (all) or more")
		}
		if opts.Null && opts.format != OutputRaw {
			return flagErrorf("`-0` separates raw bodies: use it with `--output raw`")
		}
		if err := opts.Peek.validate(); err != nil {
			return err
		}
		var err error
		if opts.filter, err = compileFlag("--filter", opts.Filter); err != nil {
			return err
		}
		rq, err := compileFlag("--reason", opts.Reason)
		if err != nil {
			return err
		}
		opts.reason = inspect.ReasonFrom(rq)
		var byReason inspect.ReasonFunc
		if rq != nil {
			byReason = opts.reason
		}
		if err := opts.Groups.validate(byReason); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return peekRun(opts.ctx, opts)
	})
	fl := cmd.Flags()
	fl.IntVarP(&opts.Limit, "limit", "n", 20, "most messages to show (0: all)")
	fl.StringVarP(&opts.Filter, "filter", "q", "", "show only messages for which this jq expression is true, over each message's document ({id, reason, headers, properties, attributes, death, body, …}: see it with --output json)")
	fl.StringVar(&opts.Reason, "reason", "", "jq expression that computes the failure reason (default: framework headers, body fields, death reason)")
	opts.Groups.register(cmd, "show")
	fl.BoolVarP(&opts.Null, "null", "0", false, "with --output raw: end each body with a NUL byte instead of a newline")
	opts.Peek.register(cmd)
	addOutputFlags(cmd, f, OutputTable, OutputJSON, OutputJSONL, OutputRaw)
	return cmd
}

func peekRun(ctx context.Context, opts *peekOptions) error {
	f := opts.f
	b, p, queue, err := openPeeker(ctx, f, opts.Ref)
	if err != nil {
		return err
	}
	defer b.Close()

	now := f.Now()
	if _, err := opts.Groups.resolve(ctx, f, b, queue, queue, opts.Peek.options(now, 0), false); err != nil {
		return err
	}
	w := newPeekWriter(f, opts, now)
	w.source = inspect.NewQueueSource(b, queue)
	win := opts.Peek.window(b, now)
	walk := inspect.WalkOptions{Peek: opts.Peek.options(now, 0), Filter: opts.filter, Groups: opts.Groups.sel, Limit: opts.Limit, Window: win, Now: now}
	n := 0
	rep, err := inspect.Walk(ctx, p, queue, walk, func(m *broker.Message) error {
		n++
		return w.write(ctx, m)
	})
	if err == nil || w.n > 0 {
		// A failure before the first message leaves stdout to the error
		// (execute writes it as JSON with -o json), not an empty list.
		if ferr := w.finish(); err == nil {
			err = ferr
		}
	}
	if rep.Changed != "" {
		f.IO.Statusf("%s", rep.Changed)
	}
	if err != nil {
		return suggestQueue(ctx, b, queue, err)
	}
	warnMissingPaths(f, "--filter", opts.filter)
	if n == 0 {
		if opts.filter != nil {
			f.IO.Statusf("no message matched `--filter` among %d read from %s", rep.Read, queue)
		} else if !win.IsZero() {
			f.IO.Statusf("no message in the age window (`--older-than`, `--newer-than`, `--since`) among %d read from %s", rep.Read, queue)
		} else {
			f.IO.Statusf("%s has no messages", queue)
		}
	}
	return nil
}

// peekWriter streams messages in the chosen format as they arrive, so that
// the first page shows before a deep queue has been read.
type peekWriter struct {
	f      *Factory
	opts   *peekOptions
	now    time.Time
	out    io.Writer
	n      int
	tty    bool
	color  bool
	layout []int
	source *inspect.QueueSource // the source of messages that name none
}

func newPeekWriter(f *Factory, opts *peekOptions, now time.Time) *peekWriter {
	w := &peekWriter{f: f, opts: opts, now: now, out: f.IO.Out, tty: f.IO.IsStdoutTTY(), color: f.IO.ColorEnabled()}
	return w
}

var peekHeader = []string{"ID", "AGE", "SIZE", "DELIVERIES", "DEATHS", "SOURCE", "REASON", "BODY"}

// peekLayout divides the terminal width among the columns: the ID in full
// (as wide as the first message's: IDs are what `redrive --id` and `dlq
// show` take, so they are never cut), fixed widths for age, size and the
// counts, shares of the rest for source and reason, and what remains for
// the body preview.
func peekLayout(width, idWidth int) []int {
	const age, size, deliveries, deaths, gaps = 5, 6, 12, 6, 2 * 7
	id := max(idWidth, 2)
	rest := max(width-id-age-size-deliveries-deaths-gaps, 24)
	src := clamp(rest*20/100, 6, 24)
	reason := clamp(rest*35/100, 8, 48)
	body := max(rest-src-reason, 10)
	return []int{id, age, size, deliveries, deaths, src, reason, body}
}

// deliveriesCell is the delivery count, with x-acquired-count beside it
// when the message carries it: "0 (acq 9)".
func deliveriesCell(m *broker.Message) string {
	s := strconv.FormatInt(m.DeliveryCount, 10)
	if m.AcquiredCount > 0 {
		s += " (acq " + strconv.FormatInt(m.AcquiredCount, 10) + ")"
	}
	return s
}

// deaths is how often a message was dead-lettered (all death records).
func deaths(m *broker.Message) int64 {
	if m.Death == nil {
		return 0
	}
	return m.Death.Count
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

func (w *peekWriter) reason(ctx context.Context, m *broker.Message) string {
	r, err := w.opts.reason(ctx, m)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return r
}

func (w *peekWriter) write(ctx context.Context, m *broker.Message) error {
	defer func() { w.n++ }()
	switch w.opts.format {
	case OutputRaw:
		sep := byte('\n')
		if w.opts.Null {
			sep = 0
		}
		if _, err := w.out.Write(m.Body); err != nil {
			return err
		}
		_, err := w.out.Write([]byte{sep})
		return err
	case OutputJSON, OutputJSONL:
		doc := peekDocument(m, w.now)
		doc["source"] = w.source.Of(ctx, m)
		if w.opts.reason != nil && w.opts.Reason != "" {
			r := w.reason(ctx, m)
			shape := peekShape(r)
			doc["reason"], doc["shape"], doc["group"] = r, shape, inspect.GroupID(shape)
		}
		b, err := marshalDoc(doc, w.opts.format == OutputJSON)
		if err != nil {
			return err
		}
		if w.opts.format == OutputJSONL {
			_, err = fmt.Fprintf(w.out, "%s\n", b)
			return err
		}
		pre := ",\n  "
		if w.n == 0 {
			pre = "[\n  "
		}
		_, err = fmt.Fprintf(w.out, "%s%s", pre, b)
		return err
	}
	cells := []string{
		m.ID,
		humanAge(m.Age(w.now)),
		humanBytes(int64(m.Size())),
		deliveriesCell(m),
		strconv.FormatInt(deaths(m), 10),
		orDash(w.source.Of(ctx, m)),
		orDash(w.reason(ctx, m)),
	}
	for i := range cells {
		cells[i] = human.Visible(cells[i])
	}
	d := inspect.DecodePayload(m)
	mark := ""
	if m.Unreadable != "" {
		// Shown from another read than the other rows: say so first.
		mark = "[UNREADABLE at position " + human.Visible(m.Position) + "] "
	}
	if !w.tty {
		cells = append(cells, mark+d.Preview(200))
		if w.n == 0 {
			fmt.Fprintln(w.out, strings.Join(peekHeader, "\t"))
		}
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "\t", " ")
		}
		_, err := fmt.Fprintln(w.out, strings.Join(cells, "\t"))
		return err
	}
	if w.layout == nil {
		w.layout = peekLayout(w.f.IO.Width(), utf8.RuneCountInString(m.ID))
	}
	cells = append(cells, mark+d.Preview(max(w.layout[len(w.layout)-1]-len(mark), 10)))
	if w.n == 0 {
		h := fitRow(peekHeader, w.layout)
		if w.color {
			h = "\x1b[1m" + h + "\x1b[0m"
		}
		fmt.Fprintln(w.out, h)
	}
	_, err := fmt.Fprintln(w.out, fitRow(cells, w.layout))
	return err
}

func (w *peekWriter) finish() error {
	if w.opts.format == OutputJSON {
		if w.n == 0 {
			_, err := fmt.Fprintln(w.out, "[]")
			return err
		}
		_, err := fmt.Fprintln(w.out, "\n]")
		return err
	}
	return nil
}

// peekDocument is the JSON form of a message in `peek --output json`: the
// filter document plus where it came from and how its body was decoded.
func peekDocument(m *broker.Message, now time.Time) map[string]any {
	doc := inspect.DocumentAt(m, now)
	doc["source"] = inspect.Source(m)
	if m.Position != "" {
		doc["position"] = m.Position
	}
	if m.Unreadable != "" {
		doc["unreadable"] = m.Unreadable
	}
	d := inspect.Decode(m)
	doc["body_kind"] = string(d.Kind)
	if d.Encoding != "" {
		doc["body_inflated_from"] = d.Encoding
	}
	return doc
}

// fitRow pads or truncates each cell to its width, two spaces apart.
func fitRow(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		wd := widths[i]
		if i == 0 {
			// The ID is never cut: a longer one pushes its row right.
			c = truncate(c, max(wd, utf8.RuneCountInString(c)))
			wd = max(wd, utf8.RuneCountInString(c))
		} else {
			c = truncate(c, wd)
		}
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", wd-utf8.RuneCountInString(c)+2))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// peekShape is the shape of a reason, as stats groups it.
func peekShape(r string) string {
	if r == "" {
		r = inspect.Unknown
	}
	return inspect.ShapeOf(r)
}
