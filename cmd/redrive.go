package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/redrive"
)

// selectFlags are the message selection flags redrive and discard share.
type selectFlags struct {
	Filter    string
	IDs       []string
	Exclude   []string
	Limit     int64
	OlderThan time.Duration
	NewerThan time.Duration
	Groups    groupFlag

	filter *inspect.Query
}

func (s *selectFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&s.Filter, "filter", "", "jq expression selecting messages (same document as dlq peek --filter)")
	fl.StringSliceVar(&s.IDs, "id", nil, "message IDs (fingerprints shown by peek and the TUI); repeat or separate with commas")
	fl.StringSliceVar(&s.Exclude, "exclude-id", nil, "leave these message IDs in the source, whatever else selects them; repeat or separate with commas")
	fl.Int64Var(&s.Limit, "limit", 0, "move at most this many messages (0: all)")
	fl.DurationVar(&s.OlderThan, "older-than", 0, "only messages dead-lettered longer ago than this (e.g. 1h)")
	fl.DurationVar(&s.NewerThan, "newer-than", 0, "only messages dead-lettered within this (e.g. 30m)")
	s.Groups.register(c, "select")
}

func (s *selectFlags) validate() error {
	if s.Limit < 0 {
		return flagErrorf("`--limit` must be 0 (all) or more")
	}
	if s.OlderThan < 0 || s.NewerThan < 0 {
		return flagErrorf("`--older-than` and `--newer-than` take a positive duration such as 30m or 24h")
	}
	if s.OlderThan > 0 && s.NewerThan > 0 && s.NewerThan <= s.OlderThan {
		return flagErrorf("`--newer-than %s` with `--older-than %s` selects nothing: the newer-than window must be longer", s.NewerThan, s.OlderThan)
	}
	for i, id := range s.IDs {
		s.IDs[i] = strings.TrimSpace(id)
		if s.IDs[i] == "" {
			return flagErrorf("empty `--id`: pass the message IDs shown by `dlq peek`")
		}
	}
	for i, id := range s.Exclude {
		s.Exclude[i] = strings.TrimSpace(id)
		if s.Exclude[i] == "" {
			return flagErrorf("empty `--exclude-id`: pass the message IDs shown by `dlq peek`")
		}
	}
	if err := s.Groups.validate(nil); err != nil {
		return err
	}
	var err error
	s.filter, err = compileFlag("--filter", s.Filter)
	return err
}

func (s *selectFlags) apply(o *redrive.Options) {
	if s.filter != nil {
		o.Filter = s.filter
	}
	if s.Groups.sel != nil {
		o.Filter = groupFilter{q: s.filter, sel: s.Groups.sel}
	}
	o.IDs, o.Limit, o.OlderThan, o.NewerThan = s.IDs, s.Limit, s.OlderThan, s.NewerThan
	o.ExcludeIDs = s.Exclude
}

func (s *selectFlags) any() bool {
	return s.Filter != "" || len(s.IDs) > 0 || s.OlderThan > 0 || s.NewerThan > 0 || len(s.Groups.IDs) > 0
}

type redriveOptions struct {
	f   *Factory
	ctx context.Context

	Source           string
	To               string
	Select           selectFlags
	MaxRedrives      int64
	AllowDrop        bool
	Transform        string
	DedupeBy         string
	SetHeaders       []string
	KeepDeathHeaders bool
	KeepFailure      bool
	ResetRetries     bool
	ResetHeaders     []string
	Unwrap           bool
	NoRedriveHeader  bool
	DryRun           bool
	Rate             float64
	Ramp             time.Duration
	Concurrency      int
	Window           int
	Resume           bool
	Again            bool
	ServerSide       bool
	NoJournal        bool
	Take             unreadableFlags
	Canary           canaryFlags

	format    string
	transform *inspect.Query
	dedupeBy  *inspect.Query
	headers   map[string]string
	changed   func(string) bool
}

