package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// archiveFlags are the archive-first flags of discard and purge.
type archiveFlags struct {
	ArchiveTo string
	NoArchive bool
}

func (a *archiveFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&a.ArchiveTo, "archive-to", "", "write every removed message to this archive (file://PATH.jsonl[.gz]) first, fsynced before anything is removed")
	c.Flags().BoolVar(&a.NoArchive, "no-archive", false, "remove without keeping a copy")
	_ = c.RegisterFlagCompletionFunc("archive-to", completeArchive)
}

// clause tells a confirmation where the removed messages go.
func (a *archiveFlags) clause() string {
	if a.NoArchive {
		return ", WITHOUT an archive"
	}
	return ", archived to " + a.ArchiveTo
}

// shownName is how a command names the queue it works on: its name on the
// broker, or the reference given (an archive's queue has no name).
func shownName(queue, ref string) string {
	if queue == "" {
		return ref
	}
	return queue
}

// openToChange opens the queue ref names for a command that changes it
// (verb), after checking that the context allows changes, which a dry run
// skips. name is the queue as the user is shown it.
func (f *Factory) openToChange(ctx context.Context, verb, ref string, dryRun bool) (b broker.Broker, queue, name string, err error) {
	if !dryRun {
		if err := f.CheckWritable(verb); err != nil {
			return nil, "", "", err
		}
	}
	if b, queue, err = f.OpenQueue(ctx, ref); err != nil {
		return nil, "", "", err
	}
	return b, queue, shownName(queue, ref), nil
}

func (a *archiveFlags) validate(verb string) error {
	switch {
	case a.ArchiveTo != "" && a.NoArchive:
		return flagErrorf("`--archive-to` and `--no-archive` exclude each other: choose one")
	case a.ArchiveTo == "" && !a.NoArchive:
		return flagErrorf("%s removes messages for good: pass `--archive-to file://PATH.jsonl` to keep a copy first, or `--no-archive`", verb)
	case a.ArchiveTo != "" && (!strings.HasPrefix(a.ArchiveTo, "file://") || strings.TrimPrefix(a.ArchiveTo, "file://") == ""):
		return flagErrorf("`--archive-to %s` is not an archive: use file://PATH.jsonl or file://PATH.jsonl.gz", a.ArchiveTo)
	}
	return nil
}

// open creates the archive for the messages of src's queue, and checks
// that it can be written; nil without one.
func (a *archiveFlags) open(ctx context.Context, f *Factory, src broker.Broker, queue string) (broker.Broker, broker.Publisher, broker.Destination, error) {
	if a.NoArchive {
		return nil, nil, broker.Destination{}, nil
	}
	named := "`--archive-to " + a.ArchiveTo + "`"
	b, p, path, err := openArchive(ctx, f, named, a.ArchiveTo, src, queue)
	if err != nil {
		return nil, nil, broker.Destination{}, err
	}
	if w, ok := b.(interface{ Writable() error }); ok {
		if err := w.Writable(); err != nil {
			b.Close()
			return nil, nil, broker.Destination{}, fmt.Errorf("%s: %w; nothing was changed", named, err)
		}
	}
	return b, p, broker.Destination{Kind: broker.ToFile, Path: path}, nil
}

type discardOptions struct {
	f   *Factory
	ctx context.Context

	Queue   string
	Select  selectFlags
	Archive archiveFlags
	DryRun  bool
	Force   bool
	Take    unreadableFlags

	format string
}

