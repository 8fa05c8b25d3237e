package topology

import (
	"fmt"
	"slices"
	"sort"
)

// Severity of a lint finding.
type Severity string

const (
	SevError   Severity = "error"
	SevWarning Severity = "warning"
	SevInfo    Severity = "info"
)

// Finding is one lint result.
type Finding struct {
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	Pos      Pos      `json:"position"`
	Object   string   `json:"object"`
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s [%s]", f.Pos, f.Severity, f.Message, f.Rule)
}

// Rule is a lint rule: its name, its severity and what it catches.
type Rule struct {
	Name     string
	Severity Severity
	Doc      string
}

// Rules lists every lint rule, each broker system's in the order they
// register (see register).
var Rules []Rule

// LintOptions tunes Lint.
type LintOptions struct {
	// RabbitMQVersion is the RabbitMQ version the spec is for ("4.3");
	// when set, what that version refuses or ignores is an error, and what
	// only other versions do is not reported. Empty: every version's rules,
	// as warnings that name the versions.
	RabbitMQVersion string
}

// Lint checks a model offline. Findings are sorted by position.
func Lint(m *Model) []Finding { return LintWith(m, LintOptions{}) }

// LintWith is Lint with options.
func LintWith(m *Model, opts LintOptions) []Finding {
	var out []Finding
	add := func(sev Severity, rule string, pos Pos, obj, format string, args ...any) {
		if slices.Contains(m.Ignore, rule) {
			return
		}
		if pos.File == "" {
			pos.File = m.File
		}
		out = append(out, Finding{Severity: sev, Rule: rule, Pos: pos, Object: obj, Message: fmt.Sprintf(format, args...)})
	}
	for _, t := range systems {
		t.Lint(m, opts, add)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pos.Line != out[j].Pos.Line {
			return out[i].Pos.Line < out[j].Pos.Line
		}
		return out[i].Pos.Col < out[j].Pos.Col
	})
	return out
}

// CountSeverity counts findings of one severity.
func CountSeverity(fs []Finding, s Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

type addFunc func(sev Severity, rule string, pos Pos, obj, format string, args ...any)
