package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/inspect"
)

type exportOptions struct {
	f   *Factory
	ctx context.Context

	Ref    string
	To     string
	Filter string
	Limit  int
	Append bool
	Peek   peekFlags
	Groups groupFlag

	format string
	path   string
	filter *inspect.Query
}

func newCmdExport(f *Factory, runF func(*exportOptions) error) *cobra.Command {
	opts := &exportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "export QUEUE --to file://DUMP.jsonl[.gz]",
		Short: "Copy messages into an archive file without removing them",
		Long: `Copy the messages of a queue (all, or those --filter and --group select, at
most --limit)
into an archive file, for evidence, offline analysis with ` + "`dlq stats`" + ` and
` + "`dlq peek`" + `, or a later ` + "`dlq redrive file://…`" + `. The queue is only peeked, under
the rules of ` + "`dlq help peek-safety`" + `: nothing is removed.

The archive is dlq's JSON Lines format (gzip-compressed when the name ends in
.gz), created with mode 0600 because dead letters often carry personal data.
Messages are written in batches, each fsynced before it is counted; the count
printed is what the file holds. An existing file is refused unless --append.`,
		Example: `  dlq export orders.dlq --to file://orders-dlq.jsonl.gz
  dlq export orders.dlq --to file://timeouts.jsonl --filter '.reason | test("timeout")'
  dlq export orders.dlq --to file://read-timeouts.jsonl --group 2b50f3125b
  dlq export events.dlq --since 24h --to file://last-day.jsonl`,
	}
	takesQueue(cmd, f, func(c *cobra.Command, queue, format string) error {
		opts.Ref = queue
		opts.ctx = c.Context()
		opts.format = format
		if opts.To == "" {
			return flagErrorf("`--to` is required: name the archive, e.g. `--to file://dump.jsonl.gz`")
		}
		path, ok := archivePath(f, opts.To)
		if !ok {
			return flagErrorf("`--to` %q is not an archive: use `file://PATH.jsonl` or `file://PATH.jsonl.gz`", opts.To)
		}
		opts.path = path
		if opts.Limit < 0 {
			return flagErrorf("`--limit` must be 0 (all) or more")
		}
		if err := opts.Peek.validate(); err != nil {
			return err
		}
		var err error
		if opts.filter, err = compileFlag("--filter", opts.Filter); err != nil {
			return err
		}
		if err := opts.Groups.validate(nil); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return exportRun(opts.ctx, opts)
	})
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to", "", "archive to write: file://PATH.jsonl or file://PATH.jsonl.gz")
	_ = cmd.RegisterFlagCompletionFunc("to", completeArchive)
	fl.StringVarP(&opts.Filter, "filter", "q", "", "export only messages for which this jq expression is true")
	opts.Groups.register(cmd, "export")
	fl.IntVarP(&opts.Limit, "limit", "n", 0, "most messages to export (0: all)")
	fl.BoolVar(&opts.Append, "append", false, "append to an existing archive instead of refusing")
	opts.Peek.register(cmd)
	addOutputFlags(cmd, f, OutputTable, OutputJSON)
	return cmd
}

// exportWalk is the walk of an export: the peek flags (window first: on an
// archive it takes --since), the filter and the limit.
func exportWalk(opts *exportOptions, b broker.Broker, now time.Time) inspect.WalkOptions {
	win := opts.Peek.window(b, now)
	return inspect.WalkOptions{Peek: opts.Peek.options(now, 0), Filter: opts.filter, Groups: opts.Groups.sel, Limit: opts.Limit, Window: win, Now: now}
}