func newCmdDiscard(f *Factory, runF func(*discardOptions) error) *cobra.Command {
	opts := &discardOptions{f: f}
	cmd := &cobra.Command{
		Use:   "discard QUEUE (--filter JQ | --group ID… | --id ID… | --older-than D | --position N) (--archive-to file://… | --no-archive)",
		Short: "Remove selected dead letters, archiving them first",
		Long: `Remove the messages of QUEUE that --filter, --group, --id, --older-than or
--newer-than select (at most --limit); --group takes a failure group ID from
` + "`dlq stats QUEUE`" + ` (the queue is read once first to find the group's messages; that
read serves --dry-run and the check of --filter too). With --archive-to each batch is written to the
archive and fsynced before any of its messages is removed from the queue; a
crash leaves a message in the archive and the queue, never in neither.
Without an archive you must say --no-archive. Messages that are not selected
stay as they were (see ` + "`dlq help redrive-safety`" + `). On a terminal dlq asks
first; without one it needs --yes. To remove everything, use ` + "`dlq purge`" + `.

--position N removes the one message at that position that dlq cannot
decode (its headers nest deeper or hold more than dlq's AMQP client reads;
` + "`dlq peek`" + ` names it and its position): it is read through RabbitMQ's
management API and archived from there (header types approximate) before the
broker removes it; dlq refuses when it cannot be sure that the message
removed is the one archived (see ` + "`dlq help peek-safety`" + `).`,
		Example: `  dlq discard orders.dlq --filter '.reason == "expired"' --archive-to file://expired.jsonl.gz
  dlq discard orders.dlq --id 7f3c2a91,9d1e0b44 --no-archive --yes
  dlq discard orders.dlq --group 2b50f3125b --archive-to file://read-timeouts.jsonl
  dlq discard orders.dlq --older-than 720h --archive-to file://old.jsonl --dry-run
  dlq discard orders.dlq --position 3 --archive-to file://unreadable.jsonl`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Queue = queue
		opts.ctx = c.Context()
		opts.format = format
		if err := opts.Select.validate(); err != nil {
			return err
		}
		if err := opts.Take.validate(c, "filter", "group", "id", "exclude-id", "older-than", "newer-than", "limit", "dry-run", "force"); err != nil {
			return err
		}
		if !opts.Select.any() && opts.Take.Position == 0 {
			return flagErrorf("discard needs a selection: `--filter`, `--group`, `--id`, `--older-than`, `--newer-than` or `--position`; to remove every message use `dlq purge`")
		}
		if err := opts.Archive.validate("discard"); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		if opts.Take.Position > 0 {
			return takeUnreadableRun(opts.ctx, f, "discard", opts.Queue, opts.Take, nil, "discard", &opts.Archive, opts.format)
		}
		return discardRun(opts.ctx, opts)
	})
	opts.Select.register(cmd)
	opts.Archive.register(cmd)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "change nothing: count what would be removed")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "discard even when a path `--filter` reads is null in every message")
	opts.Take.register(cmd, "removes")
	addOutputFlags(cmd, f, OutputTable, OutputJSON)
	return cmd
}

func discardRun(ctx context.Context, o *discardOptions) error {
	f := o.f
	src, queue, name, err := f.openToChange(ctx, "discard", o.Queue, o.DryRun)
	if err != nil {
		return err
	}
	defer src.Close()
	if !o.DryRun {
		if err := needYes(f, "discard"); err != nil {
			return err
		}
	}
	// The groups' read serves the look that follows (the filter's check, a
	// dry run): the queue is read once.
	kept, err := o.Select.Groups.resolve(ctx, f, src, queue, name, broker.PeekOptions{}, o.DryRun || (!o.Force && o.Select.filter != nil))
	if err != nil {
		return endNothingSelected(f, o.format, err, newRemovalJSON(redrive.Summary{Source: name, Destination: "discard", DryRun: o.DryRun}, nil, nil))
	}
	if kept != nil && !o.DryRun && kept.rep.Changed != "" {
		f.IO.Statusf("%s", kept.rep.Changed)
	}
	var selected int64
	if !o.DryRun && !o.Force {
		if selected, err = checkFilterPaths(ctx, f, src, queue, o.Select, kept.readFrom()); err != nil {
			return err
		}
	}
	if !o.DryRun {
		what := fmt.Sprintf("discard the messages of `%s` that %s", name, describeSelection(o.Select)) + o.Archive.clause()
		if err := requireYes(f, what); err != nil {
			return err
		}
	}
	var arch broker.Publisher
	var dest broker.Destination
	if !o.DryRun {
		ab, p, d, err := o.Archive.open(ctx, f, src, queue)
		if err != nil {
			return err
		}
		if ab != nil {
			defer ab.Close()
		}
		arch, dest = p, d
	}
	ro := redrive.Options{DryRun: o.DryRun, Notice: func(s string) { f.IO.Statusf("dlq: %s", s) }, Words: flagSetting}
	o.Select.apply(&ro)
	if o.DryRun {
		ro.Read = kept.readFrom()
	}
	kept = nil
	ro.Selected = selected
	bar := newRedriveBar(f, "discarded")
	ro.Progress = bar.update
	restore := oneProcessor(src)
	sum, runErr := redrive.Discard(ctx, src, queue, arch, dest, ro)
	runErr = suggestQueue(ctx, src, queue, runErr)
	restore()
	bar.finish()
	if o.Force || o.DryRun {
		warnMissingPaths(f, "--filter", o.Select.filter)
	}
	saySelectedNone(f, o.Select, sum, runErr)
	sum.Source = name
	sum.Destination = o.Archive.ArchiveTo
	if sum.Destination == "" {
		sum.Destination = "discard"
	}
	return finishRemoval(f, o.format, "discard", src, name, o.Archive.ArchiveTo, o.Select.Filter, o.Select.Groups.IDs, sum, runErr, o.DryRun)
}