func newCmdRedrive(f *Factory, runF func(*redriveOptions) error) *cobra.Command {
	opts := &redriveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "redrive SOURCE [--to DEST]",
		Short: "Move dead letters back where they came from, or anywhere else, without losing one",
		Long: `Move messages from a dead-letter queue (or an archive file) to their origin or
to --to. Each message is removed from the source only after the destination
confirmed it; a crash may duplicate the messages in flight, never lose one.
See ` + "`dlq help redrive-safety`" + ` for the exact guarantees.

Destinations (--to, default origin):
  origin                        where each message was dead-lettered from
  queue:NAME                    a queue on the source's broker
  exchange:NAME[:ROUTING-KEY]   a RabbitMQ exchange (default key: the one each
                                message was routed with before it died)
  file://PATH                   an archive file
  BROKER#DEST                   DEST on another broker (URL or context name)

Poison messages: --max-redrives N leaves in the source every message that dlq
has redriven N times already (counted from its x-dlq-redrive record), with
the skip reason redrive-limit in the summary and the dry run; it combines
with --filter (the filter counts first). A scheduled redrive should set it,
or a message that fails every time is cycled between the queues for ever.
--max-redrives 1 moves only messages never redriven; 0 is refused (leave the
flag out for no limit). Redrives that left no record (--no-redrive-header,
--server-side, the broker's own redrive) are not counted.

Select with --filter, --group, --id, --limit, --older-than, --newer-than
(--group takes a failure group ID from ` + "`dlq stats`" + `; the source is read once
first, without removing anything, to find the group's messages, and that
read serves the preview and --dry-run too); rewrite with
--transform (jq over the same document as --filter, e.g. '.body.retry = 0')
and --set-header. Death headers (x-death, x-first-death-*, x-last-death-*,
x-delivery-count) are stripped unless --keep-death-headers, and the failure
headers of Spring (x-exception-*), MassTransit (MT-Fault-*, MT-Reason) and
NServiceBus (NServiceBus.ExceptionInfo.*), with the origin recorded with
them (x-original-*, NServiceBus.FailedQ, NServiceBus.TimeOfFailure; on SQS
NServiceBus keeps them in the body's Headers, where they go too), unless
--keep-failure-headers; --reset-retries sets the retry counters frameworks
read to 0, and --reset-header NAME an application's own; an x-dlq-redrive
header (SQS: attribute) records count, time and source.

To origin, each message goes back where it came from, by the first record
it carries: x-death; Spring's x-original-exchange and x-original-routingKey;
MassTransit's MT-Fault-InputAddress; NServiceBus's NServiceBus.FailedQ;
else the DLQ's only SQS source queue. Messages of different origins go to
each of theirs in one run, and the dry run names the record that chose
each destination. --to exchange:NAME without a key keeps each message's
original routing key. A message in an envelope (SNS, MassTransit, a Lambda
on-failure record) moves exactly as it came; --unwrap sends the event
inside a Lambda on-failure record or an SNS notification instead.

On a terminal dlq first shows what the run would do (a dry run: counts per
destination, a sample of IDs, what stays and why) and asks; a selective run
then moves exactly the messages shown (one that arrives meanwhile stays).
--yes skips the question; without a terminal --yes is required. "no" exits 2,
moving nothing.

--dry-run reads under the peek-safety rules and moves nothing; its first line
says what its read changed, if anything (a rotation republishes each message
to the back of the queue). Where a read cannot see every message (an SQS FIFO
queue shows only the head of each message group) it says how many more the
queue holds, out_of_reach in JSON: the real run reaches them as their groups
move on. A journal in
$XDG_STATE_HOME/dlq/journal records each message's progress; --resume finishes
an interrupted run (with its recorded destination and selection) and reports
what was in flight. --server-side hands the whole move to the broker (SQS
message move task, RabbitMQ shovel); see ` + "`dlq redrive status`" + ` and ` + "`cancel`" + `.
--position N moves the one message at that position that dlq cannot decode
(` + "`dlq peek`" + ` names it) to --to on the same broker, with RabbitMQ shovels
that acknowledge it only after the destination confirmed it, without dlq
reading it; dlq refuses when it cannot be sure it moves that message.

Canary: --canary moves the selection in growing steps, 1, 5, 10%, 25%, then
the rest (--canary=1,10,50% chooses others: counts, or shares of the
selection, always followed by the rest; on an SQS FIFO queue a step takes
whole message groups). Each step is an ordinary run with every guarantee
above. After it dlq waits --canary-wait, then reads the source and the other
dead-letter queues of the route (under the peek-safety rules) and counts the
moved messages that came back, told from other failures by the run ID in
their x-dlq-redrive record. When more came back than --canary-max-returns
(default 0) it stops: every selected message not moved yet stays where it
was, and dlq names the step, the count, the failure reason of what came back
(the same failure group as before, or a new one) and exits 6;
` + "`dlq redrive SOURCE --resume`" + ` continues after a fix, with the step that stopped.
A message that came back is not moved again by the same canary. The default
--canary-wait comes from the route: an SQS queue's visibility timeout ×
maxReceiveCount (its redrive policy), or the sum of the TTLs of a RabbitMQ
retry ladder's delay queues (a message that fails every time passes each of
them once), and at least 30s; the run says which it used.

Exit codes: 0 all selected messages moved, or none selected; 1 nothing moved
(error, bad flags); 2 cancelled before any message moved (Ctrl-C: in-flight
messages were settled); 3 partly done (some moved, then an error or a
cancel, or some could not be moved: unroutable, refused; the summary says
what moved); 4 read-only; 6 the canary stopped itself. --dry-run exits as the
real run would.`,
		Example: `  dlq redrive orders.dlq --dry-run
  dlq redrive orders.dlq
  dlq redrive orders.dlq --filter '.death.reason == "rejected"' --transform '.body.retry = 0'
  dlq redrive orders.dlq --group 2b50f3125b --group e337c0fafc
  dlq redrive orders.dlq --to queue:orders.retry --rate 200/s --ramp 30s
  dlq redrive orders.dlq --max-redrives 3 --yes -o json   # from cron: poison messages stay
  dlq redrive orders_error --reset-retries --reset-header x-attempt
  dlq redrive ship-failures --unwrap --to queue:ship-events   # a Lambda on-failure destination
  dlq redrive https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq --server-side --rate 100
  dlq redrive orders.dlq --resume
  dlq redrive orders.dlq --position 3 --to queue:orders.unreadable   # a message dlq cannot decode
  dlq redrive orders.dlq --group 2b50f3125b --canary --yes
  dlq redrive orders.dlq --canary=1,10,50% --canary-wait 5m --canary-max-returns 2
  dlq redrive file://evidence.jsonl --to 'amqp://ops@rabbit:5672/#exchange:orders'`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Source = queue
		opts.ctx = c.Context()
		opts.format = format
		opts.changed = func(name string) bool { return c.Flags().Changed(name) }
		if err := opts.validate(); err != nil {
			return err
		}
		if err := opts.Take.validate(c, "filter", "group", "id", "exclude-id", "older-than", "newer-than", "limit", "dry-run",
			"server-side", "resume", "again", "transform", "set-header", "dedupe-by", "max-redrives", "rate", "ramp"); err != nil {
			return err
		}
		var to *broker.Destination
		if opts.Take.Position > 0 {
			d, err := parseDestination(opts.To)
			if err != nil || d.Kind == broker.ToFile {
				return flagErrorf("with `--position`, `--to` is origin, queue:NAME or exchange:NAME[:KEY] on the same broker; to archive the message and remove it, use `dlq discard --position %d --archive-to file://PATH.jsonl`", opts.Take.Position)
			}
			to = &d
		}
		if runF != nil {
			return runF(opts)
		}
		if to != nil {
			return takeUnreadableRun(opts.ctx, f, "redrive", opts.Source, opts.Take, to, opts.To, nil, opts.format)
		}
		return redriveRun(opts.ctx, opts)
	})
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to", "origin", "destination: origin, queue:NAME, exchange:NAME[:KEY], file://PATH, BROKER#DEST")
	_ = cmd.RegisterFlagCompletionFunc("to", completeDestination(f))
	opts.Select.register(cmd)
	fl.BoolVar(&opts.AllowDrop, "allow-drop", false, "move into a queue that drops its oldest messages past a length limit (RabbitMQ overflow drop-head), which is refused otherwise")
	fl.Int64Var(&opts.MaxRedrives, "max-redrives", 0, "leave messages that dlq has already redriven this many times (x-dlq-redrive count) in the source, as redrive-limit; at least 1")
	fl.StringVar(&opts.Transform, "transform", "", "jq expression rewriting each message document (body, headers, properties, attributes)")
	fl.StringVar(&opts.DedupeBy, "dedupe-by", "", "jq key (e.g. '.properties.message_id'): move only the first message of each key; the others stay")
	fl.StringArrayVar(&opts.SetHeaders, "set-header", nil, "set a header (SQS: attribute) KEY=VALUE on every moved message; repeatable")
	fl.BoolVar(&opts.KeepDeathHeaders, "keep-death-headers", false, "keep x-death, x-first-death-*, x-last-death-*, x-delivery-count")
	fl.BoolVar(&opts.KeepFailure, "keep-failure-headers", false, "keep the failure headers of Spring (x-exception-*), MassTransit (MT-Fault-*, MT-Reason) and NServiceBus (NServiceBus.ExceptionInfo.*), and the origin recorded with them (x-original-*, NServiceBus.FailedQ, NServiceBus.TimeOfFailure)")
	fl.BoolVar(&opts.ResetRetries, "reset-retries", false, "set the retry counters frameworks read to 0 (Spring's retry-count, MassTransit's MT-Fault-RetryCount and MT-Fault-RedeliveryCount, NServiceBus.Retries), so a moved message gets its full retries")
	fl.BoolVar(&opts.Unwrap, "unwrap", false, "send the event inside a Lambda on-failure record (requestPayload) or an SNS notification (Message) instead of the envelope; other messages move as they are")
	fl.StringArrayVar(&opts.ResetHeaders, "reset-header", nil, "set this counter header (SQS: attribute) to 0 on every moved message that carries it; repeatable")
	fl.BoolVar(&opts.NoRedriveHeader, "no-redrive-header", false, "do not add the x-dlq-redrive header (SQS: attribute) recording the redrive; RabbitMQ 3.10 handles messages left with no string header faster")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "change nothing: show counts per destination, skips and diffs")
	fl.Var((*rateValue)(&opts.Rate), "rate", "at most N messages per second (N or N/s; 0: unlimited)")
	fl.DurationVar(&opts.Ramp, "ramp", 0, "raise the rate from a tenth of --rate to --rate over this long")
	fl.IntVar(&opts.Concurrency, "concurrency", 0, "windows published at once (default 4; 1 for SQS FIFO); 1 keeps the source's order at the destination")
	fl.IntVar(&opts.Window, "window", 0, "messages published and confirmed together (default 250)")
	fl.BoolVar(&opts.Resume, "resume", false, "finish an interrupted redrive of SOURCE from its journal")
	fl.BoolVar(&opts.ServerSide, "server-side", false, "let the broker move every message itself (SQS move task, RabbitMQ shovel)")
	fl.BoolVar(&opts.Again, "again", false, "send messages of an archive that were already redriven to the same destination")
	fl.BoolVar(&opts.NoJournal, "no-journal", false, "keep no journal (an interrupted run cannot be resumed)")
	opts.Take.register(cmd, "moves")
	opts.Canary.register(cmd)
	cmd.AddCommand(newCmdRedriveStatus(f, nil), newCmdRedriveCancel(f, nil), newCmdRedriveJournals(f, nil))
	addOutputFlags(cmd, f, OutputTable, OutputJSON)
	return cmd
}

