package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/redrive"
	"github.com/dlq-tools/dlq/tui"
)

type tuiOptions struct {
	f *Factory

	Queue   string
	Limit   int
	Refresh time.Duration
	Peek    peekFlags
	// CanaryWait is the settle time of a canary group redrive (0: from
	// the route, as `dlq redrive --canary` without --canary-wait).
	CanaryWait time.Duration
}

func newCmdTUI(f *Factory, runF func(*tuiOptions) error) *cobra.Command {
	o := &tuiOptions{f: f}
	c := &cobra.Command{
		Use:   "tui [QUEUE]",
		Short: "Triage dead letters in a terminal UI: browse, understand, fix, redrive",
		Long: `dlq tui opens a terminal UI over the queues of a broker, a context or an
archive. Messages are read under the peek-safety rules (see ` + "`dlq help peek-safety`" + `):
the list is a peek and removes nothing.

Screens: queues (depth, in-flight, consumers, DLQ marker, live depth trend) →
messages (jq filter with /, reasons with g, select with space, all matching
with a) → detail (death timeline, pretty JSON, raw/hex with r) → edit (e; the
JSON is validated, the diff shown, then the edited message is published to
its origin and the original removed) and stats (s: failure groups by
reason shape, as ` + "`dlq stats`" + ` counts them, with trends and hot values; tab
cycles groupings; R, D and x redrive, discard or export a whole group; a
group's redrive offers the canary of ` + "`dlq redrive --canary`" + `, waiting
--canary-wait after each step).
? shows every key.

Redrive (R, ctrl+a), discard (D, archive first) and edit are audited like the
commands. With --read-only or a read-only context their keys do not exist.

Needs a terminal; in scripts use dlq peek, stats, redrive and discard.
DLQ_DEBUG_LOG=FILE (or DEBUG=1, which logs to dlq-tui-debug.log in the
temporary directory) writes a debug log; nothing is printed while it runs.`,
		Example: `  dlq tui --broker amqp://guest@localhost:5672/
  dlq tui --context prod --read-only orders.dlq
  dlq tui file://dead-letters.jsonl.gz
  dlq tui --broker demo:`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Queue = args[0]
			}
			if o.Limit < 0 {
				return flagErrorf("`--limit` must be 0 (the default, 100000) or more")
			}
			if o.CanaryWait < 0 {
				return flagErrorf("`--canary-wait` must be positive (0: from the route, see `dlq help redrive`)")
			}
			if o.Refresh < 0 {
				return flagErrorf("`--refresh` must be positive (0 turns the live depth off)")
			}
			if err := o.Peek.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return tuiRun(c.Context(), o)
		},
	}
	c.Flags().IntVar(&o.Limit, "limit", 100_000, "most messages of a queue to read into the list (0: the default)")
	c.Flags().DurationVar(&o.Refresh, "refresh", 2*time.Second, "how often queue depths are refreshed (0: never)")
	c.Flags().DurationVar(&o.CanaryWait, "canary-wait", 0, "settle time after each step of a canary group redrive (default: from the route, as `dlq redrive --canary`)")
	o.Peek.register(c)
	return c
}

func tuiRun(ctx context.Context, o *tuiOptions) error {
	f := o.f
	if !f.IO.CanPrompt() || !f.IO.IsStdoutTTY() {
		return flagErrorf("`dlq tui` needs a terminal: in scripts use `dlq peek`, `dlq stats`, `dlq redrive` or `dlq discard`")
	}
	if f.OpenBroker == nil || f.OpenQueue == nil {
		return errors.New("no broker configured: give `--broker URL`, a context, or a file:// archive")
	}
	var b broker.Broker
	var queue string
	var err error
	if o.Queue != "" {
		b, queue, err = f.OpenQueue(ctx, o.Queue)
	} else {
		b, err = f.OpenBroker(ctx)
	}
	if err != nil {
		return err
	}
	defer b.Close()

	logger, closeLog := tuiLogger(f)
	defer closeLog()
	readOnly := f.Options.ReadOnly || (f.ReadOnly != nil && f.ReadOnly())
	backend := tuiBackend(f, b, o, readOnly, logger)

	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	color := f.IO.ColorEnabled() && !noColor && !f.Options.NoColor
	refresh := o.Refresh
	if refresh == 0 {
		refresh = -1
	}
	model := tui.New(ctx, backend, tui.Options{
		Queue:   queue,
		Limit:   o.Limit,
		Refresh: refresh,
		Color:   color,
		Editor:  editor,
		Now:     f.Now,
	}, logger)
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(f.IO.In), tea.WithOutput(f.IO.Out), tea.WithFPS(120)}
	if !color {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	logger.Info("tui start", "broker", b.String(), "read_only", readOnly, "queue", queue)
	_, err = tea.NewProgram(model, opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return ErrCancelled
	}
	if errors.Is(err, tea.ErrInterrupted) {
		return ErrCancelled
	}
	return err
}

