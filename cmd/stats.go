package cmd

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
)

// One piece, though long: `dlq stats` and its three renderings (table,
// CSV, Prometheus) of one result, with the progress it shows while it reads.

// OutputProm is Prometheus text exposition (node_exporter textfile format).
const OutputProm = "prom"

type statsOptions struct {
	f   *Factory
	ctx context.Context

	Ref       string
	GroupBy   string
	Filter    string
	Reason    string
	DupKey    string
	NoDups    bool
	Examples  int
	MaxGroups int
	Limit     int
	Peek      peekFlags
	Groups    groupFlag

	format  string
	groupBy []inspect.Grouping
	filter  *inspect.Query
	reason  *inspect.Query
	dupKey  *inspect.Query
}

func newCmdStats(f *Factory, runF func(*statsOptions) error) *cobra.Command {
	opts := &statsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "stats QUEUE|file://ARCHIVE",
		Short: "Count dead letters by failure group, source, header, body field or age",
		Long: `Read every message of a queue or archive once and count them by group:
count, share, oldest and newest, how many died in the last hour, a trend
across the time the queue spans, total body bytes and example IDs per group,
plus messages whose duplicate key (default the message ID) was seen before.

--group-by takes a comma list of: ` + inspect.GroupKinds + `.
age buckets are <1m, <1h, <1d, <7d, older; day and hour are in UTC. Ages and
times are those of the first death, else of publication. redrives counts
messages by how often dlq redrove them (their x-dlq-redrive record).

reason (the default) groups failure reasons by shape: numbers, UUIDs, hex
and other ids, times and durations, IP and email addresses, ids in URLs,
quoted values and key=value values become placeholders (<num>, <uuid>,
<hex>, <id>, <time>, <ip>, <email>, <str>), so "Customer cus_9944 not found"
and "Customer cus_1207 not found" are one group, "Customer <id> not found".
Shapes that differ only in a word after their first two merge, with <*> in
its place ("Unknown event type <*>"). Each group has an ID, the same on
every run and machine, that --group selects here and in peek, export,
redrive and discard, and that jq filters see as .group (with .shape). The
table shows, for each placeholder, its most frequent values (the hot keys:
which SKU, which customer). reason-text groups by the exact text instead.
--group reads the queue once more, first, to find the groups' messages.

How it reads: like peek, never removing anything (see ` + "`dlq help peek-safety`" + `).
An archive is read from start to end. A RabbitMQ stream is read from its
first offset (or --offset/--since). A classic or quorum queue is read whole
in the adapter's full-read mode: rotation, where each message is republished
to the back of the same queue with publisher confirms and only then acked,
so at most a window of messages is ever unacknowledged and no delivery count
rises; after a full rotation the queue holds the same messages in the same
order. SQS queues are received and made visible again at once (receive
counts rise by one; refused when the queue's own redrive policy could move a
message). An SQS FIFO queue shows only the head of each message group (and
nothing of a group with a message in flight): the rest are counted nowhere
but in out_of_reach. --limit N reads only the first N.

Memory stays flat however many messages are read: counters per group (at most
--max-groups; later groups are counted as "(other)"), --examples IDs per
group, and an 8 MiB Bloom filter for duplicates. Duplicate counts never miss
a real duplicate; a unique key may be counted as a duplicate with the
probability printed (about 1 in 2.5 million at 1,000,000 keys, 1 in 450 at
5,000,000).

JSON has read (messages read), total (those that matched --filter; both
count only what was read) and out_of_reach (messages the queue held that
the read could not see, 0 when it saw them all); per group, id, template, last_hour, trend (counts per equal span
from trend_start, trend_step_seconds apart) and hot ({placeholder, position,
values: [{value, count}]}); CSV has the trend as one column of counts
separated by semicolons.

--output prom writes Prometheus text exposition for node_exporter's textfile
collector: dlq_dead_letters{queue,<groups>} (with the reason grouping, a
group label with the ID and the template cut to 100 characters as reason),
dlq_dead_letters_last_hour, dlq_dead_letter_bytes,
dlq_dead_letter_oldest_age_seconds, dlq_dead_letter_newest_age_seconds per
group, and dlq_dead_letter_messages, dlq_dead_letter_messages_out_of_reach,
dlq_dead_letter_duplicates and dlq_dead_letter_stats_timestamp_seconds per
queue. Its default --group-by is
reason,source. Write it atomically: dlq stats … -o prom > f.tmp && mv f.tmp f.prom`,
		Example: `  dlq stats orders.dlq
  dlq stats orders.dlq --group-by reason,source --output json
  dlq stats orders.dlq --group 2b50f3125b --group-by source,hour
  dlq stats orders.dlq --group-by redrives
  dlq stats orders.dlq --group-by framework,failure.type
  dlq stats orders.dlq --group-by header:x-tenant,age
  dlq stats orders.dlq --group-by 'body:.customer.tier' --filter '.body.amount > 100'
  dlq stats orders.dlq --reason '.headers["x-error-code"]' --dup-key '.body.order_id'
  dlq stats file://dump.jsonl.gz --group-by day --output csv
  dlq stats orders.dlq -o prom > /var/lib/node_exporter/dlq.prom.tmp && mv /var/lib/node_exporter/dlq.prom.tmp /var/lib/node_exporter/dlq.prom`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Ref = queue
		opts.ctx = c.Context()
		opts.format = format
		spec := opts.GroupBy
		if !c.Flags().Changed("group-by") && opts.format == OutputProm {
			spec = "reason,source"
		}
		var err error
		if opts.groupBy, err = inspect.ParseGroupBy(spec); err != nil {
			return flagErrorf("`--group-by`: %v", err)
		}
		if len(opts.groupBy) > 8 {
			return flagErrorf("`--group-by`: at most 8 groupings")
		}
		if opts.Limit < 0 || opts.MaxGroups < 1 {
			return flagErrorf("`--limit` must be 0 (all) or more, `--max-groups` at least 1")
		}
		if opts.Examples < 1 {
			return flagErrorf("`--examples %d`: give 1 or more, or leave the flag out for 3", opts.Examples)
		}
		if opts.NoDups && c.Flags().Changed("dup-key") {
			return flagErrorf("`--no-dups` and `--dup-key` contradict each other: give one")
		}
		if err := opts.Peek.validate(); err != nil {
			return err
		}
		if opts.filter, err = compileFlag("--filter", opts.Filter); err != nil {
			return err
		}
		if opts.reason, err = compileFlag("--reason", opts.Reason); err != nil {
			return err
		}
		if opts.dupKey, err = compileFlag("--dup-key", opts.DupKey); err != nil {
			return err
		}
		var byReason inspect.ReasonFunc
		if opts.reason != nil {
			byReason = inspect.ReasonFrom(opts.reason)
		}
		if err := opts.Groups.validate(byReason); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return statsRun(opts.ctx, opts)
	})
	fl := cmd.Flags()
	fl.StringVarP(&opts.GroupBy, "group-by", "g", "reason", "comma list of: "+inspect.GroupKinds)
	_ = cmd.RegisterFlagCompletionFunc("group-by", completeGroupBy)
	fl.StringVarP(&opts.Filter, "filter", "q", "", "count only messages for which this jq expression is true")
	fl.StringVar(&opts.Reason, "reason", "", "jq expression that computes the failure reason (default: framework headers, body fields, death reason)")
	fl.StringVar(&opts.DupKey, "dup-key", "", "jq expression of the idempotency key for duplicates (default: the message ID)")
	fl.BoolVar(&opts.NoDups, "no-dups", false, "do not look for duplicates")
	fl.IntVar(&opts.Examples, "examples", 3, "example message IDs kept per group")
	fl.IntVar(&opts.MaxGroups, "max-groups", 10000, "most distinct groups; further ones are counted as (other)")
	fl.IntVarP(&opts.Limit, "limit", "n", 0, "read only the first N messages (0: all)")
	opts.Groups.register(cmd, "count")
	opts.Peek.register(cmd)
	addOutputFlags(cmd, f, OutputTable, OutputJSON, OutputCSV, OutputProm)
	return cmd
}

