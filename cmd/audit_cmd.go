package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
)

type auditOptions struct {
	f       *Factory
	Since   string
	Limit   int
	Queue   string
	Command string
	Broker  string // --broker, when given on the command line

	since  time.Time
	format string
}

func newCmdAudit(f *Factory, runF func(*auditOptions) error) *cobra.Command {
	opts := &auditOptions{f: f}
	cmd := &cobra.Command{
		Use:   "audit [--since DURATION|TIME] [--broker B] [--queue Q] [--command C]",
		Short: "List what mutating commands did (redrive, discard, purge, apply, TUI actions)",
		Long: `Every command that changes a broker appends one JSON record to the audit log:
time, OS user, host, the command line (secrets redacted), broker, source,
destination, filter and transform, counts, message fingerprints and outcome.
The counts are those of the command's JSON summary: examined, moved (a
redrive) or discarded (a discard or purge), archived, skipped:REASON and
failed:REASON. Earlier versions of dlq counted what a discard or purge
removed as moved: those records are listed as discarded too.
The log is $XDG_STATE_HOME/dlq/audit.jsonl (mode 0600) unless --audit-log,
DLQ_AUDIT_LOG or the context's audit_log says otherwise. A command that
changes something refuses to start when the log cannot be opened for
writing, and fails when its record cannot be written.

--broker (given here) keeps the records of that broker (its URL, without
the password, or part of it), --queue those whose source or destination is
that queue, --command those of that action (redrive, discard, purge,
topology-apply, tui-…; a prefix such as tui- matches all of them).`,
		Example: `  dlq audit
  dlq audit --since 24h
  dlq audit --since 2024-06-01T00:00:00Z -o json
  dlq audit --queue orders.dlq --command redrive`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if opts.format, err = outputFormat(f, OutputTable, OutputJSON, OutputCSV); err != nil {
				return err
			}
			if opts.Since != "" {
				if opts.since, err = parseSince(opts.Since, f.Now()); err != nil {
					return err
				}
			}
			if opts.Limit < 0 {
				return flagErrorf("`--limit` must be 0 (all) or more")
			}
			if c.Flags().Changed("broker") {
				opts.Broker = broker.Redact(f.Options.Broker)
			}
			if runF != nil {
				return runF(opts)
			}
			return auditRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Since, "since", "", "only records newer than a duration ago (24h) or an RFC 3339 time")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "only the most recent N records (0: all)")
	cmd.Flags().StringVar(&opts.Queue, "queue", "", "only records whose source or destination is this queue")
	cmd.Flags().StringVar(&opts.Command, "command", "", "only records of this action (redrive, discard, purge, topology-apply…; a prefix ending in - matches several)")
	addOutputFlags(cmd, f, OutputTable, OutputJSON, OutputCSV)
	return cmd
}

func auditRun(ctx context.Context, o *auditOptions) error {
	f := o.f
	path := f.AuditPath()
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if o.format == OutputJSON {
			return writeJSON(f.IO.Out, []AuditRecord{})
		}
		f.IO.Statusf("no audit records yet (%s)", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	defer fh.Close()
	var recs []AuditRecord
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	bad := 0
	for sc.Scan() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var r AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad++
			continue
		}
		if !o.since.IsZero() && r.Time.Before(o.since) || !o.matches(r) {
			continue
		}
		r.wordCounts()
		recs = append(recs, r)
		if o.Limit > 0 && len(recs) > o.Limit {
			recs = recs[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if bad > 0 {
		f.IO.Statusf("dlq: %d unreadable lines in %s were skipped", bad, path)
	}
	if o.format == OutputJSON {
		if recs == nil {
			recs = []AuditRecord{}
		}
		return writeJSON(f.IO.Out, recs)
	}
	t := NewTable("TIME", "USER", "ACTION", "SOURCE", "DESTINATION", "OUTCOME", "COUNTS")
	for _, r := range recs {
		t.Row(r.Time.Local().Format("2006-01-02 15:04:05"), r.User, r.Action, r.Source, r.Destination, r.Outcome, countsText(r.Counts))
	}
	if o.format == OutputCSV {
		return t.RenderCSV(f.IO.Out)
	}
	if t.Len() == 0 {
		f.IO.Statusf("no audit records since %s", o.since.Local().Format(time.RFC3339))
		return nil
	}
	t.Width = terminalWidth(f)
	return t.Render(f.IO.Out, f.IO.ColorEnabled())
}

func countsText(c map[string]int64) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

// matches applies --broker, --queue and --command.
func (o *auditOptions) matches(r AuditRecord) bool {
	switch {
	case o.Broker != "" && !strings.Contains(broker.Redact(r.Broker), o.Broker):
		return false
	case o.Queue != "" && r.Source != o.Queue && r.Destination != o.Queue && !strings.HasSuffix(r.Destination, ":"+o.Queue):
		return false
	case o.Command != "" && r.Action != o.Command && !(strings.HasSuffix(o.Command, "-") && strings.HasPrefix(r.Action, o.Command)):
		return false
	}
	return true
}