// exportPeek reads the whole queue the way stats does, unless only the
// first --limit messages are wanted (no filter).
func exportPeek(ctx context.Context, b broker.Broker, queue string, opts *exportOptions) broker.PeekOptions {
	po := opts.Peek.options(opts.f.Now(), 0)
	if opts.Limit > 0 && opts.filter == nil && opts.Groups.sel == nil {
		po.Limit = opts.Limit
	}
	return fullRead(ctx, b, queue, po)
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

func exportRun(ctx context.Context, opts *exportOptions) error {
	f := opts.f
	if path, ok := f.adapters().FilePath(opts.Ref); ok && samePath(path, opts.path) {
		return flagErrorf("`--to` is the archive being read: choose another file")
	}
	if st, err := os.Stat(opts.path); err == nil && st.Size() > 0 && !opts.Append {
		return flagErrorf("%s exists: choose a new file, or add `--append` to add to it", opts.path)
	}
	if f.OpenDestination == nil {
		return errors.New("archives cannot be written in this build")
	}
	b, p, queue, err := openPeeker(ctx, f, opts.Ref)
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := opts.Groups.resolve(ctx, f, b, queue, queue, opts.Peek.options(f.Now(), 0), false); err != nil {
		return err
	}
	db, pub, _, err := openArchive(ctx, f, "`--to "+opts.To+"`", opts.To, b, queue)
	if err != nil {
		return err
	}
	dest := broker.Destination{Kind: broker.ToFile, Path: opts.path}
	progress := newProgress(f, "exported")
	res, err := inspect.Export(ctx, p, queue, pub, dest, inspect.ExportOptions{
		Walk:     exportWalk(opts, b, f.Now()),
		Progress: progress.set,
	})
	progress.done()
	if cerr := db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", opts.To, cerr)
	}
	if res.Peek.Changed != "" {
		f.IO.Statusf("%s", res.Peek.Changed)
	}
	warnMissingPaths(f, "--filter", opts.filter)
	if opts.format == OutputJSON {
		if jerr := writeJSON(f.IO.Out, map[string]any{
			"exported": res.Exported, "read": res.Peek.Read, "queue": queue, "to": opts.To, "mode": res.Peek.Mode,
		}); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		from := queue
		if from == "" {
			// An archive read whole: every queue it holds.
			from = "every queue of " + b.String()
		}
		fmt.Fprintf(f.IO.Out, "exported %d messages from %s to %s\n", res.Exported, from, opts.To)
	}
	err = suggestQueue(ctx, b, queue, err)
	if err != nil && res.Exported > 0 {
		return Partial(fmt.Errorf("export stopped after %d messages: %w", res.Exported, err))
	}
	return err
}

// openArchive opens the archive ref (file://PATH) to write the messages of
// src's queue into, recording that source in its header and records. Errors
// name the archive as named says (the flag that gave it).
func openArchive(ctx context.Context, f *Factory, named, ref string, src broker.Broker, queue string) (broker.Broker, broker.Publisher, string, error) {
	b, opened, err := f.OpenDestination(ctx, ref)
	if err != nil {
		return nil, nil, "", err
	}
	if b == nil {
		// Not a file: the commands' flag checks refuse that, so this is a
		// reference that only looked like one.
		return nil, nil, "", flagErrorf("%s is not an archive: use file://PATH.jsonl or file://PATH.jsonl.gz", named)
	}
	p, ok := b.(broker.Publisher)
	if !ok {
		b.Close()
		return nil, nil, "", fmt.Errorf("%s cannot be written", named)
	}
	if s, ok := b.(interface{ SetSource(archive.Source) }); ok {
		s.SetSource(archive.Source{System: src.System(), Broker: src.String(), Queue: queue})
	}
	path, ok := f.adapters().FilePath(opened)
	if !ok {
		path = opened
	}
	return b, p, path, nil
}

// archivePath is the path of ref when it names a file that an adapter
// writes to (file://PATH, not empty); ok is false for any other
// reference.
func archivePath(f *Factory, ref string) (string, bool) {
	a, _, ok := f.adapters().Scheme(ref)
	if !ok || a.Target == nil {
		return "", false
	}
	path, ok := f.adapters().FilePath(ref)
	return path, ok && path != ""
}
