package cmd

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/internal/human"
)

func marshalDoc(doc map[string]any, indent bool) ([]byte, error) {
	if indent {
		b, err := json.MarshalIndent(doc, "  ", "  ")
		return b, err
	}
	return json.Marshal(doc)
}

// truncate cuts s to n runes with an ellipsis and makes it one line.
func truncate(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// humanAge and humanBytes are the short formats the TUI uses too: 45s, 12m,
// 5h, 3d ("-" when unknown); 512B, 1.2K, 3.4M, 1.1G.
var (
	humanAge   = human.Age
	humanBytes = human.Bytes
)