// rateValue parses "200", "200/s", "12000/m".
type rateValue float64

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }
func (r *rateValue) Type() string   { return "rate" }
func (r *rateValue) Set(s string) error {
	n, err := parseRate(s)
	if err != nil {
		return err
	}
	*r = rateValue(n)
	return nil
}

func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	per := 1.0
	switch {
	case strings.HasSuffix(s, "/s"):
		s = strings.TrimSuffix(s, "/s")
	case strings.HasSuffix(s, "/m"):
		s, per = strings.TrimSuffix(s, "/m"), 60
	case strings.HasSuffix(s, "/h"):
		s, per = strings.TrimSuffix(s, "/h"), 3600
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || n != n {
		return 0, fmt.Errorf("%q is not a rate: use messages per second such as 200 or 200/s (also /m, /h)", s)
	}
	return n / per, nil
}

func (o *redriveOptions) validate() error {
	if err := o.Select.validate(); err != nil {
		return err
	}
	if o.MaxRedrives < 0 || (o.MaxRedrives == 0 && o.changed != nil && o.changed("max-redrives")) {
		return flagErrorf("`--max-redrives %d`: give at least 1 (1 moves only messages never redriven), or leave the flag out for no limit", o.MaxRedrives)
	}
	if o.MaxRedrives > 0 && o.NoRedriveHeader {
		return flagErrorf("`--max-redrives` counts the x-dlq-redrive record that `--no-redrive-header` leaves out, so a message would never reach the limit: drop `--no-redrive-header`")
	}
	var err error
	if o.transform, err = compileFlag("--transform", o.Transform); err != nil {
		return err
	}
	if o.dedupeBy, err = compileFlag("--dedupe-by", o.DedupeBy); err != nil {
		return err
	}
	if o.headers, err = parseSetHeaders(o.SetHeaders); err != nil {
		return err
	}
	if o.Concurrency < 0 || o.Concurrency > 64 || (o.Concurrency == 0 && o.changed != nil && o.changed("concurrency")) {
		return flagErrorf("`--concurrency %d`: give 1 to 64 (1 keeps the source's order), or leave the flag out for the default", o.Concurrency)
	}
	if o.Window < 0 || o.Window > 10000 || (o.Window == 0 && o.changed != nil && o.changed("window")) {
		return flagErrorf("`--window %d`: give 1 to 10000, or leave the flag out for the default 250", o.Window)
	}
	if o.Ramp < 0 {
		return flagErrorf("`--ramp` must be a positive duration")
	}
	if o.Ramp > 0 && o.Rate == 0 {
		return flagErrorf("`--ramp` needs `--rate`: the rate to ramp up to")
	}
	if _, err := parseDestination(o.To); err != nil && !strings.Contains(o.To, "#") && !strings.HasPrefix(o.To, "http") && !strings.HasPrefix(o.To, "arn:") {
		return err
	}
	if o.ServerSide {
		if o.Resume {
			return flagErrorf("`--resume` cannot be used with `--server-side`: a server-side move keeps no journal; check it with `dlq redrive status`")
		}
		if o.Rate > redrive.MaxServerSideRate {
			return flagErrorf("`--rate` %g is too high for `--server-side`: the broker accepts at most %d messages per second", o.Rate, redrive.MaxServerSideRate)
		}
		if o.Ramp > 0 || o.Concurrency > 0 || o.Window > 0 || o.KeepDeathHeaders || o.KeepFailure || o.NoRedriveHeader || o.ResetRetries || len(o.ResetHeaders) > 0 || o.Unwrap {
			return flagErrorf("`--ramp`, `--concurrency`, `--window`, `--keep-death-headers`, `--keep-failure-headers`, `--reset-retries`, `--reset-header`, `--unwrap` and `--no-redrive-header` do not apply to `--server-side`: the broker moves messages as they are")
		}
		if len(o.Select.Groups.IDs) > 0 {
			return flagErrorf("`--group` selects messages one by one, which `--server-side` cannot: the broker moves every message; drop one of them")
		}
		var ro redrive.Options
		o.libOptions(&ro)
		if err := redrive.ServerSideRefusal(ro); err != nil {
			return flagErrorf("%v", err)
		}
	}
	return o.validateCanary()
}

func parseSetHeaders(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	h := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, flagErrorf("`--set-header %s`: use KEY=VALUE", kv)
		}
		if broker.IsDeathHeader(k) || k == redrive.RedriveHeader {
			return nil, flagErrorf("`--set-header %s`: %s is set by the broker or by dlq; choose another name", kv, k)
		}
		h[k] = v
	}
	return h, nil
}

// parseDestination reads origin, queue:NAME, exchange:NAME[:KEY] and
// file://PATH (broker.ParseDestination) as a flag value.
func parseDestination(s string) (broker.Destination, error) {
	d, err := broker.ParseDestination(s)
	switch {
	case errors.Is(err, broker.ErrNotADestination):
		return d, flagErrorf("`--to %s` is not a destination: use origin, queue:NAME, exchange:NAME[:KEY], file://PATH or BROKER#DEST", broker.Redact(s))
	case err != nil:
		return d, flagErrorf("`--to`: %v", err)
	}
	return d, nil
}

// libOptions fills the library options the flags decide.
func (o *redriveOptions) libOptions(ro *redrive.Options) {
	o.Select.apply(ro)
	ro.MaxRedrives = o.MaxRedrives
	ro.AllowDrop = o.AllowDrop
	if o.transform != nil {
		ro.Transform = redrive.JQTransform(o.transform)
	}
	ro.SetHeaders = o.headers
	if q := o.dedupeBy; q != nil {
		ro.DedupeBy = func(ctx context.Context, m *broker.Message) (string, error) {
			v, _, err := q.First(ctx, inspect.Document(m))
			return inspect.ValueText(v), err
		}
	}
	ro.KeepDeathHeaders = o.KeepDeathHeaders
	ro.KeepFailureHeaders = o.KeepFailure
	ro.ResetRetries, ro.ResetHeaders = o.ResetRetries, o.ResetHeaders
	ro.Unwrap = o.Unwrap
	ro.NoRedriveHeader = o.NoRedriveHeader
	ro.DryRun = o.DryRun
	ro.Rate, ro.Ramp = o.Rate, o.Ramp
	ro.Concurrency, ro.Window = o.Concurrency, o.Window
}