func statsRun(ctx context.Context, opts *statsOptions) error {
	f := opts.f
	defer collectOften()()
	b, p, queue, err := openPeeker(ctx, f, opts.Ref)
	if err != nil {
		return err
	}
	defer b.Close()
	now := f.Now()
	if _, err := opts.Groups.resolve(ctx, f, b, queue, queue, opts.Peek.options(now, opts.Limit), false); err != nil {
		return err
	}
	so := inspect.StatsOptions{
		Window:       opts.Peek.window(b, now),
		GroupBy:      opts.groupBy,
		Filter:       opts.filter,
		Groups:       opts.Groups.sel,
		DupKey:       opts.dupKey,
		NoDuplicates: opts.NoDups,
		Examples:     opts.Examples,
		MaxGroups:    opts.MaxGroups,
		Now:          now,
		Source:       inspect.NewQueueSource(b, queue),
	}
	if opts.reason != nil {
		so.Reason = inspect.ReasonFrom(opts.reason)
	}
	s := inspect.NewStats(queue, so)
	progress := newProgress(f, "read")
	rep, err := s.Read(ctx, p, queue, fullRead(ctx, b, queue, opts.Peek.options(now, opts.Limit)), progress.tick)
	progress.done()
	if rep.Changed != "" {
		f.IO.Statusf("%s", rep.Changed)
	}
	if err != nil {
		return suggestQueue(ctx, b, queue, err)
	}
	res := s.Result()
	switch opts.format {
	case OutputJSON:
		return writeJSON(f.IO.Out, res)
	case OutputCSV:
		return statsTable(res, false).RenderCSV(f.IO.Out)
	case OutputProm:
		return writeProm(f.IO.Out, res)
	}
	warnMissingPaths(f, "--filter", opts.filter)
	if res.Total == 0 {
		if opts.filter != nil {
			f.IO.Statusf("no message matched `--filter` among %d read from %s", res.Read, queue)
		} else if res.OutOfReach > 0 {
			f.IO.Statusf("no message of %s could be read; %d out of reach", queue, res.OutOfReach)
		} else {
			f.IO.Statusf("%s has no messages", queue)
		}
		return nil
	}
	t := statsTable(res, true)
	t.Width = terminalWidth(f)
	t.Shrink = statsShrink(res)
	if err := t.Render(f.IO.Out, f.IO.ColorEnabled()); err != nil {
		return err
	}
	f.IO.Statusf("%s", statsSummary(res))
	return nil
}

