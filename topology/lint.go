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

// Rules lists every lint rule with its severity and what it catches.
var Rules = []struct {
	Name     string
	Severity Severity
	Doc      string
}{
	{"dlx-self", SevError, "a queue dead-letters into itself (a loop, or dropped by RabbitMQ's cycle detection)"},
	{"dlx-cycle", SevError, "queues dead-letter into each other in a cycle without a message TTL: messages loop forever"},
	{"dlx-unroutable", SevError, "no binding of the dead-letter exchange matches the dead-letter routing key: dead letters are dropped"},
	{"dlx-undeclared", SevWarning, "the dead-letter exchange is not declared in the spec (it must already exist)"},
	{"binding-undeclared", SevWarning, "a binding names an exchange or queue the spec does not declare"},
	{"ladder-ttl-order", SevWarning, "retry ladder tiers whose delays do not increase"},
	{"quorum-no-delivery-limit", SevWarning, "a quorum queue without a delivery limit: a poison message is redelivered forever (RabbitMQ 3.x; 4.x stops at 20)"},
	{"quorum-silent-drop", SevWarning, "a quorum queue with no dead-letter exchange and no delivery limit: RabbitMQ 4.x applies its default limit of 20 and drops a message after 20 deliveries without a trace"},
	{"limit-no-dlx", SevWarning, "a queue with a delivery limit and no dead-letter exchange: a message that reaches the limit is dropped without a trace"},
	{"classic-queue", SevWarning, "a durable classic queue where a quorum queue would serve (replicated, delivery limit)"},
	{"queue-version-refused", SevWarning, "a classic queue declared with `x-queue-version: 1`, which RabbitMQ 4.3 refuses (classic queues v1 are gone); an error with --rabbitmq-version 4.3 or later"},
	{"delayed-retry-version", SevWarning, "a native delayed retry, which RabbitMQ before 4.3 accepts and ignores (returned messages come back at once); an error with --rabbitmq-version before 4.3"},
	{"queue-mode-ignored", SevInfo, "`x-queue-mode`, which does nothing on RabbitMQ 3.12 and later (4.3 included)"},
	{"ttl-no-dlx", SevWarning, "a queue with a message TTL and no dead-letter exchange: expired messages vanish"},
	{"sqs-dlq-retention", SevError, "an SQS DLQ keeps messages no longer than its source (SQS keeps the original enqueue time)"},
	{"sqs-fifo-mismatch", SevError, "a FIFO source with a standard DLQ or the reverse (SQS rejects it)"},
	{"sqs-dlq-undeclared", SevWarning, "a RedrivePolicy names a queue the spec does not declare"},
	{"sqs-redrive-denied", SevError, "the DLQ's redrive_allow does not admit a source that names it"},
}

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
	for _, lint := range linters {
		lint(m, opts, add)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pos.Line != out[j].Pos.Line {
			return out[i].Pos.Line < out[j].Pos.Line
		}
		return out[i].Pos.Col < out[j].Pos.Col
	})
	return out
}

// linters check each broker's part of a model, in this order; each lives
// in its broker's file (lint_rabbitmq.go, lint_sqs.go).
var linters = []func(m *Model, opts LintOptions, add addFunc){lintRabbitMQ, lintSQSModel}

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
