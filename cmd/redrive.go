package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/redrive"
)

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
each destination. An archive records no origin itself: --to BROKER#origin
sends each of its messages home on that broker by the record it carries.
--to exchange:NAME without a key keeps each message's
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
			opts.Take.AllowDrop = opts.AllowDrop
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