// plan is what a journal records to finish the run the same way.
func (o *redriveOptions) plan() map[string]string {
	p := map[string]string{"to": broker.Redact(o.To)}
	add := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	add("filter", o.Select.Filter)
	add("group", strings.Join(o.Select.Groups.IDs, ","))
	add("id", strings.Join(o.Select.IDs, ","))
	add("exclude-id", strings.Join(o.Select.Exclude, ","))
	if o.Select.Limit > 0 {
		p["limit"] = strconv.FormatInt(o.Select.Limit, 10)
	}
	if o.Select.OlderThan > 0 {
		p["older-than"] = o.Select.OlderThan.String()
	}
	if o.MaxRedrives > 0 {
		p["max-redrives"] = strconv.FormatInt(o.MaxRedrives, 10)
	}
	if o.Select.NewerThan > 0 {
		p["newer-than"] = o.Select.NewerThan.String()
	}
	add("transform", o.Transform)
	add("dedupe-by", o.DedupeBy)
	add("set-header", strings.Join(o.SetHeaders, "\x1f"))
	if o.KeepDeathHeaders {
		p["keep-death-headers"] = "true"
	}
	if o.KeepFailure {
		p["keep-failure-headers"] = "true"
	}
	if o.ResetRetries {
		p["reset-retries"] = "true"
	}
	if o.Unwrap {
		p["unwrap"] = "true"
	}
	add("reset-header", strings.Join(o.ResetHeaders, "\x1f"))
	if o.NoRedriveHeader {
		p["no-redrive-header"] = "true"
	}
	if o.AllowDrop {
		p["allow-drop"] = "true"
	}
	o.Canary.plan(p)
	return p
}