// statsSummary is the one-line total under the table.
func statsSummary(r inspect.StatsResult) string {
	s := fmt.Sprintf("%d messages, %s", r.Total, humanBytes(r.Bytes))
	if r.Total != r.Read {
		s += fmt.Sprintf(" (of %d read)", r.Read)
	}
	if r.OutOfReach > 0 {
		s += fmt.Sprintf(", %d more out of reach (not read, not counted)", r.OutOfReach)
	}
	if r.Oldest != nil {
		s += fmt.Sprintf(", oldest %s ago, %d in the last hour", humanAge(r.Now.Sub(*r.Oldest)), r.LastHour)
	}
	if r.TrendStart != nil && r.TrendStepSeconds > 0 {
		step := human.Seconds(r.TrendStepSeconds)
		s += fmt.Sprintf("; TREND spans %s, %s a bar", humanAge(human.Times(step, inspect.TrendBuckets)), humanAge(step))
	}
	if d := r.Duplicates; d != nil {
		s += fmt.Sprintf(", %d duplicates by %s", d.Messages, d.Key)
		if d.Messages > 0 && len(d.Examples) > 0 {
			var ex []string
			for _, e := range d.Examples[:min(3, len(d.Examples))] {
				ex = append(ex, fmt.Sprintf("%s×%d", human.Visible(e.Key), e.Count))
			}
			s += " (" + strings.Join(ex, ", ") + ")"
		}
		if d.FalsePositiveRate > 1e-6 {
			s += fmt.Sprintf(" ±%.2g%%", d.FalsePositiveRate*100)
		}
	}
	if r.Folded > 0 {
		s += fmt.Sprintf("; %d messages beyond `--max-groups` counted as (other)", r.Folded)
	}
	if r.ReasonErrors > 0 {
		s += fmt.Sprintf("; `--reason` failed on %d messages", r.ReasonErrors)
	}
	return s
}