// tuiLogger logs to DLQ_DEBUG_LOG (the factory's logger), or with DEBUG set
// to a file in the temporary directory; never to the terminal.
func tuiLogger(f *Factory) (*slog.Logger, func()) {
	if os.Getenv("DLQ_DEBUG_LOG") != "" || os.Getenv("DEBUG") == "" {
		return f.Logger, func() {}
	}
	path := filepath.Join(os.TempDir(), "dlq-tui-debug.log")
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}
	}
	return slog.New(slog.NewTextHandler(fh, &slog.HandlerOptions{Level: slog.LevelDebug})), func() { fh.Close() }
}

// tuiBackend gives the TUI what the broker can do, through the inspect and
// redrive libraries. In read-only mode the mutating functions stay nil, so
// the TUI has no keys for them.
func tuiBackend(f *Factory, b broker.Broker, o *tuiOptions, readOnly bool, logger *slog.Logger) tui.Backend {
	tb := tui.Backend{
		Name:     broker.Redact(b.String()),
		ReadOnly: readOnly,
		Reason:   inspect.Reason,
		Decode: func(m *broker.Message) ([]byte, string) {
			d := inspect.DecodePayload(m)
			kind := string(d.Kind)
			if d.Kind == inspect.BodyEmpty {
				kind = "text"
			}
			return d.Bytes, kind
		},
		Compile: func(expr string) (tui.Matcher, error) {
			q, err := inspect.Compile(expr)
			if err != nil {
				return nil, err
			}
			return func(m *broker.Message) (bool, error) {
				ctx, cancel := context.WithTimeout(context.Background(), inspect.DefaultEvalTimeout)
				defer cancel()
				return q.Match(ctx, m)
			}, nil
		},
		Shape: inspect.ShapeOf,
		Attributes: func(m *broker.Message) bool {
			t := broker.TraitsOf(b, broker.Queue{Name: m.Queue})
			return t.Attributes != nil && t.Attributes(m)
		},
		Group: func(ctx context.Context, spec string, msgs []*broker.Message) (tui.Grouping, error) {
			return tuiGrouping(ctx, spec, msgs, f.Now())
		},
		Triage: func(ctx context.Context, msgs []*broker.Message) (tui.Triage, error) {
			return tuiTriage(ctx, f, msgs)
		},
	}
	if ql, ok := b.(broker.QueueLister); ok {
		tb.Queues = ql.Queues
	} else if qi, ok := b.(broker.QueueInspector); ok && o.Queue != "" {
		tb.Queues = func(ctx context.Context) ([]broker.Queue, error) {
			q, err := qi.Queue(ctx, o.Queue)
			return []broker.Queue{q}, err
		}
	}
	if p, ok := b.(broker.Peeker); ok {
		tb.Peek = func(ctx context.Context, queue string, visit func(*broker.Message) error) (broker.PeekReport, error) {
			po := o.Peek.options(f.Now(), o.Limit)
			// The list keeps what it reads: hand it copies.
			return p.Peek(ctx, queue, po, func(m *broker.Message) error { return visit(m.Clone()) })
		}
	}
	tb.Export = func(ctx context.Context, req tui.ActionRequest, progress func(tui.Progress)) (tui.Result, error) {
		return tuiExport(ctx, f, b, req, progress)
	}
	if readOnly {
		return tb
	}
	if _, ok := b.(broker.Consumer); ok {
		tb.Redrive = func(ctx context.Context, req tui.ActionRequest, progress func(tui.Progress)) (tui.Result, error) {
			return tuiRedrive(ctx, f, b, req, o.CanaryWait, progress)
		}
		tb.Discard = func(ctx context.Context, req tui.ActionRequest, progress func(tui.Progress)) (tui.Result, error) {
			return tuiDiscard(ctx, f, b, req, progress)
		}
		if _, ok := b.(broker.Publisher); ok {
			tb.Replace = func(ctx context.Context, req tui.ReplaceRequest) (tui.Result, error) {
				return tuiReplace(ctx, f, b, req)
			}
		}
	}
	_ = logger
	return tb
}

