package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/topology"
)

// fakeTopoBroker is a RabbitMQ vhost in memory that records what is applied.
// verify fails the test when an expected number of changes never came.
type fakeTopoBroker struct {
	mu      sync.Mutex
	top     broker.RabbitTopology
	applied []broker.RabbitChange
	closed  bool
}

func (b *fakeTopoBroker) System() broker.System { return broker.RabbitMQ }
func (b *fakeTopoBroker) String() string        { return "amqp://ops@fake:5672/" }
func (b *fakeTopoBroker) Close() error          { b.closed = true; return nil }
func (b *fakeTopoBroker) ReadRabbitTopology(ctx context.Context) (broker.RabbitTopology, error) {
	return b.top, nil
}

func (b *fakeTopoBroker) ApplyRabbitChange(ctx context.Context, c broker.RabbitChange) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.applied = append(b.applied, c)
	switch {
	case c.Exchange != nil && c.Action == broker.Declare:
		b.top.Exchanges = append(b.top.Exchanges, *c.Exchange)
	case c.Queue != nil && c.Action == broker.Declare:
		b.top.Queues = append(b.top.Queues, *c.Queue)
	case c.Binding != nil && c.Action == broker.Declare:
		b.top.Bindings = append(b.top.Bindings, *c.Binding)
	case c.Policy != nil && c.Action == broker.Declare:
		b.top.Policies = append(b.top.Policies, *c.Policy)
	}
	return nil
}

func (b *fakeTopoBroker) verify(t *testing.T, applied int) {
	t.Helper()
	if len(b.applied) != applied {
		t.Fatalf("want %d changes applied, got %d:\n%s", applied, len(b.applied), testdiff.Render(b.applied))
	}
	if !b.closed {
		t.Error("the broker was never closed")
	}
}

const ladderSpec = "../topology/testdata/examples/retry-ladder.yaml"

func topoFactory(t *testing.T, b *fakeTopoBroker, tty bool) (*Factory, func() (string, string)) {
	ios, _, out, errOut := Test()
	ios.SetTTY(tty)
	f := NewFactory(ios, []string{"topology"})
	f.OpenBroker = func(ctx context.Context) (broker.Broker, error) { return b, nil }
	return f, func() (string, string) { return out.String(), errOut.String() }
}

func TestTopologyFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(t *testing.T, o any)
	}{
		{args: []string{"plan"}, wantErr: "`-f` is required"},
		{args: []string{"plan", "-f", "x.yaml", "--detailed-exitcode", "--prune"}, check: func(t *testing.T, o any) {
			p := o.(*topologyPlanOptions)
			if p.File != "x.yaml" || !p.DetailedExitcode || !p.Prune {
				t.Errorf("file %q, detailed exit code %t, prune %t; want x.yaml, true, true", p.File, p.DetailedExitcode, p.Prune)
			}
		}},
		{args: []string{"apply"}, wantErr: "`-f` is required"},
		{args: []string{"apply", "-f", "-", "--prune"}, check: func(t *testing.T, o any) {
			if p := o.(*topologyApplyOptions); p.File != "-" || !p.Prune {
				t.Errorf("file %q, prune %t; want -, true", p.File, p.Prune)
			}
		}},
		{args: []string{"lint", "-f", "x.yaml", "--strict"}, check: func(t *testing.T, o any) {
			if p := o.(*topologyLintOptions); !p.Strict {
				t.Errorf("strict %t, want true", p.Strict)
			}
		}},
		{args: []string{"lint", "-f", "x.yaml", "--rabbitmq-version", "four"}, wantErr: "--rabbitmq-version \"four\" is not a RabbitMQ version: give MAJOR.MINOR"},
		{args: []string{"lint", "-f", "x.yaml", "--rabbitmq-version", "4.3"}, check: func(t *testing.T, o any) {
			if p := o.(*topologyLintOptions); p.RabbitMQVersion != "4.3" {
				t.Errorf("RabbitMQ version %q, want 4.3", p.RabbitMQVersion)
			}
		}},
		{args: []string{"graph", "--format", "png"}, wantErr: "unknown `--format` \"png\": use mermaid or dot"},
		{args: []string{"graph", "-f", "x.yaml", "--prefix", "a"}, wantErr: "`--prefix` narrows"},
		{args: []string{"graph"}, check: func(t *testing.T, o any) {
			if p := o.(*topologyGraphOptions); p.Format != "mermaid" {
				t.Errorf("format %q, want mermaid", p.Format)
			}
		}},
		{args: []string{"export", "--vhost", "shop"}, wantErr: "`--vhost` needs `--broker amqp://…`"},
		{args: []string{"export", "--prefix", "orders."}, check: func(t *testing.T, o any) {
			if p := o.(*topologyExportOptions); p.Prefix != "orders." {
				t.Errorf("prefix %q, want orders.", p.Prefix)
			}
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ios, _, _, _ := Test()
			f := NewFactory(ios, nil)
			var got any
			c := newCmdTopology(f)
			for _, sub := range c.Commands() {
				c.RemoveCommand(sub)
			}
			c.AddCommand(
				newCmdTopologyPlan(f, func(o *topologyPlanOptions) error { got = o; return nil }),
				newCmdTopologyApply(f, func(o *topologyApplyOptions) error { got = o; return nil }),
				newCmdTopologyLint(f, func(o *topologyLintOptions) error { got = o; return nil }),
				newCmdTopologyGraph(f, func(o *topologyGraphOptions) error { got = o; return nil }),
				newCmdTopologyExport(f, func(o *topologyExportOptions) error { got = o; return nil }),
			)
			c.SetArgs(tc.args)
			c.SilenceErrors, c.SilenceUsage = true, true
			err := c.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("run function never called")
			}
			tc.check(t, got)
		})
	}
}