// statsShrink is how a stats table fits a narrow terminal: REASON gives
// up width first, then the other group-by columns, so that the counts,
// shares and ages stay on the screen; HOT and EXAMPLES, last, are cut.
func statsShrink(r inspect.StatsResult) []Shrink {
	first := 0
	if slices.Contains(r.GroupBy, "reason") {
		first = 1 // the ID column
	}
	var reason, others []Shrink
	for i, g := range r.GroupBy {
		if g == "reason" {
			reason = append(reason, Shrink{Column: first + i, Min: 24})
		} else {
			others = append(others, Shrink{Column: first + i, Min: max(len(g), 10)})
		}
	}
	return append(reason, others...)
}

func statsTable(r inspect.StatsResult, human bool) *Table {
	shapes := slices.Contains(r.GroupBy, "reason")
	var header []string
	if shapes {
		header = append(header, "ID")
	}
	for _, g := range r.GroupBy {
		header = append(header, strings.ToUpper(g))
	}
	header = append(header, "COUNT", "SHARE", "LAST 1H", "TREND", "OLDEST", "NEWEST", "BYTES")
	if shapes {
		header = append(header, "HOT")
	}
	header = append(header, "EXAMPLES")
	t := NewTable(header...)
	for _, g := range r.Groups {
		var cells []any
		if shapes {
			cells = append(cells, orDash(g.ID))
		}
		for _, v := range g.Values {
			if human {
				v = truncate(v, 60)
			}
			cells = append(cells, v)
		}
		share := strconv.FormatFloat(g.Share, 'f', 6, 64)
		oldest, newest, bytes := "", "", strconv.FormatInt(g.Bytes, 10)
		trend := make([]string, len(g.Trend))
		for i, c := range g.Trend {
			trend[i] = strconv.FormatInt(c, 10)
		}
		spark := strings.Join(trend, ";")
		if human {
			share = fmt.Sprintf("%.1f%%", g.Share*100)
			bytes = humanBytes(g.Bytes)
			oldest, newest = "-", "-"
			if g.Oldest != nil {
				oldest, newest = humanAge(r.Now.Sub(*g.Oldest)), humanAge(r.Now.Sub(*g.Newest))
			}
			spark = inspect.Sparkline(g.Trend)
		} else if g.Oldest != nil {
			oldest, newest = g.Oldest.Format(time.RFC3339), g.Newest.Format(time.RFC3339)
		}
		sep := " "
		if !human {
			sep = ";"
		}
		cells = append(cells, g.Count, share, g.LastHour, spark, oldest, newest, bytes)
		if shapes {
			per := 5
			if human {
				per = 2
			}
			cells = append(cells, inspect.HotText(g.Hot, per))
		}
		cells = append(cells, strings.Join(g.Examples, sep))
		t.Row(cells...)
	}
	return t
}