// tuiGrouping counts the TUI's messages as `dlq stats` does, with the same
// groupings, keys, templates and trends.
func tuiGrouping(ctx context.Context, spec string, msgs []*broker.Message, now time.Time) (tui.Grouping, error) {
	res, of, err := inspect.GroupMessages(ctx, spec, msgs, now)
	if err != nil {
		return tui.Grouping{}, err
	}
	out := tui.Grouping{Total: int(res.Total), TrendStep: human.Seconds(res.TrendStepSeconds)}
	for _, g := range res.Groups {
		row := tui.GroupRow{Key: strings.Join(g.Values, " · "), ID: g.ID, Count: int(g.Count), Bytes: g.Bytes, LastHour: g.LastHour,
			Trend: inspect.Sparkline(g.Trend), Hot: inspect.HotText(g.Hot, 3)}
		if g.Oldest != nil {
			row.Oldest, row.Newest = *g.Oldest, *g.Newest
		}
		out.Groups = append(out.Groups, row)
	}
	out.Of = of
	return out, nil
}

// tuiProgress reports a run's progress as the command's progress line
// words it: against the selection when it is known, otherwise as the
// messages examined of the queue's depth.
func tuiProgress(verb string, progress func(tui.Progress)) func(redrive.Progress) {
	return func(p redrive.Progress) {
		progress(tui.Progress{Done: p.Behind(), Failed: p.Failed, Total: p.Total, Note: progressCount(verb, p)})
	}
}

func tuiResult(s redrive.Summary, verb string) tui.Result {
	r := tui.Result{Done: s.Moved, Skipped: sum64(s.Skipped), Failed: sum64(s.Failed)}
	r.Summary = fmt.Sprintf("%s %d of %d examined", verb, s.Moved, s.Examined)
	if r.Failed > 0 {
		r.Summary += fmt.Sprintf("; %d failed (%s)", r.Failed, reasons(s.Failed))
	}
	if r.Skipped > 0 {
		r.Summary += fmt.Sprintf("; %d left in place (%s)", r.Skipped, reasons(s.Skipped))
	}
	if s.Resent > 0 {
		r.Summary += fmt.Sprintf("; %d sent again after a lost answer (may be there twice)", s.Resent)
	}
	return r
}

func tuiSelection(req tui.ActionRequest) (redrive.Options, error) {
	ro := redrive.Options{IDs: req.IDs, SourceName: req.Queue, Words: req.Words}
	if len(req.IDs) == 0 && req.Filter != "" {
		q, err := inspect.Compile(req.Filter)
		if err != nil {
			return ro, err
		}
		ro.Filter = q
	}
	return ro, nil
}

// tuiAct runs one of the TUI's mutating actions and records it in the
// audit log as tui-ACTION, with the outcome its command would have. An
// audit log that cannot be written fails an action that succeeded (done
// says what did): the TUI has no stderr to warn on.
func tuiAct(f *Factory, action, done string, rec AuditRecord, run func() (redrive.Summary, error)) (redrive.Summary, error) {
	sum, runErr := run()
	rec.Action = "tui-" + action
	if _, aerr := f.auditRun(rec, sum, runErr, false); aerr != nil && runErr == nil {
		runErr = fmt.Errorf("%s, but the audit log failed: %w", done, aerr)
	}
	return sum, runErr
}