// adoptPlan takes the interrupted run's settings for every flag not given
// now.
func (o *redriveOptions) adoptPlan(p map[string]string) error {
	set := func(flag string, fn func(v string) error) error {
		v, ok := p[flag]
		if !ok || o.changed(flag) {
			return nil
		}
		if err := fn(v); err != nil {
			return fmt.Errorf("journal: `--%s %s`: %w", flag, v, err)
		}
		return nil
	}
	errs := []error{
		set("to", func(v string) error { o.To = v; return nil }),
		set("filter", func(v string) error { o.Select.Filter = v; return nil }),
		set("group", func(v string) error { o.Select.Groups.IDs = strings.Split(v, ","); return nil }),
		set("id", func(v string) error { o.Select.IDs = strings.Split(v, ","); return nil }),
		set("exclude-id", func(v string) error { o.Select.Exclude = strings.Split(v, ","); return nil }),
		set("limit", func(v string) (err error) { o.Select.Limit, err = strconv.ParseInt(v, 10, 64); return }),
		set("older-than", func(v string) (err error) { o.Select.OlderThan, err = time.ParseDuration(v); return }),
		set("max-redrives", func(v string) (err error) { o.MaxRedrives, err = strconv.ParseInt(v, 10, 64); return }),
		set("newer-than", func(v string) (err error) { o.Select.NewerThan, err = time.ParseDuration(v); return }),
		set("transform", func(v string) error { o.Transform = v; return nil }),
		set("dedupe-by", func(v string) error { o.DedupeBy = v; return nil }),
		set("set-header", func(v string) error { o.SetHeaders = strings.Split(v, "\x1f"); return nil }),
		set("keep-death-headers", func(v string) error { o.KeepDeathHeaders = v == "true"; return nil }),
		set("keep-failure-headers", func(v string) error { o.KeepFailure = v == "true"; return nil }),
		set("reset-retries", func(v string) error { o.ResetRetries = v == "true"; return nil }),
		set("unwrap", func(v string) error { o.Unwrap = v == "true"; return nil }),
		set("reset-header", func(v string) error { o.ResetHeaders = strings.Split(v, "\x1f"); return nil }),
		set("no-redrive-header", func(v string) error { o.NoRedriveHeader = v == "true"; return nil }),
		set("allow-drop", func(v string) error { o.AllowDrop = v == "true"; return nil }),
		set("canary", func(v string) error { o.Canary.Steps = v; return nil }),
		set("canary-wait", func(v string) (err error) {
			o.Canary.Wait, err = time.ParseDuration(v)
			o.Canary.waitSet = true
			return
		}),
		set("canary-max-returns", func(v string) (err error) { o.Canary.MaxReturns, err = strconv.ParseInt(v, 10, 64); return }),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return o.validate()
}

// unmaskTo gives a journal's `--to`, which holds no password, the password
// of this run: the broker URL of --broker or DLQ_BROKER when it names the
// same broker and user, else DLQ_PASSWORD. Without either it fails with the
// ways to give it.
func (f *Factory) unmaskTo(to string) (string, error) {
	brokerPart, dest, hasDest := strings.Cut(to, "#")
	if !broker.HasPassword(brokerPart) {
		return to, nil
	}
	join := func(b string) string {
		if hasDest {
			return b + "#" + dest
		}
		return b
	}
	candidates := []string{f.Options.Broker, os.Getenv("DLQ_BROKER")}
	if s, err := f.resolveBroker(); err == nil {
		candidates = append(candidates, s.Ref)
	}
	for _, c := range candidates {
		if c != brokerPart && broker.HasPassword(c) && broker.Redact(c) == brokerPart {
			return join(c), nil
		}
	}
	if os.Getenv("DLQ_PASSWORD") != "" {
		return join(strings.ReplaceAll(brokerPart, ":"+broker.Mask+"@", "@")), nil
	}
	return "", flagErrorf("the journal keeps `--to %s` without its password: pass `--to` again with the password, set DLQ_PASSWORD, or name the broker by a context (`--to CONTEXT#%s`)", to, dest)
}

func redriveRun(ctx context.Context, o *redriveOptions) error {
	f := o.f
	src, queue, srcName, err := f.openToChange(ctx, "redrive", o.Source, o.DryRun)
	if err != nil {
		return err
	}
	defer src.Close()
	if !o.DryRun {
		if err := needYes(f, "redrive"); err != nil {
			return err
		}
	}

	// Resume: the interrupted run's plan fills the flags not given now.
	jdir := redrive.JournalDir()
	jkey := redrive.JournalKey(src.String(), srcName)
	var resume *redrive.ResumeState
	var canary *canaryState
	if o.Resume {
		// A canary that stopped itself ended its journals: its state says
		// where it goes on. A canary interrupted in a step has both.
		canary = loadCanaryState(jkey)
		cands := interruptedRuns(jdir, jkey)
		if len(cands) > 0 {
			paths, err := o.resumeCandidates(cands, srcName)
			if err != nil {
				return err
			}
			resume, err = redrive.LoadJournals(paths)
		} else {
			err = redrive.ErrNoJournal
		}
		if errors.Is(err, redrive.ErrNoJournal) && canary != nil {
			err = nil
		}
		if errors.Is(err, redrive.ErrNoJournal) {
			return flagErrorf("nothing to resume: no interrupted redrive or stopped canary of `%s` on %s (journals in %s); drop `--resume`", srcName, src.String(), jdir)
		}
		if err != nil {
			return err
		}
		plan := map[string]string(nil)
		if resume != nil {
			defer resume.Release()
			plan = resume.Plan().Plan
		}
		if canary != nil {
			plan = canary.Plan
		}
		if err := o.adoptPlan(plan); err != nil {
			return err
		}
		if !o.changed("to") {
			if o.To, err = f.unmaskTo(o.To); err != nil {
				return err
			}
		}
	} else if !o.DryRun && !o.ServerSide && !o.NoJournal {
		if paths, _ := redrive.Interrupted(jdir, jkey); len(paths) > 0 {
			f.IO.Statusf("note: an interrupted redrive of `%s` left a journal: `dlq redrive %s --resume` finishes it without moving its confirmed messages twice", srcName, o.Source)
		} else if loadCanaryState(jkey) != nil {
			f.IO.Statusf("note: a canary redrive of `%s` stopped before it moved everything: `dlq redrive %s --resume` continues it", srcName, o.Source)
		}
	}

	dstB, destRef, err := f.OpenDestination(ctx, o.To)
	if err != nil {
		return err
	}
	dst := src
	if dstB != nil {
		defer dstB.Close()
		dst = dstB
	}
	dest, err := parseDestination(destRef)
	if err != nil {
		return err
	}
	if dest.Kind == broker.ToFile && dstB == nil {
		return flagErrorf("`--to %s`: could not open the archive", o.To)
	}
	if dstB == nil && broker.TraitsOf(src, broker.Queue{Name: queue}).FilesOnly && (dest.Kind == broker.ToQueue || dest.Kind == broker.ToExchange) {
		// An archive publishes to files only: a queue or exchange named
		// without a broker is on the broker of --broker or the context.
		b, err := f.OpenBroker(ctx)
		if err != nil {
			return fmt.Errorf("`--to %s` from an archive needs a broker to publish to: pass `--broker`, or name it in `--to BROKER#%s` (%w)", o.To, o.To, err)
		}
		defer b.Close()
		dst = b
	}
	if o.ServerSide {
		if err := confirmOnTerminal(f, fmt.Sprintf("hand every message of `%s` to the broker to move to %s", srcName, broker.Redact(o.To))); err != nil {
			return err
		}
		return redriveServerSide(ctx, o, src, srcName, dest)
	}

	// A preview (or a dry run) follows the groups' read: that read serves
	// it too, so that the queue is read once before the question.
	previewing := !o.DryRun && !f.Options.Yes && f.IO.CanPrompt() && resume == nil
	kept, err := o.Select.Groups.resolve(ctx, f, src, queue, srcName, broker.PeekOptions{}, previewing || o.DryRun)
	if err != nil {
		return endNothingSelected(f, o.format, err, summaryJSON{Summary: redrive.Summary{Source: srcName, Destination: broker.Redact(o.To), DryRun: o.DryRun}})
	}
	ro := redrive.Options{Dest: dest, SourceName: srcName, Words: flagSetting}
	o.libOptions(&ro)
	ro.Read = kept.readFrom()
	ro.Resume = resume
	// chosen are the messages a confirmed preview chose: the run moves
	// only those, and its journal records them, so that a resumed run
	// does too.
	var chosen []string
	if resume != nil {
		if chosen = resume.Chosen(); chosen != nil {
			ro.IDs = chosen
		}
	}
	ro.Notice = func(s string) { f.IO.Statusf("dlq: %s", s) }
	ledger, err := openArchiveLedger(ctx, o, src, queue, dst, ro)
	if err != nil {
		return err
	}
	if ledger != nil && !o.DryRun {
		ro.Moved = ledger.moved
	}
	if !o.DryRun {
		how := ""
		if o.Canary.on() {
			how = " in canary steps of " + strings.ReplaceAll(o.Canary.Steps, ",", ", ") + ", then the rest, stopping if moved messages come back"
		}
		n, ids, err := confirmRedrive(ctx, f, src, queue, dst, ro, resume != nil || canary != nil, how)
		ro.Read, kept = nil, nil
		if err != nil {
			if errors.Is(err, errNothingToMove) {
				return nil
			}
			return err
		}
		ro.Selected = n
		if ids != nil && ro.Selective() {
			// The preview's read chose: the run moves exactly the
			// messages it showed, without choosing again.
			ro.IDs, chosen = ids, ids
		}
	}
	if o.Canary.on() {
		if !o.DryRun {
			_, _ = redrive.PruneJournals(jdir, redrive.JournalMaxAge, f.Now())
		}
		err := (&canaryRun{o: o, src: src, dst: dst, queue: queue, srcName: srcName, jdir: jdir, jkey: jkey, state: canary}).run(ctx, ro)
		if ledger != nil && !o.DryRun {
			if lerr := ledger.record(f.Now()); lerr != nil {
				f.IO.Statusf("dlq: %v: a second redrive of these messages will not be refused", lerr)
			}
		}
		return err
	}
	bar := newRedriveBar(f, "moved")
	if !o.DryRun {
		ro.Progress = bar.update
	}
	if !o.DryRun && !o.NoJournal {
		j, err := redrive.CreateJournal(jdir, redrive.JournalHeader{Key: jkey, Broker: broker.Redact(src.String()), Source: srcName, Destination: broker.Redact(o.To), Plan: o.plan(), ChosenIDs: chosen})
		if err != nil {
			return fmt.Errorf("%w: pass `--no-journal` to run without one (an interrupted run then cannot be resumed)", err)
		}
		ro.Journal = j
		defer j.Close()
	}
	if !o.DryRun {
		// Housekeeping: finished journals are a record for a week.
		_, _ = redrive.PruneJournals(jdir, redrive.JournalMaxAge, f.Now())
	}
	restore := oneProcessor(src)
	sum, runErr := redrive.Run(ctx, src, queue, dst, ro)
	if ledger != nil && !o.DryRun {
		if err := ledger.record(f.Now()); err != nil {
			f.IO.Statusf("dlq: %v: a second redrive of these messages will not be refused", err)
		}
	}
	runErr = suggestQueue(ctx, src, queue, runErr)
	if dest.Kind == broker.ToQueue {
		runErr = suggestQueue(ctx, dst, dest.Queue, runErr)
	}
	restore()
	bar.finish()
	if !o.DryRun && resume == nil && runErr == nil && !sum.Cancelled {
		o.supersede(jdir, jkey, srcName, f.Now())
	}
	sum.Source, sum.Destination = srcName, broker.Redact(o.To)
	if !previewing {
		warnMissingPaths(f, "--filter", o.Select.filter)
	}
	saySelectedNone(f, o.Select, sum, runErr)

	exitErr, aerr := f.auditRun(AuditRecord{Action: "redrive", Broker: src.String(), Source: srcName, Destination: o.To,
		Filter: o.Select.Filter, Groups: o.Select.Groups.IDs, Transform: o.Transform}, sum, runErr, o.DryRun)
	exitErr = auditFailed(exitErr, aerr, fmt.Sprintf("moved %d messages", sum.Moved))
	if failedToStart(o.format, sum, runErr) {
		return exitErr
	}
	if perr := printSummary(f, o.format, sum, aerr, exitErr); perr != nil && exitErr == nil {
		return perr
	}
	return exitErr
}

// saySelectedNone says on stderr when a run's selection matched no message.
func saySelectedNone(f *Factory, s selectFlags, sum redrive.Summary, runErr error) {
	if runErr == nil && s.any() && sum.Examined > 0 && sum.Moved == 0 && sum64(sum.Destinations) == 0 && sum.TotalFailed() == 0 {
		f.IO.Statusf("no messages %s; nothing was changed", describeSelection(s))
	}
}

// errNothingToMove ends a redrive whose preview found nothing to move.
var errNothingToMove = errors.New("nothing to move")

// confirmOnTerminal asks on a terminal, unless --yes; without a terminal it
// lets the command go on (a redrive loses nothing).
func confirmOnTerminal(f *Factory, what string) error {
	if f.Options.Yes || !f.IO.CanPrompt() {
		return nil
	}
	return ask(f, what)
}

// confirmRedrive shows on a terminal what the run would do (a dry run:
// counts per destination, a sample, what stays and why) and asks, as
// `terraform apply` does. It returns how many messages would move and
// their IDs (nil when it did not read). how words a canary's steps in the
// question. --yes, or no terminal, skips it.
func confirmRedrive(ctx context.Context, f *Factory, src broker.Broker, queue string, dst broker.Broker, ro redrive.Options, resume bool, how string) (int64, []string, error) {
	if f.Options.Yes || !f.IO.CanPrompt() {
		return 0, nil, nil
	}
	if resume {
		// The preview would read the interrupted run's journal as its
		// own; ask plainly.
		return 0, nil, confirmOnTerminal(f, fmt.Sprintf("finish the interrupted redrive of `%s` to %s", ro.SourceName, ro.Dest))
	}
	if ro.Read == nil {
		f.IO.Statusf("dlq: reading `%s` to preview the redrive (%s)…", ro.SourceName, readingNote(ctx, src, queue))
	}
	s, err := redrive.Preview(ctx, src, queue, dst, ro)
	if err != nil {
		err = suggestQueue(ctx, src, queue, err)
		if ro.Dest.Kind == broker.ToQueue {
			err = suggestQueue(ctx, dst, ro.Dest.Queue, err)
		}
		return 0, nil, err
	}
	n := printPreview(f.IO.ErrOut, ro.SourceName, s)
	if q, ok := ro.Filter.(*inspect.Query); ok {
		warnMissingPaths(f, "--filter", q)
	} else if g, ok := ro.Filter.(groupFilter); ok && g.query() != nil {
		warnMissingPaths(f, "--filter", g.query())
	}
	if n == 0 {
		if _, err := redriveOutcome(s, nil, true, false); err != nil {
			return 0, nil, err
		}
		f.IO.Statusf("nothing to move; %s", dryRunResult(s, "moved"))
		return 0, nil, errNothingToMove
	}
	if s.ReadChanged != "" {
		f.IO.Statusf("dlq: no message was moved yet, but reading `%s` changed it: %s", ro.SourceName, s.ReadChanged)
	}
	return n, s.IDs, confirmOnTerminal(f, fmt.Sprintf("move these %d messages%s", n, how))
}

// readingNote says what reading all of queue to look at it does: a
// rotation republishes each message; other reads move none (what they
// may change, such as redelivered flags, is reported after the read).
func readingNote(ctx context.Context, b broker.Broker, queue string) string {
	// As the dry run chooses its mode (redrive's dryRun).
	rotate := broker.TraitsOf(b, broker.Queue{Name: queue}).PeekAll == broker.PeekRotate
	if qi, ok := b.(broker.QueueInspector); ok && rotate {
		if q, err := qi.Queue(ctx, queue); err == nil {
			rotate = broker.TraitsOf(b, q).PeekAll == broker.PeekRotate
		}
	}
	if rotate {
		return "rotating it: each message is republished to its back, see `dlq help peek-safety`"
	}
	return "no message is moved, see `dlq help peek-safety`"
}

// printPreview writes a dry run's plan for a confirmation and returns how
// many messages would move.
func printPreview(w io.Writer, source string, s redrive.Summary) int64 {
	n := sum64(s.Destinations)
	fmt.Fprintf(w, "redrive will move %d of %d messages in `%s`:\n", n, s.Examined, source)
	printDestinations(w, s)
	if s.OutOfReach > 0 {
		fmt.Fprintf(w, "%s\n", outOfReachLine(s.OutOfReach))
	}
	if len(s.IDs) > 0 {
		sample, more := s.IDs, ""
		if len(sample) > redrive.PreviewIDs {
			sample = sample[:redrive.PreviewIDs]
		}
		if s.IDsTruncated || int64(len(sample)) < n {
			more = " …"
		}
		fmt.Fprintf(w, "  sample: %s%s\n", visibleJoin(sample), more)
	}
	printDiffs(w, s)
	if k := s.TotalSkipped(); k > 0 {
		fmt.Fprintf(w, "left in `%s` %d:\n", source, k)
		printCounts(w, "", s.Skipped)
	}
	if k := s.TotalFailed(); k > 0 {
		fmt.Fprintf(w, "could not move %d (they would stay in `%s`):\n", k, source)
		printCounts(w, "", s.Failed)
	}
	if s.TotalSkipped()+s.TotalFailed() > 0 {
		for _, e := range s.Errors {
			fmt.Fprintf(w, "  %s\n", human.Visible(e))
		}
	}
	return n
}

// outOfReachLine says that a dry run could not see n messages, so that the
// counts above it are not taken for the whole queue.
func outOfReachLine(n int64) string {
	return fmt.Sprintf("%d more in held message groups could not be read, so are in no count above; the real run reaches them as their groups move on", n)
}

// failedToStart reports a run that failed before it examined a message (a
// missing queue, a refused login): the error says it all, and a text
// summary of zeros would only bury it. JSON output always has its summary.
func failedToStart(format string, s redrive.Summary, runErr error) bool {
	return runErr != nil && s.Examined == 0 && format != OutputJSON
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return errorText(err)
}

// redriveOutcome maps a run's result to the audit outcome and the error that
// sets the exit code: 2 on a cancel before anything moved, 3 when something
// moved and something did not (or an error or a cancel stopped it), 1 when
// nothing moved and something failed. A dry run exits as the real run
// would when it finds messages that could not move. removal words it for a
// discard or purge.
func redriveOutcome(s redrive.Summary, err error, dry, removal bool) (string, error) {
	moved, moving, stay := "moved", "moving", "stay in the source"
	var again any = broker.OptResume.Or("run it again with %s to continue", "run it again to continue")
	if removal {
		moved, moving, stay = "removed", "removing", "stay in the queue"
		again = "run it again to continue"
	}
	failed := s.TotalFailed()
	if dry {
		would := sum64(s.Destinations)
		switch {
		case errors.Is(err, context.Canceled) || s.Cancelled:
			return "dry-run", WithExitCode(ExitCancelled, fmt.Errorf("dry run cancelled; %s", dryRunResult(s, moved)))
		case err != nil:
			return "dry-run", err
		case failed > 0 && would > 0:
			return "dry-run", Partial(fmt.Errorf("dry run: %d messages could not be %s and would %s (%s)", failed, moved, stay, reasons(s.Failed)))
		case failed > 0:
			return "dry-run", fmt.Errorf("dry run: no message would be %s: %d could not be (%s)", moved, failed, reasons(s.Failed))
		}
		return "dry-run", nil
	}
	switch {
	case (errors.Is(err, context.Canceled) || s.Cancelled) && s.Moved > 0:
		return "partial", Partial(broker.Hintf("cancelled after %s %d messages; in-flight messages were settled; %v", moving, s.Moved, again))
	case errors.Is(err, context.Canceled) || s.Cancelled:
		return "cancelled", WithExitCode(ExitCancelled, fmt.Errorf("cancelled before any message was %s; in-flight messages were settled", moved))
	case err != nil && s.Hidden > 0:
		return "partial", Partial(fmt.Errorf("%s %d messages, but %w", moved, s.Moved, err))
	case err != nil && s.Moved > 0:
		return "partial", Partial(broker.Hintf("stopped after %s %d messages: %w; %v", moving, s.Moved, err, again))
	case err != nil:
		return "failed", err
	case failed > 0 && s.Moved > 0:
		return "partial", Partial(fmt.Errorf("%d messages could not be %s and %s (%s)", failed, moved, stay, reasons(s.Failed)))
	case failed > 0:
		return "failed", fmt.Errorf("no message %s: %d could not be (%s)", moved, failed, reasons(s.Failed))
	}
	return "ok", nil
}

// dryRunResult is what a dry run (or a preview) changed: nothing, or what
// its read did to the queue (a rotation, redelivered flags, receive
// counts) while no message was moved (or removed).
func dryRunResult(s redrive.Summary, moved string) string {
	if s.ReadChanged == "" {
		return "nothing was changed"
	}
	return fmt.Sprintf("no message was %s, but reading the queue changed it: %s", moved, s.ReadChanged)
}

func reasons(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// printSummary writes the summary: JSON for scripts, lines for people.
func printSummary(f *Factory, format string, s redrive.Summary, auditErr, exitErr error) error {
	if format == OutputJSON {
		return writeJSON(f.IO.Out, summaryJSON{s, errString(auditErr), jsonErrorOf(exitErr, nil)})
	}
	w := f.IO.Out
	verb := "moved"
	if s.DryRun {
		verb = "would move"
	}
	total := sum64(s.Destinations)
	if s.DryRun {
		fmt.Fprintf(w, "dry run: %s\n", dryRunResult(s, "moved"))
		fmt.Fprintf(w, "%s %d of %d messages examined in `%s`\n", verb, total, s.Examined, s.Source)
		if s.OutOfReach > 0 {
			fmt.Fprintf(w, "%s\n", outOfReachLine(s.OutOfReach))
		}
	} else {
		rate := ""
		if secs := s.Elapsed.Seconds(); secs > 0 && s.Moved > 0 {
			rate = fmt.Sprintf(", %.0f msg/s", float64(s.Moved)/secs)
		}
		fmt.Fprintf(w, "%s %d of %d messages examined in `%s` (%s%s)\n", verb, s.Moved, s.Examined, s.Source, s.Elapsed.Round(time.Millisecond), rate)
	}
	printDestinations(w, s)
	if n := s.TotalSkipped(); n > 0 {
		fmt.Fprintf(w, "left in the source on purpose %d:\n", n)
		printCounts(w, "", s.Skipped)
	}
	if n := s.TotalFailed(); n > 0 {
		if s.NotReturned > 0 {
			fmt.Fprintf(w, "could not move %d (they stay in the source; %d could not be given back, see below):\n", n, s.NotReturned)
		} else {
			fmt.Fprintf(w, "could not move %d (they stay in the source):\n", n)
		}
		printCounts(w, "", s.Failed)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "  %s\n", human.Visible(e))
	}
	if r := s.Resumed; r != nil {
		fmt.Fprintf(w, "resumed %d interrupted run(s): %d messages were confirmed but not removed (removed now, not sent again); %d were in flight and were sent again (each may now be at the destination twice)\n",
			r.Journals, r.ConfirmedNotAcked, r.InFlight)
		if len(r.InFlightIDs) > 0 {
			fmt.Fprintf(w, "  in flight: %s\n", visibleJoin(r.InFlightIDs))
		}
		if r.MaybeNotAcked > 0 {
			fmt.Fprintf(w, "  %d were acknowledged in the run's last moments and the broker may not have received those acknowledgements: any still in the source was sent again and may be at the destination twice: %s\n",
				r.MaybeNotAcked, visibleJoin(r.MaybeNotAckedIDs))
		}
	}
	if s.Resent > 0 {
		fmt.Fprintf(w, "%d messages were sent again after the destination's answer was lost (a cut connection or a restart); each may be at the destination twice: %s\n",
			s.Resent, visibleJoin(s.ResentIDs))
	}
	if s.NotReturned > 0 {
		fmt.Fprintf(w, "%d messages could not be given back to the source: they are not lost, and come back when this run's hold on them ends (SQS: their visibility timeout; RabbitMQ: at once, as the channel closed)\n", s.NotReturned)
	}
	if s.Rotated > 0 {
		fmt.Fprintf(w, "%d messages left in the source were republished to its back (see `dlq help redrive-safety`)\n", s.Rotated)
	}
	printDiffs(w, s)
	return nil
}

// printDestinations prints the count of each destination, and for an
// origin the record that chose it.
func printDestinations(w io.Writer, s redrive.Summary) {
	if len(s.OriginRules) == 0 {
		printCounts(w, "", s.Destinations)
		return
	}
	m := s.Destinations
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	for _, k := range keys {
		line := fmt.Sprintf("  %8d  %s", m[k], human.Visible(k))
		if r := s.OriginRules[k]; r != "" {
			line += "  (by " + human.Visible(r) + ")"
		}
		fmt.Fprintln(w, line)
	}
}

func printCounts(w io.Writer, indent string, m map[string]int64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	for _, k := range keys {
		fmt.Fprintf(w, "%s  %8d  %s\n", indent, m[k], human.Visible(k))
	}
}

// visibleJoin is message IDs on one line, each through human.Visible.
func visibleJoin(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = human.Visible(id)
	}
	return strings.Join(out, " ")
}

