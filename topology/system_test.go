package topology

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
)

// otherBroker is a broker of a system the package does not ship.
type otherBroker struct{}

func (otherBroker) System() broker.System { return "other" }
func (otherBroker) String() string        { return "other://here" }
func (otherBroker) Close() error          { return nil }

// A broker system that registers its files is planned, applied, exported
// and linted through them: nothing shared names it.
func TestAnotherSystemRegisters(t *testing.T) {
	saved, savedRules := systems, Rules
	t.Cleanup(func() { systems, Rules = saved, savedRules })
	ctx := context.Background()
	b := otherBroker{}
	if _, err := MakePlan(ctx, b, &Model{}, PlanOptions{}); !errors.Is(err, broker.ErrUnsupported) {
		t.Fatalf("plan before it registers: got %v, want ErrUnsupported", err)
	}
	var applied, linted []string
	register(brokerTopology{
		System: "other", Section: "other", Title: "Other",
		Rules:     []Rule{{"other-rule", SevInfo, "a rule of its own"}},
		Positions: func(*Spec, *yaml.Node, func(*yaml.Node) Pos) {},
		Expand:    func(*expander) bool { return false },
		Declared:  func(*Model) bool { return false },
		Lint: func(m *Model, _ LintOptions, add addFunc) {
			linted = append(linted, "linted")
			add(SevInfo, "other-rule", Pos{Line: 1}, "x", "seen")
		},
		Graph: func(g *graph, _ *Model) { g.node("o:x", "x\nother", "queue") },
		Plan: func(_ context.Context, _ broker.Broker, _ *Model, p *Plan, _ PlanOptions) error {
			p.Changes = append(p.Changes, Change{Action: Create, System: "other", Kind: "thing", Name: "x", do: "x"})
			return nil
		},
		Export: func(context.Context, broker.Broker, ExportOptions) (*Spec, error) {
			return &Spec{Version: SpecVersion, NamePrefix: "other-"}, nil
		},
		Apply: func(_ context.Context, _ broker.Broker, p *Plan, _ func(Change, error), a *applier) error {
			for _, c := range p.Changes {
				applied = append(applied, c.do.(string))
				a.done(c)
			}
			return nil
		},
	})

	p, err := MakePlan(ctx, b, &Model{}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WritePlan(&out, p, false); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(out.String(), "\n"); head != "Other other://here" {
		t.Errorf("plan heading: got %q, want %q", head, "Other other://here")
	}
	res, err := Apply(ctx, b, p, nil)
	if err != nil || len(res.Applied) != 1 || strings.Join(applied, ",") != "x" {
		t.Errorf("apply: applied %v (result %d), err %v; want x", applied, len(res.Applied), err)
	}
	if s, err := Export(ctx, b, ExportOptions{}); err != nil || s.NamePrefix != "other-" {
		prefix := ""
		if s != nil {
			prefix = s.NamePrefix
		}
		t.Errorf("export: got name_prefix %q, %v; want other-", prefix, err)
	}
	if fs := Lint(&Model{}); len(fs) != 1 || fs[0].Rule != "other-rule" || len(linted) != 1 {
		t.Errorf("lint: got %d findings, %d calls; want its one finding", len(fs), len(linted))
	}
	if last := Rules[len(Rules)-1]; last.Name != "other-rule" {
		t.Errorf("Rules ends with %q, want other-rule", last.Name)
	}
	var g bytes.Buffer
	if err := WriteGraph(&g, &Model{}, GraphMermaid); err != nil || !strings.Contains(g.String(), "other") {
		t.Errorf("graph does not draw it: %q (%v)", g.String(), err)
	}
}

// The shipped systems register in the order of their files, which is the
// order of a spec's sections, of the lint rules and of the graph.
func TestSystemsRegisterInOrder(t *testing.T) {
	var got []string
	for _, s := range systems {
		got = append(got, string(s.System))
	}
	if strings.Join(got, ",") != "rabbitmq,sqs" {
		t.Errorf("systems: got %v, want [rabbitmq sqs]", got)
	}
	if Rules[0].Name != "dlx-self" || Rules[len(Rules)-1].Name != "sqs-redrive-denied" || len(Rules) != 18 {
		t.Errorf("Rules: got %d from %s to %s, want 18 from dlx-self to sqs-redrive-denied", len(Rules), Rules[0].Name, Rules[len(Rules)-1].Name)
	}
}