func TestTopologyPlanRun(t *testing.T) {
	for _, tty := range []bool{false, true} {
		b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
		f, outputs := topoFactory(t, b, tty)
		f.IO.SetColor(tty)
		err := topologyPlanRun(context.Background(), &topologyPlanOptions{f: f, File: ladderSpec, DetailedExitcode: true})
		if code := exitCodeFor(err); code != ExitChanges {
			t.Fatalf("tty=%v: exit %d (%v), want %d", tty, code, err, ExitChanges)
		}
		out, _ := outputs()
		for _, s := range []string{"+ exchange order.main.x", "+ policy order.retry.q.dlq-policy", "definition.message-ttl: 15000", "Plan: 11 to create"} {
			if !strings.Contains(out, s) {
				t.Errorf("tty=%v: plan lacks %q:\n%s", tty, s, out)
			}
		}
		if hasColor := strings.Contains(out, "\x1b["); hasColor != tty {
			t.Errorf("tty=%v: colour=%v", tty, hasColor)
		}
		b.verify(t, 0)
	}
}

func TestTopologyApplyRunThenNoChanges(t *testing.T) {
	b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
	f, outputs := topoFactory(t, b, false)
	f.Options.Yes = true
	if err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: ladderSpec}); err != nil {
		t.Fatal(err)
	}
	b.verify(t, 11)
	// Exchanges, then policies, then queues, then bindings.
	order := ""
	for _, c := range b.applied {
		switch {
		case c.Exchange != nil:
			order += "x"
		case c.Policy != nil:
			order += "p"
		case c.Queue != nil:
			order += "q"
		case c.Binding != nil:
			order += "b"
		}
	}
	if order != "xxxppqqqbbb" {
		t.Errorf("apply order %s", order)
	}
	out, _ := outputs()
	if !strings.Contains(out, "+ created queue order.main.q") || !strings.Contains(out, "Applied 11 change(s)") {
		t.Errorf("apply output:\n%s", out)
	}
	rec := lastAudit(t, f)
	if rec.Action != "topology-apply" || rec.Outcome != "ok" || rec.Counts["create"] != 11 || rec.Counts["applied"] != 11 {
		t.Errorf("audit action %q, outcome %q, counts %v; want topology-apply, ok, create 11 applied 11", rec.Action, rec.Outcome, rec.Counts)
	}

	b.closed = false
	f2, outputs2 := topoFactory(t, b, false)
	err := topologyPlanRun(context.Background(), &topologyPlanOptions{f: f2, File: ladderSpec, DetailedExitcode: true})
	if err != nil {
		t.Fatalf("second plan: %v", err)
	}
	if out, _ := outputs2(); !strings.Contains(out, "No changes") {
		t.Errorf("second plan:\n%s", out)
	}
}