// tuiDestination is the broker a TUI action publishes to: b itself, or
// the archive a file destination names (closed by the returned func).
func tuiDestination(ctx context.Context, f *Factory, b broker.Broker, dest broker.Destination) (broker.Broker, func(), error) {
	if dest.Kind != broker.ToFile {
		return b, func() {}, nil
	}
	db, _, err := f.OpenDestination(ctx, "file://"+dest.Path)
	if err != nil {
		return nil, nil, err
	}
	return db, func() { db.Close() }, nil
}

func tuiRedrive(ctx context.Context, f *Factory, b broker.Broker, req tui.ActionRequest, canaryWait time.Duration, progress func(tui.Progress)) (tui.Result, error) {
	if err := f.CheckWritable("redrive"); err != nil {
		return tui.Result{}, err
	}
	ro, err := tuiSelection(req)
	if err != nil {
		return tui.Result{}, err
	}
	ro.Dest = req.Dest
	if len(req.IDs) == 0 && req.Filter != "" && req.Expected > 0 {
		// The user confirmed the messages the list's whole read found
		// matching: the selection, as a preview counts it.
		ro.Selected = req.Expected
	}
	ro.Progress = tuiProgress("moved", progress)
	dst, closeDst, err := tuiDestination(ctx, f, b, req.Dest)
	if err != nil {
		return tui.Result{}, err
	}
	defer closeDst()
	if req.Canary {
		return tuiCanary(ctx, f, b, dst, req, ro, canaryWait, progress)
	}
	sum, err := tuiAct(f, "redrive", "moved", AuditRecord{Broker: b.String(), Source: req.Queue, Destination: req.Dest.String(),
		Filter: req.Filter, Groups: req.Groups}, func() (redrive.Summary, error) {
		return redrive.Run(ctx, b, req.Queue, dst, ro)
	})
	return tuiResult(sum, "moved to "+req.Dest.String()+":"), err
}

// tuiCanary is a group redrive in canary steps, with the wait the route
// gives (as `dlq redrive --canary` without --canary-wait), audited as
// tui-redrive with its steps.
func tuiCanary(ctx context.Context, f *Factory, b, dst broker.Broker, req tui.ActionRequest, ro redrive.Options, wait time.Duration, progress func(tui.Progress)) (tui.Result, error) {
	route := redrive.RouteOf(ctx, b, req.Queue, dst, req.Dest)
	if wait > 0 {
		route.Wait = wait
	}
	// Progress comes from the engine's goroutine while a step runs, OnWait
	// between steps: never at once.
	var moved int64
	note := "step 1"
	ro.Progress = func(p redrive.Progress) {
		progress(tui.Progress{Done: moved + p.Moved, Failed: p.Failed, Total: req.Expected, Step: note})
	}
	co := redrive.CanaryOptions{Wait: route.Wait, Watch: route.Watch, Total: req.Expected,
		OnWait: func(step int, n int64, d time.Duration) {
			moved += n
			progress(tui.Progress{Done: moved, Total: req.Expected, Step: fmt.Sprintf("step %d moved %d, waiting %s for returns", step, n, d)})
			note = fmt.Sprintf("step %d", step+1)
		}}
	rep, runErr := redrive.Canary(ctx, b, req.Queue, dst, ro, co)
	sum := rep.Summary
	exitErr, outcome := canaryOutcome(sum, rep, runErr, false, "")
	rec := AuditRecord{Action: "tui-redrive", Broker: b.String(), Source: req.Queue, Destination: req.Dest.String(), Filter: req.Filter, Groups: req.Groups,
		Counts: sum.Counts(), IDs: sum.IDs, Outcome: outcome, Error: errString(runErr), Canary: auditCanary(rep)}
	if aerr := f.Audit(rec); aerr != nil && exitErr == nil {
		exitErr = fmt.Errorf("moved %d, but the audit log failed: %w", sum.Moved, aerr)
	}
	res := tuiResult(sum, "canary moved to "+req.Dest.String()+":")
	res.Summary += fmt.Sprintf(" in %d steps", len(rep.Steps))
	if rep.Stopped != nil {
		same := "a new failure group"
		if len(rep.Returns) > 0 && rep.Returns[0].Same {
			same = "the same failure group"
		}
		reason := ""
		if len(rep.Returns) > 0 {
			reason = ": " + human.Visible(rep.Returns[0].Reason)
		}
		exitErr = fmt.Errorf("canary stopped at step %d (%s): %d moved messages came back, %s%s; %d stay in %s: redrive the group again once its cause is fixed",
			rep.Stopped.Step, rep.Stopped.Label, rep.Stopped.Returned, same, reason, rep.Left, req.Queue)
	}
	return res, exitErr
}