func sum64(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// redriveBar draws a progress bar on a terminal's stderr.
type redriveBar struct {
	f     *Factory
	verb  string
	shown bool
	last  time.Time
}

func newRedriveBar(f *Factory, verb string) *redriveBar { return &redriveBar{f: f, verb: verb} }

func (b *redriveBar) update(p redrive.Progress) {
	if !b.f.IO.IsStderrTTY() || p.Done {
		return
	}
	if now := time.Now(); now.Sub(b.last) < 200*time.Millisecond {
		return
	} else {
		b.last = now
	}
	b.shown = true
	line := progressCount(b.verb, p)
	if p.Total > 0 {
		const width = 24
		frac := float64(p.Behind()) / float64(p.Total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		line = "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "] " + line
	}
	line += fmt.Sprintf("  %.0f msg/s", p.Rate)
	if eta := p.ETA(); eta > 0 {
		line += "  ETA " + eta.Round(time.Second).String()
	}
	if p.Skipped > 0 || p.Failed > 0 {
		line += fmt.Sprintf("  skipped %d failed %d", p.Skipped, p.Failed)
	}
	if p.Blocked {
		line += "  (paused: broker blocked)"
	}
	fmt.Fprintf(b.f.IO.ErrOut, "\r\x1b[K%s", line)
}

// progressCount words what a progress report measures: moves against the
// selection when it is known ("moved 24/60"), otherwise the messages
// examined against the queue's depth at the start ("moved 24, examined 84
// of ~200 in the queue"), or the moves alone when neither is known.
func progressCount(verb string, p redrive.Progress) string {
	switch {
	case p.Total > 0 && p.Selected:
		return fmt.Sprintf("%s %d/%d", verb, p.Moved, p.Total)
	case p.Total > 0:
		return fmt.Sprintf("%s %d, examined %d of ~%d in the queue", verb, p.Moved, p.Examined, p.Total)
	}
	return fmt.Sprintf("%s %d", verb, p.Moved)
}

func (b *redriveBar) finish() {
	if b.shown {
		fmt.Fprint(b.f.IO.ErrOut, "\r\x1b[K")
	}
}

// redriveServerSide hands the move to the broker and follows it.
func redriveServerSide(ctx context.Context, o *redriveOptions, src broker.Broker, queue string, dest broker.Destination) error {
	f := o.f
	if dest.Kind == broker.ToFile {
		return flagErrorf("`--server-side` cannot write an archive: drop `--server-side` or choose a queue")
	}
	bar := newRedriveBar(f, "server-side")
	task, err := redrive.ServerSide(ctx, src, queue, redrive.ServerSideOptions{Dest: dest, Rate: o.Rate, Wait: true,
		Progress: func(t broker.MoveTask) {
			p := redrive.Progress{}
			if t.Moved != nil {
				p.Moved = *t.Moved
			}
			if t.ToMove != nil {
				p.Total, p.Examined, p.Selected = *t.ToMove, p.Moved, true
			}
			if t.Remaining != nil {
				p.Moved = 0
				bar.verb = fmt.Sprintf("server-side, %d left", *t.Remaining)
			}
			bar.update(p)
		}})
	bar.finish()
	outcome := "ok"
	var exitErr error
	switch {
	case errors.Is(err, context.Canceled) && task.Handle != "":
		outcome = "cancelled"
		exitErr = WithExitCode(ExitCancelled, fmt.Errorf("stopped watching; the broker keeps moving (%s): `dlq redrive status %s`, or stop it with `dlq redrive cancel %s`", task.Handle, o.Source, o.Source))
	case err != nil && task.Handle != "":
		outcome = "failed"
		exitErr = Partial(err)
	case err != nil:
		outcome = "failed"
		exitErr = err
	}
	counts := map[string]int64{}
	if task.Moved != nil {
		counts["moved"] = *task.Moved
	}
	aerr := f.Audit(AuditRecord{Action: "redrive-server-side", Broker: src.String(), Source: queue, Destination: o.To,
		Counts: counts, Outcome: outcome, Error: errString(err)})
	exitErr = auditFailed(exitErr, aerr, "the broker was handed the move")
	if o.format == OutputJSON {
		if werr := writeJSON(f.IO.Out, task); werr != nil && exitErr == nil {
			return werr
		}
	} else if task.Handle != "" {
		printTask(f.IO.Out, task)
	}
	return exitErr
}

func printTask(w io.Writer, t broker.MoveTask) {
	fmt.Fprintf(w, "%s  %s → %s  %s", t.Handle, t.Source, t.Destination, t.State)
	if t.Moved != nil {
		fmt.Fprintf(w, "  moved %d", *t.Moved)
		if t.ToMove != nil {
			fmt.Fprintf(w, " of %d", *t.ToMove)
		}
	}
	if t.Remaining != nil {
		fmt.Fprintf(w, "  %d left in the source", *t.Remaining)
	}
	if t.MaxPerSecond > 0 {
		fmt.Fprintf(w, "  ≤%d msg/s", t.MaxPerSecond)
	}
	if !t.Started.IsZero() {
		fmt.Fprintf(w, "  started %s", t.Started.UTC().Format(time.RFC3339))
	}
	if t.Failure != "" {
		fmt.Fprintf(w, "  failure: %s", t.Failure)
	}
	fmt.Fprintln(w)
}

type redriveStatusOptions struct {
	f      *Factory
	Source string
	format string
}

func newCmdRedriveStatus(f *Factory, runF func(*redriveStatusOptions) error) *cobra.Command {
	opts := &redriveStatusOptions{f: f}
	c := &cobra.Command{
		Use:               "status SOURCE",
		Short:             "Show the server-side moves of a queue",
		Example:           "  dlq redrive status https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq\n  dlq redrive status orders.dlq -o json",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Source = args[0]
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveStatusRun(c.Context(), opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func openMover(ctx context.Context, f *Factory, ref string) (broker.Broker, broker.ServerSideMover, string, error) {
	src, queue, err := f.OpenQueue(ctx, ref)
	if err != nil {
		return nil, nil, "", err
	}
	mv, ok := src.(broker.ServerSideMover)
	if !ok {
		src.Close()
		return nil, nil, "", broker.Errorf(broker.ErrUnsupported, "server-side moves", "%s has none", src.String())
	}
	return src, mv, queue, nil
}

func redriveStatusRun(ctx context.Context, o *redriveStatusOptions) error {
	src, mv, queue, err := openMover(ctx, o.f, o.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	tasks, err := mv.MoveStatus(ctx, queue)
	if err != nil {
		return err
	}
	if o.format == OutputJSON {
		if tasks == nil {
			tasks = []broker.MoveTask{}
		}
		return writeJSON(o.f.IO.Out, tasks)
	}
	if len(tasks) == 0 {
		o.f.IO.Statusf("no server-side moves of `%s`", queue)
		return nil
	}
	for _, t := range tasks {
		printTask(o.f.IO.Out, t)
	}
	return nil
}

type redriveCancelOptions struct {
	f      *Factory
	Source string
	Handle string
	format string
}

func newCmdRedriveCancel(f *Factory, runF func(*redriveCancelOptions) error) *cobra.Command {
	opts := &redriveCancelOptions{f: f}
	c := &cobra.Command{
		Use:   "cancel SOURCE [HANDLE]",
		Short: "Stop a server-side move (messages already moved stay moved)",
		Long: `Stop the running server-side move of SOURCE (or the one HANDLE names, as
` + "`dlq redrive status`" + ` shows it). Messages already moved stay at the destination;
the rest stay in SOURCE. On a terminal dlq asks first; without one it needs
--yes.`,
		Example:           "  dlq redrive cancel https://sqs.eu-west-1.amazonaws.com/123456789012/jobs-dlq\n  dlq redrive cancel orders.dlq dlq-move-orders.dlq-1a2b --yes -o json",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Source = args[0]
			if len(args) == 2 {
				opts.Handle = args[1]
			}
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return redriveCancelRun(c.Context(), opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func redriveCancelRun(ctx context.Context, o *redriveCancelOptions) error {
	f := o.f
	if err := f.CheckWritable("redrive cancel"); err != nil {
		return err
	}
	if err := needYes(f, "redrive cancel"); err != nil {
		return err
	}
	src, mv, queue, err := openMover(ctx, f, o.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	handle := o.Handle
	if handle == "" {
		tasks, err := mv.MoveStatus(ctx, queue)
		if err != nil {
			return err
		}
		var running []string
		for _, t := range tasks {
			if !t.State.Done() {
				running = append(running, t.Handle)
			}
		}
		switch len(running) {
		case 0:
			return fmt.Errorf("no running server-side move of `%s`: see `dlq redrive status %s`", queue, o.Source)
		case 1:
			handle = running[0]
		default:
			return flagErrorf("%d server-side moves of `%s` are running: name one (%s)", len(running), queue, strings.Join(running, ", "))
		}
	}
	if err := confirmOnTerminal(f, fmt.Sprintf("stop the server-side move %s of `%s` (messages already moved stay moved)", human.Visible(handle), queue)); err != nil {
		return err
	}
	task, err := mv.CancelMove(ctx, queue, handle)
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	aerr := f.Audit(AuditRecord{Action: "redrive-cancel", Broker: src.String(), Source: queue, Destination: handle, Outcome: outcome, Error: errString(err)})
	if err != nil {
		return auditFailed(err, aerr, "")
	}
	if o.format == OutputJSON {
		if werr := writeJSON(f.IO.Out, task); werr != nil {
			return auditFailed(werr, aerr, "")
		}
	} else {
		printTask(f.IO.Out, task)
	}
	return auditFailed(nil, aerr, "cancelled the move")
}
