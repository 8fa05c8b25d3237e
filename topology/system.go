package topology

import (
	"context"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
)

// brokerTopology is what the package knows of one broker system: its
// section of a spec and what expands, lints, draws, plans, exports and
// applies it. Each broker's files register one (system_rabbitmq.go,
// system_sqs.go), so that another broker adds files and edits none of the
// shared ones.
type brokerTopology struct {
	System broker.System
	// Section is the spec's key for this broker ("rabbitmq").
	Section string
	// Title names the system in a plan's heading ("RabbitMQ").
	Title string
	// Rules are its lint rules, as Rules lists them.
	Rules []Rule
	// Positions records where the objects of its section are in the
	// parsed file; sec is the section's node.
	Positions func(s *Spec, sec *yaml.Node, at func(*yaml.Node) Pos)
	// Expand expands its section, reporting whether the spec has one.
	Expand func(e *expander) bool
	// Declared reports whether the model has a part for it.
	Declared func(m *Model) bool
	Lint     func(m *Model, opts LintOptions, add addFunc)
	// Graph adds its part of the model to a graph.
	Graph func(g *graph, m *Model)
	// Plan fills p with the changes that make b match its part of m.
	Plan func(ctx context.Context, b broker.Broker, m *Model, p *Plan, opts PlanOptions) error
	// Export reads b's topology as a spec.
	Export func(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error)
	// Apply carries out a plan's changes on b in its order; done records a
	// change made, and fail words the error of the one that failed.
	Apply func(ctx context.Context, b broker.Broker, p *Plan, progress func(Change, error), a *applier) error
}

// systems are the registered broker systems, in the order their files
// register them (the order of their file names): a spec's sections are
// expanded, linted and drawn in it.
var systems []brokerTopology

// register adds a broker system; it is called from the init of the
// system's own file.
func register(t brokerTopology) {
	systems = append(systems, t)
	Rules = append(Rules, t.Rules...)
}

// systemOf is the registered system s.
func systemOf(s broker.System) (brokerTopology, bool) {
	for _, t := range systems {
		if t.System == s {
			return t, true
		}
	}
	return brokerTopology{}, false
}

// skipped names the sections of m that are for a system other than s's, as
// a plan reports them.
func skipped(s broker.System, m *Model) string {
	for _, t := range systems {
		if t.System != s && t.Declared(m) {
			return t.Section
		}
	}
	return ""
}

// unsupported refuses b for op: no registered system is b's. The message
// lists the registered systems' titles ("a RabbitMQ or SQS --broker").
func unsupported(op string, b broker.Broker) error {
	titles := make([]string, len(systems))
	for i, t := range systems {
		titles[i] = t.Title
	}
	return broker.Errorf(broker.ErrUnsupported, op, "topology needs a %s %s, not %s", orList(titles), broker.OptBroker, b.System())
}

// orList joins words as a sentence does: "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
