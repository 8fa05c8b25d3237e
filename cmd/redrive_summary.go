package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/redrive"
)

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
	case err != nil && s.Moved > 0 && errors.Is(err, broker.ErrUnsupported):
		// Running it again meets the same message: its error says what to do.
		return "partial", Partial(fmt.Errorf("stopped after %s %d messages: %w", moving, s.Moved, err))
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

// saySelectedNone says on stderr when a run's selection matched no message.
func saySelectedNone(f *Factory, s selectFlags, sum redrive.Summary, runErr error) {
	if runErr == nil && s.any() && sum.Examined > 0 && sum.Moved == 0 && sum64(sum.Destinations) == 0 && sum.TotalFailed() == 0 {
		f.IO.Statusf("no messages %s; nothing was changed", describeSelection(s))
	}
}