func tuiDiscard(ctx context.Context, f *Factory, b broker.Broker, req tui.ActionRequest, progress func(tui.Progress)) (tui.Result, error) {
	if err := f.CheckWritable("discard"); err != nil {
		return tui.Result{}, err
	}
	if req.Archive == "" {
		return tui.Result{}, errors.New("discard needs an archive file: nothing was removed")
	}
	ro, err := tuiSelection(req)
	if err != nil {
		return tui.Result{}, err
	}
	ro.Progress = tuiProgress("discarded", progress)
	ab, pub, _, err := openArchive(ctx, f, req.Archive, "file://"+req.Archive, b, req.Queue)
	if err != nil {
		return tui.Result{}, err
	}
	defer ab.Close()
	dest := broker.Destination{Kind: broker.ToFile, Path: req.Archive}
	sum, err := tuiAct(f, "discard", "discarded", AuditRecord{Broker: b.String(), Source: req.Queue, Destination: "file://" + req.Archive,
		Filter: req.Filter, Groups: req.Groups}, func() (redrive.Summary, error) {
		return redrive.Discard(ctx, b, req.Queue, pub, dest, ro)
	})
	res := tuiResult(sum, "discarded")
	res.Summary += " (archived first to " + req.Archive + ")"
	return res, err
}

func tuiReplace(ctx context.Context, f *Factory, b broker.Broker, req tui.ReplaceRequest) (tui.Result, error) {
	if err := f.CheckWritable("edit"); err != nil {
		return tui.Result{}, err
	}
	edited := req.Edited.Clone()
	edited.ID = req.Original.ID
	dst, closeDst, err := tuiDestination(ctx, f, b, req.Dest)
	if err != nil {
		return tui.Result{}, err
	}
	defer closeDst()
	sum, err := tuiAct(f, "edit", "published", AuditRecord{Broker: b.String(), Source: req.Queue, Destination: req.Dest.String(),
		Transform: "edited in dlq tui", IDs: []string{req.Original.ID}}, func() (redrive.Summary, error) {
		return redrive.Edit(ctx, b, req.Queue, dst, edited, redrive.Options{Dest: req.Dest, SourceName: req.Queue})
	})
	res := tuiResult(sum, "published")
	if err == nil {
		res.Summary = fmt.Sprintf("published edited %s to %s and removed the original from %s", req.Original.ID, req.Dest, req.Queue)
	}
	return res, err
}

// tuiExport writes the messages the user selected, exactly as read, to an
// archive, as `dlq export` writes a queue's. Nothing changes on the broker.
func tuiExport(ctx context.Context, f *Factory, b broker.Broker, req tui.ActionRequest, progress func(tui.Progress)) (tui.Result, error) {
	if req.Archive == "" {
		return tui.Result{}, errors.New("export needs an archive file")
	}
	if st, err := os.Stat(req.Archive); err == nil && st.Size() > 0 {
		return tui.Result{}, fmt.Errorf("%s exists: choose a new file", req.Archive)
	}
	ab, pub, _, err := openArchive(ctx, f, req.Archive, "file://"+req.Archive, b, req.Queue)
	if err != nil {
		return tui.Result{}, err
	}
	total := int64(len(req.Messages))
	res, err := inspect.Export(ctx, inspect.Messages(req.Messages), req.Queue, pub, broker.Destination{Kind: broker.ToFile, Path: req.Archive},
		inspect.ExportOptions{Progress: func(n int64) { progress(tui.Progress{Done: n, Total: total}) }})
	if cerr := ab.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", req.Archive, cerr)
	}
	if err != nil {
		return tui.Result{Done: res.Exported}, err
	}
	return tui.Result{Done: res.Exported, Summary: fmt.Sprintf("exported %d messages to %s", res.Exported, req.Archive)}, nil
}
