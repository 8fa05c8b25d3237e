package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/dlq-tools/dlq/internal/human"
	"github.com/dlq-tools/dlq/internal/textdiff"
	"github.com/dlq-tools/dlq/redrive"
)

// diffContext is how many unchanged lines a transform's diff keeps around
// each change, as the TUI's edit review does.
const diffContext = 3

// printDiffs writes what a dry run's transform does to its first messages:
// a folded diff of each message document, or the error the transform gave
// for it, then how many more messages it would transform.
func printDiffs(w io.Writer, s redrive.Summary) {
	for _, d := range s.Diffs {
		id := human.Visible(d.ID)
		if d.Error != "" {
			fmt.Fprintf(w, "\n--- %s: the transform failed: %s\n", id, human.Visible(d.Error))
			continue
		}
		fmt.Fprintf(w, "\n--- %s before\n+++ %s after\n", id, id)
		for _, l := range textdiff.Fold(strings.Split(d.Lines, "\n"), diffContext) {
			fmt.Fprintln(w, human.Visible(l))
		}
	}
	if s.DiffsMore > 0 {
		fmt.Fprintf(w, "\n… and %d more messages through the transform (only the first %d are shown)\n", s.DiffsMore, len(s.Diffs))
	}
}
