package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// TestJQ runs `--jq` on several commands against the embedded demo archive
// and compares the whole output.
func TestJQ(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	f := NewFactory(nil, []string{"purge", "orders.dlq"})
	f.Options.AuditLog = auditLog
	f.Now = func() time.Time { return time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC) }
	for _, rec := range []AuditRecord{
		// The runs below all say --broker demo:, which audit takes as a filter.
		{User: "ana", Host: "h", Broker: "demo:", Action: "redrive", Source: "orders.dlq", Outcome: "ok", Counts: map[string]int64{"moved": 12}},
		{User: "ben", Host: "h", Broker: "demo:", Action: "purge", Source: "payments.dlq", Outcome: "partial"},
	} {
		if err := f.Audit(rec); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		args []string
		tty  bool
		want string
	}{
		{"queues: strings print raw", []string{"queues", "--jq", ".[].name"}, false,
			"orders.dlq\npayments.dlq\nbilling-dlq\nevents-dlq.fifo\n"},
		{"queues: objects one a line without a terminal", []string{"queues", "--jq", ".[] | select(.depth > 76) | {name, depth}"}, false,
			`{"depth":150,"name":"orders.dlq"}` + "\n" + `{"depth":80,"name":"payments.dlq"}` + "\n"},
		{"queues: indented on a terminal", []string{"queues", "--jq", ".[0] | {name, depth}"}, true,
			"{\n  \"depth\": 150,\n  \"name\": \"orders.dlq\"\n}\n"},
		{"peek", []string{"peek", "orders.dlq", "--limit", "2", "--jq", ".[].id"}, false,
			"6400749a-e48d-448b-8e67-c8cab29a1f63\ne9edf442-8e41-467a-b804-6993f5b37aa6\n"},
		{"peek jsonl: each line", []string{"peek", "orders.dlq", "--limit", "2", "-o", "jsonl", "--jq", ".source"}, false,
			"orders.q\norders.q\n"},
		{"stats", []string{"stats", "orders.dlq", "--group-by", "source", "--jq", "[.total, (.groups[] | .key.source, .count)]"}, false,
			`[150,"orders.q",150]` + "\n"},
		{"audit", []string{"audit", "--audit-log", auditLog, "--jq", `.[] | "\(.user) \(.action) \(.outcome)"`}, false,
			"ana redrive ok\nben purge partial\n"},
		{"version", []string{"version", "--jq", ".platform"}, false,
			runtime.GOOS + "/" + runtime.GOARCH + "\n"},
		{"numbers keep their digits", []string{"queues", "--jq", "[.[] | .depth] | add"}, false, "350\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runDLQWith(t, runOpts{TTY: tt.tty}, append([]string{"--broker", "demo:"}, tt.args...)...)
			if code != ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if d := testdiff.Text(tt.want, stdout); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestJQErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // the whole stderr
	}{
		{[]string{"queues", "--jq", ".["},
			"dlq: `--jq`: invalid jq expression at column 3: unexpected end of expression in `.[⟶`; an opening bracket, parenthesis or string is not closed, or an operator has nothing after it\n"},
		{[]string{"queues", "--jq", "nosuch(1)"},
			"dlq: `--jq`: invalid jq expression: function not defined: nosuch/1; check the function name and its number of arguments (name/arity)\n"},
		{[]string{"queues", "-o", "csv", "--jq", ".[]"},
			"dlq: `--jq` filters JSON output: drop `--output csv`, or use `--output json`\n"},
		{[]string{"peek", "orders.dlq", "-o", "raw", "--jq", ".[]"},
			"dlq: `--jq` filters JSON output: drop `--output raw`, or use `--output json`\n"},
		{[]string{"queues", "--jq", ".[0].depth | ascii_downcase"},
			"dlq: `--jq`: jq `.[0].depth | ascii_downcase`: ascii_downcase cannot be applied to: number (150)\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runDLQ(t, append([]string{"--broker", "demo:"}, tt.args...)...)
			if code != ExitError || stdout != "" {
				t.Errorf("exit %d, stdout %q: want exit 1 and no output", code, stdout)
			}
			if d := testdiff.Text(tt.want, stderr); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestJQTopologyPlan filters a plan made against a fake broker.
func TestJQTopologyPlan(t *testing.T) {
	b := &fakeTopoBroker{top: broker.RabbitTopology{Vhost: "/"}}
	f, outputs := topoFactory(t, b, false)
	code := execute(context.Background(), f, []string{"topology", "plan", "-f", ladderSpec, "--detailed-exitcode",
		"--jq", `.summary, ([.changes[] | select(.kind == "queue") | .name] | join(","))`})
	out, errOut := outputs()
	if code != ExitChanges {
		t.Fatalf("exit %d, stderr %q: want %d (changes pending)", code, errOut, ExitChanges)
	}
	want := `{"conflict":0,"create":11,"delete":0,"unchanged":0,"update":0}` + "\norder.main.q,order.retry.q,order.dead.q\n"
	if d := testdiff.Text(want, out); d != "" {
		t.Error(d)
	}
}

// TestOutputFormatsDeclared checks, for every command that declares its
// `--output` formats (for completion and the docs), that the command
// accepts exactly those: `-o bogus` must list the same ones.
func TestOutputFormatsDeclared(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{
		"dlq audit": nil, "dlq contexts": nil, "dlq queues": nil, "dlq version": nil,
		"dlq discard": {"q"}, "dlq export": {"q"}, "dlq peek": {"q"}, "dlq purge": {"q"},
		"dlq redrive": {"q"}, "dlq redrive status": {"q"}, "dlq redrive cancel": {"q"}, "dlq stats": {"q"},
		"dlq topology plan": {"-f", spec}, "dlq topology apply": {"-f", spec},
		"dlq topology lint": {"-f", spec}, "dlq topology export": nil,
		"dlq triage": {"q"}, "dlq triage apply": {"plan.yaml"}, "dlq triage rules": nil,
	}
	ios, _, _, _ := Test()
	root := NewRootCmd(NewFactory(ios, nil))
	seen := 0
	walk(root, func(c *cobra.Command) {
		formats := outputFormats(c)
		if formats == nil {
			return
		}
		seen++
		path := c.CommandPath()
		a, ok := args[path]
		if !ok {
			t.Errorf("%s declares --output formats but this test has no arguments for it: add it to the table", path)
			return
		}
		argv := append(strings.Fields(strings.TrimPrefix(path, "dlq")), a...)
		_, stderr, _ := runDLQ(t, append(argv, "--broker", "demo:", "-o", "bogus")...)
		want := "dlq: unknown `--output` \"bogus\" for this command: use one of " + strings.Join(formats, ", ") + "\n"
		if d := testdiff.Text(want, stderr); d != "" {
			t.Errorf("%s:\n%s", path, d)
		}
		if hasJQ := c.Flags().Lookup("jq") != nil; hasJQ != slices.Contains(formats, OutputJSON) {
			t.Errorf("%s: --jq flag %v, json output %v", path, hasJQ, slices.Contains(formats, OutputJSON))
		}
	})
	if seen != len(args) {
		t.Errorf("%d commands declare --output formats, the table has %d", seen, len(args))
	}
}

// walk calls fn for c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// TestJSONErrors: with -o json every failure is in the JSON on stdout: as
// the only document when the command wrote nothing, or as the "error"
// field of the result it writes anyway (a redrive's summary).
func TestJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		kind     string
		code     ExitCode
		inResult bool
	}{
		{[]string{"peek", "--broker", "demo:", "-o", "json", "no.such.queue"}, "not-found", ExitError, false},
		{[]string{"peek", "--broker", "demo:", "-o", "jsonl", "no.such.queue"}, "not-found", ExitError, false},
		{[]string{"stats", "--broker", "demo:", "-o", "json", "no.such.queue"}, "not-found", ExitError, false},
		{[]string{"queues", "--broker", "amqp://nobody:nothing@127.0.0.1:1/", "--timeout", "2s", "-o", "json"}, "unreachable", ExitError, false},
		{[]string{"redrive", "--broker", "demo:", "--to", "queue:x", "--yes", "-o", "json", "no.such.queue"}, "not-found", ExitError, false},
	} {
		stdout, _, code := runDLQ(t, tc.args...)
		var got struct {
			Error *jsonErrorBody `json:"error"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Error == nil {
			t.Errorf("dlq %s: stdout %q is not one JSON document with an error (%v)", strings.Join(tc.args, " "), stdout, err)
			continue
		}
		if got.Error.Kind != tc.kind || got.Error.ExitCode != code || code != tc.code || got.Error.Message == "" {
			t.Errorf("dlq %s: exit %d, error %+v; want exit %d, kind %s and a message", strings.Join(tc.args, " "), code, *got.Error, tc.code, tc.kind)
		}
	}
}