var promLabelInvalid = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_]+`) })

// promLabel turns a grouping name into a Prometheus label name:
// routing-key → routing_key, header:x-tenant → header_x_tenant.
func promLabel(g string) string {
	l := strings.Trim(promLabelInvalid().ReplaceAllString(g, "_"), "_")
	if l == "" || (l[0] >= '0' && l[0] <= '9') {
		l = "g_" + l
	}
	if l == "queue" || strings.HasPrefix(l, "__") {
		l = "group_" + l
	}
	return l
}

func promEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func promFloat(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// promTemplateLen bounds a reason template in a label, in runes.
const promTemplateLen = 100

// writeProm writes r as Prometheus text exposition format 0.0.4.
func writeProm(w io.Writer, r inspect.StatsResult) error {
	labels := make([]string, len(r.GroupBy))
	seen := map[string]int{}
	for i, g := range r.GroupBy {
		l := promLabel(g)
		if n := seen[l]; n > 0 {
			l = fmt.Sprintf("%s_%d", l, n+1)
		}
		seen[promLabel(g)]++
		labels[i] = l
	}
	q := promEscape(r.Queue)
	sel := func(g inspect.GroupStats) string {
		var b strings.Builder
		b.WriteString(`{queue="` + q + `"`)
		if g.ID != "" {
			b.WriteString(`,group="` + g.ID + `"`)
		}
		for i, v := range g.Values {
			if r.GroupBy[i] == "reason" {
				v = truncate(v, promTemplateLen)
			}
			b.WriteString("," + labels[i] + `="` + promEscape(v) + `"`)
		}
		b.WriteString("}")
		return b.String()
	}
	// Groups in a stable order, so that successive scrapes diff cleanly.
	groups := append([]inspect.GroupStats(nil), r.Groups...)
	sort.SliceStable(groups, func(i, j int) bool {
		return strings.Join(groups[i].Values, "\x00") < strings.Join(groups[j].Values, "\x00")
	})
	var b strings.Builder
	metric := func(name, help string, each func(g inspect.GroupStats) (float64, bool)) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for _, g := range groups {
			if v, ok := each(g); ok {
				fmt.Fprintf(&b, "%s%s %s\n", name, sel(g), promFloat(v))
			}
		}
	}
	metric("dlq_dead_letters", "Dead-lettered messages in the queue, by group.", func(g inspect.GroupStats) (float64, bool) { return float64(g.Count), true })
	metric("dlq_dead_letters_last_hour", "Dead-lettered messages of the group that died in the last hour.", func(g inspect.GroupStats) (float64, bool) { return float64(g.LastHour), true })
	metric("dlq_dead_letter_bytes", "Body bytes of the dead-lettered messages, by group.", func(g inspect.GroupStats) (float64, bool) { return float64(g.Bytes), true })
	metric("dlq_dead_letter_oldest_age_seconds", "Age of the oldest dead letter of the group (since its first death, else publication).", func(g inspect.GroupStats) (float64, bool) {
		if g.OldestAgeSeconds == nil {
			return 0, false
		}
		return *g.OldestAgeSeconds, true
	})
	metric("dlq_dead_letter_newest_age_seconds", "Age of the newest dead letter of the group.", func(g inspect.GroupStats) (float64, bool) {
		if g.NewestAgeSeconds == nil {
			return 0, false
		}
		return *g.NewestAgeSeconds, true
	})
	single := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{queue=\"%s\"} %s\n", name, help, name, name, q, promFloat(v))
	}
	single("dlq_dead_letter_messages", "Dead-lettered messages counted in the queue.", float64(r.Total))
	single("dlq_dead_letter_messages_out_of_reach", "Messages the queue held that the read could not see (an SQS FIFO queue shows only the head of each message group); not in dlq_dead_letter_messages.", float64(r.OutOfReach))
	if r.Duplicates != nil {
		single("dlq_dead_letter_duplicates", "Messages whose duplicate key was seen before in the queue.", float64(r.Duplicates.Messages))
	}
	single("dlq_dead_letter_stats_timestamp_seconds", "When these statistics were computed, as a Unix time.", float64(r.Now.UnixMilli())/1000)
	_, err := io.WriteString(w, b.String())
	return err
}

// progress prints "read N messages…" on a terminal's stderr while a long
// read runs, at most a few times a second.
type progress struct {
	f     *Factory
	verb  string
	n     int64
	last  time.Time
	shown bool
}

func newProgress(f *Factory, verb string) *progress {
	return &progress{f: f, verb: verb, last: time.Now()}
}

func (p *progress) tick() {
	p.n++
	if p.n%1024 == 0 {
		p.show()
	}
}

// set records a count reached in steps (a confirmed batch).
func (p *progress) set(n int64) {
	p.n = n
	p.show()
}

func (p *progress) show() {
	if !p.f.IO.IsStderrTTY() {
		return
	}
	if now := time.Now(); now.Sub(p.last) > 250*time.Millisecond {
		p.last = now
		p.shown = true
		fmt.Fprintf(p.f.IO.ErrOut, "\r%s %d messages…", p.verb, p.n)
	}
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.f.IO.ErrOut, "\r\x1b[K")
	}
}
