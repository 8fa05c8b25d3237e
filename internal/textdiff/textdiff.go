// Package textdiff compares two texts line by line, for previews of what a
// change does to a message.
package textdiff

import (
	"fmt"
	"strings"
)

// maxCells bounds the longest-common-subsequence table; beyond it the
// changed middle is shown as all removed, then all added.
const maxCells = 4_000_000

// Lines returns a unified-style diff of two texts: each line prefixed with
// "  " (unchanged), "- " (removed) or "+ " (added), removals before the
// additions that replace them. A trailing newline is ignored.
func Lines(before, after string) []string {
	a := strings.Split(strings.TrimRight(before, "\n"), "\n")
	b := strings.Split(strings.TrimRight(after, "\n"), "\n")
	// Trim the common prefix and suffix, then compare the middle.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	out := make([]string, 0, len(a)+len(b)-p-s)
	for _, l := range a[:p] {
		out = append(out, "  "+l)
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am)*len(bm) > maxCells {
		for _, l := range am {
			out = append(out, "- "+l)
		}
		for _, l := range bm {
			out = append(out, "+ "+l)
		}
	} else {
		out = lcs(out, am, bm)
	}
	for _, l := range a[len(a)-s:] {
		out = append(out, "  "+l)
	}
	return out
}

func lcs(out, a, b []string) []string {
	n, m := len(a), len(b)
	dp := make([][]int32, n+1)
	for i := range dp {
		dp[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case dp[i+1][j] >= dp[i][j+1]:
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, "- "+a[i])
	}
	for ; j < m; j++ {
		out = append(out, "+ "+b[j])
	}
	return out
}

// Fold keeps context unchanged lines around each change of a diff from
// Lines and replaces longer unchanged runs with "  ⋯ N unchanged lines".
func Fold(lines []string, context int) []string {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if strings.HasPrefix(l, "  ") {
			continue
		}
		for j := max(0, i-context); j <= min(len(lines)-1, i+context); j++ {
			keep[j] = true
		}
	}
	var out []string
	skipped := 0
	for i, l := range lines {
		if keep[i] {
			if skipped > 0 {
				out = append(out, fmt.Sprintf("  ⋯ %d unchanged lines", skipped))
				skipped = 0
			}
			out = append(out, l)
			continue
		}
		skipped++
	}
	if skipped > 0 {
		out = append(out, fmt.Sprintf("  ⋯ %d unchanged lines", skipped))
	}
	return out
}
