package cmd

import "github.com/dlq-tools/dlq/internal/testdiff"

// diffText is testdiff.Text, under the name the TUI tests use.
var diffText = testdiff.Text