func lastAudit(t *testing.T, f *Factory) AuditRecord {
	t.Helper()
	fh, err := os.Open(f.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var last AuditRecord
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

func TestTopologyApplyRefusals(t *testing.T) {
	t.Run("read-only", func(t *testing.T) {
		b := &fakeTopoBroker{}
		f, _ := topoFactory(t, b, false)
		f.Options.ReadOnly = true
		err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: ladderSpec})
		if exitCodeFor(err) != ExitDenied {
			t.Fatalf("want exit 4, got %v", err)
		}
		if len(b.applied) != 0 {
			t.Fatal("applied in read-only mode")
		}
	})
	t.Run("conflict", func(t *testing.T) {
		b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/", Queues: []broker.QueueDecl{
			{Name: "order.main.q", Durable: true, Arguments: map[string]any{"x-queue-type": "quorum"}},
		}}}
		f, outputs := topoFactory(t, b, false)
		err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: ladderSpec})
		if !topology.IsConflict(err) || exitCodeFor(err) != ExitError {
			t.Fatalf("want a conflict refusal, got %v", err)
		}
		b.verify(t, 0)
		if _, errOut := outputs(); !strings.Contains(errOut, "! queue order.main.q") || !strings.Contains(errOut, "fix:") {
			t.Errorf("the refusal does not show the conflict:\n%s", errOut)
		}
		if rec := lastAudit(t, f); rec.Outcome != "failed" {
			t.Errorf("audit outcome %q, want failed", rec.Outcome)
		}
	})
	t.Run("prune needs --yes without a terminal", func(t *testing.T) {
		dir := t.TempDir()
		spec := filepath.Join(dir, "s.yaml")
		os.WriteFile(spec, []byte("version: 1\nname_prefix: app.\nrabbitmq:\n  exchanges: [{name: a, type: topic}]\n"), 0o600)
		b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/", Exchanges: []broker.Exchange{
			{Name: "app.a", Type: "topic", Durable: true}, {Name: "app.old", Type: "topic", Durable: true}, {Name: "other", Type: "topic", Durable: true},
		}}}
		f, _ := topoFactory(t, b, false)
		err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: spec, Prune: true})
		if err == nil || !strings.Contains(err.Error(), "pass `--yes` to run it without a terminal") {
			t.Fatalf("want --yes required, got %v", err)
		}
		b.verify(t, 0)
		f.Options.Yes = true
		b.closed = false
		if err := topologyApplyRun(context.Background(), &topologyApplyOptions{f: f, File: spec, Prune: true}); err != nil {
			t.Fatal(err)
		}
		b.verify(t, 1)
		if c := b.applied[0]; c.Action != broker.Delete || c.Exchange == nil || c.Exchange.Name != "app.old" {
			t.Fatalf("pruned %v of exchange %s, want only a delete of app.old", c.Action, testdiff.Render(c.Exchange))
		}
	})
}

func TestTopologyLintRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`version: 1
rabbitmq:
  defaults: {queue_type: classic}
  exchanges: [{name: dlx, type: direct}]
  queues:
    - name: work
      dead_letter: {exchange: dlx, routing_key: nowhere}
`), 0o600)
	for _, format := range []string{"", OutputJSON} {
		ios, _, out, _ := Test()
		f := NewFactory(ios, nil)
		f.Options.Output = format
		err := topologyLintRun(&topologyLintOptions{f: f, File: bad})
		if exitCodeFor(err) != ExitError {
			t.Fatalf("want exit 1, got %v", err)
		}
		if format == OutputJSON {
			var v struct {
				Findings []topology.Finding
				Errors   int
			}
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Errors != 1 || v.Findings[0].Rule == "" {
				t.Fatalf("json %s: %v", out, err)
			}
		} else if !strings.Contains(out.String(), "bad.yaml:6:7: error: queue `work` dead-letters to `dlx`") {
			t.Fatalf("lint output:\n%s", out)
		}
	}
	// A malformed spec: every problem with its place, exit 1.
	os.WriteFile(bad, []byte("version: 1\nrabbitmq:\n  queus: []\n  exchanges: [{name: a}]\n"), 0o600)
	ios, _, _, errOut := Test()
	f := NewFactory(ios, nil)
	err := topologyLintRun(&topologyLintOptions{f: f, File: bad})
	if exitCodeFor(err) != ExitError || !strings.Contains(errOut.String(), "bad.yaml:3:3: unknown field `queus`") ||
		!strings.Contains(errOut.String(), "bad.yaml:4:15: exchange needs `type`") {
		t.Fatalf("err %v, stderr:\n%s", err, errOut)
	}
}