// checkFilterPaths reads the queue without changing it (a dry run) and
// refuses a filter that reads a path null in every message: `.body.ammount
// == null` would select them all, `.body.ammount > 1` none, and either is
// most likely a typo. It returns how many messages the selection holds (0
// without a filter: not read). read, when set, is a read of the queue
// already made (nil: read it).
func checkFilterPaths(ctx context.Context, f *Factory, src broker.Broker, queue string, s selectFlags, read broker.Peeker) (int64, error) {
	if s.filter == nil {
		return 0, nil
	}
	ro := redrive.Options{DryRun: true, MaxIDs: 1, Read: read}
	s.apply(&ro)
	sum, err := redrive.Discard(ctx, src, queue, nil, broker.Destination{}, ro)
	if err != nil {
		return 0, err
	}
	if warnMissingPaths(f, "--filter", s.filter) {
		return 0, flagErrorf("`--filter` reads a path that is null in every message: nothing was removed; fix the filter, or pass `--force` if that is meant")
	}
	return sum64(sum.Destinations), nil
}

func describeSelection(s selectFlags) string {
	var parts []string
	if s.Filter != "" {
		parts = append(parts, "match "+s.Filter)
	}
	if len(s.Groups.IDs) > 0 {
		parts = append(parts, "are in group "+strings.Join(s.Groups.IDs, " or "))
	}
	if len(s.IDs) > 0 {
		parts = append(parts, fmt.Sprintf("have one of %d IDs", len(s.IDs)))
	}
	if s.OlderThan > 0 {
		parts = append(parts, "are older than "+s.OlderThan.String())
	}
	if s.NewerThan > 0 {
		parts = append(parts, "are newer than "+s.NewerThan.String())
	}
	d := strings.Join(parts, " and ")
	if s.Limit > 0 {
		d += fmt.Sprintf(" (at most %d)", s.Limit)
	}
	return d
}

// finishRemoval audits, prints and maps the result of a discard or purge.
func finishRemoval(f *Factory, format, action string, src broker.Broker, queue, archive, filter string, groups []string, sum redrive.Summary, runErr error, dry bool) error {
	exitErr, aerr := f.auditRun(AuditRecord{Action: action, Broker: src.String(), Source: queue, Destination: archive,
		Filter: filter, Groups: groups}, sum, runErr, dry)
	exitErr = auditFailed(exitErr, aerr, fmt.Sprintf("removed %d messages", sum.Moved))
	if format == OutputJSON {
		if err := writeJSON(f.IO.Out, newRemovalJSON(sum, aerr, exitErr)); err != nil && exitErr == nil {
			return err
		}
		return exitErr
	}
	if failedToStart(format, sum, runErr) {
		return exitErr
	}
	w := f.IO.Out
	verb := "removed"
	if dry {
		verb = "would remove"
		fmt.Fprintf(w, "dry run: %s\n", dryRunResult(sum, "removed"))
		sum.Moved = sum64(sum.Destinations)
	}
	fmt.Fprintf(w, "%s %d of %d messages examined in `%s`", verb, sum.Moved, sum.Examined, queue)
	if sum.Archived > 0 {
		fmt.Fprintf(w, " (each archived first to %s)", archive)
	}
	fmt.Fprintln(w)
	if n := sum.TotalSkipped(); n > 0 {
		fmt.Fprintf(w, "left in the queue %d:\n", n)
		printCounts(w, "", sum.Skipped)
	}
	if n := sum.TotalFailed(); n > 0 {
		fmt.Fprintf(w, "could not remove %d (they stay in the queue):\n", n)
		printCounts(w, "", sum.Failed)
	}
	for _, e := range sum.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	return exitErr
}