func TestTopologyGraphRun(t *testing.T) {
	for format, want := range map[string]string{"mermaid": "flowchart LR", "dot": "digraph topology"} {
		ios, _, out, _ := Test()
		f := NewFactory(ios, nil)
		if err := topologyGraphRun(context.Background(), &topologyGraphOptions{f: f, File: ladderSpec, Format: format}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "order.retry.q") {
			t.Errorf("%s graph:\n%s", format, out)
		}
	}
}

// TestTopologyAgainstRabbitMQ drives the binary's commands end to end:
// plan shows changes (exit 5), apply, plan shows none (exit 0), export
// plans clean, graph from the broker.
func TestTopologyAgainstRabbitMQ(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	prefix := brokertest.Name(t, "cli") + "."
	dir := t.TempDir()
	data, err := os.ReadFile(ladderSpec)
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "ladder.yaml")
	os.WriteFile(spec, []byte("name_prefix: "+prefix+"\n"+string(data)), 0o600)
	t.Setenv("DLQ_AUDIT_LOG", filepath.Join(dir, "audit.jsonl"))
	broker := []string{"--broker", env.AMQPURL, "--management-url", env.MgmtURL}
	t.Cleanup(func() {
		// Prune everything under the prefix: an empty spec with the prefix.
		empty := filepath.Join(dir, "empty.yaml")
		os.WriteFile(empty, []byte("version: 1\nname_prefix: "+prefix+"\nrabbitmq: {}\n"), 0o600)
		if _, stderr, code := runDLQ(t, append([]string{"topology", "apply", "-f", empty, "--prune", "--yes"}, broker...)...); code != 0 {
			t.Logf("cleanup: %s", stderr)
		}
	})
	out, stderr, code := runDLQ(t, append([]string{"topology", "plan", "-f", spec, "--detailed-exitcode"}, broker...)...)
	if code != ExitChanges || !strings.Contains(out, "+ queue "+prefix+"order.main.q") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runDLQ(t, append([]string{"topology", "apply", "-f", spec, "--yes"}, broker...)...)
	if code != 0 || !strings.Contains(out, "Applied 11 change(s)") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runDLQ(t, append([]string{"topology", "plan", "-f", spec, "--detailed-exitcode", "--output", "json"}, broker...)...)
	var p struct {
		Changes []any
		Summary topology.Summary
	}
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Changes) != 0 || p.Summary.Unchanged != 11 {
		t.Fatalf("second plan: exit %d\n%s\n%s", code, out, stderr)
	}
	exported := filepath.Join(dir, "export.yaml")
	if _, stderr, code = runDLQ(t, append([]string{"topology", "export", "--prefix", prefix, "--file", exported}, broker...)...); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	if out, stderr, code = runDLQ(t, append([]string{"topology", "plan", "-f", exported, "--detailed-exitcode"}, broker...)...); code != 0 {
		t.Fatalf("plan of the export: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = runDLQ(t, append([]string{"topology", "graph", "--prefix", prefix}, broker...)...)
	if code != 0 || !strings.Contains(out, prefix+"order.retry.q") {
		t.Fatalf("graph from the broker: exit %d\n%s", code, out)
	}
	if _, stderr, code = runDLQ(t, append([]string{"topology", "apply", "-f", spec, "--read-only"}, broker...)...); code != ExitDenied {
		t.Fatalf("read-only apply: exit %d %s", code, stderr)
	}
}
