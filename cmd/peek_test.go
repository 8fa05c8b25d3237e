package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestPeekFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		output  string
		wantErr string
		check   func(t *testing.T, o *peekOptions)
	}{
		{name: "defaults", args: []string{"q"}, check: func(t *testing.T, o *peekOptions) {
			if o.Ref != "q" || o.Limit != 20 || o.format != OutputTable || o.filter != nil {
				t.Errorf("ref %q, limit %d, format %v, filter set %t; want q, 20, %v, false", o.Ref, o.Limit, o.format, o.filter != nil, OutputTable)
			}
			if po := o.Peek.options(inspectNow, 0); po.Mode != broker.PeekAuto || po.Force {
				t.Errorf("peek mode %v, force %t; want %v, false", po.Mode, po.Force, broker.PeekAuto)
			}
		}},
		{name: "everything", args: []string{"q", "-n", "5", "--filter", ".reason", "--mode", "rotate", "--offset", "first", "--force", "--max-unacked", "50"}, output: "json", check: func(t *testing.T, o *peekOptions) {
			po := o.Peek.options(inspectNow, 5)
			if o.Limit != 5 || o.filter == nil || po.Mode != broker.PeekRotate || po.Offset != "first" || !po.Force || po.MaxUnacked != 50 || o.format != OutputJSON {
				t.Errorf("limit %d, filter set %t, format %v, peek mode %v, offset %q, force %t, max unacked %d; want 5, true, %v, %v, first, true, 50",
					o.Limit, o.filter != nil, o.format, po.Mode, po.Offset, po.Force, po.MaxUnacked, OutputJSON, broker.PeekRotate)
			}
		}},
		{name: "since", args: []string{"q", "--since", "2h"}, check: func(t *testing.T, o *peekOptions) {
			if po := o.Peek.options(inspectNow, 0); po.Offset != "2026-03-01T10:00:00Z" {
				t.Errorf("offset %q", po.Offset)
			}
		}},
		{name: "since days", args: []string{"q", "--since", "7d"}, check: func(t *testing.T, o *peekOptions) {
			if po := o.Peek.options(inspectNow, 0); po.Offset != "2026-02-22T12:00:00Z" {
				t.Errorf("offset %q", po.Offset)
			}
		}},
		{name: "raw nul", args: []string{"q", "-0"}, output: "raw", check: func(t *testing.T, o *peekOptions) {
			if !o.Null || o.format != OutputRaw {
				t.Errorf("null %t, format %v; want true, %v", o.Null, o.format, OutputRaw)
			}
		}},
		{name: "no queue", args: []string{}, wantErr: "accepts 1 arg"},
		{name: "bad mode", args: []string{"q", "--mode", "yolo"}, wantErr: "unknown `--mode` \"yolo\": use one of hold, rotate"},
		{name: "bad filter", args: []string{"q", "--filter", ".a | }"}, wantErr: "`--filter`: invalid jq expression at column 6"},
		{name: "bad reason", args: []string{"q", "--reason", "foo("}, wantErr: "`--reason`: invalid jq"},
		{name: "bad output", args: []string{"q"}, output: "csv", wantErr: "unknown `--output` \"csv\" for this command: use one of table, json, jsonl, raw"},
		{name: "nul without raw", args: []string{"q", "-0"}, wantErr: "`-0` separates raw bodies"},
		{name: "negative limit", args: []string{"q", "-n", "-1"}, wantErr: "`--limit` must be 0"},
		{name: "offset and since", args: []string{"q", "--offset", "1", "--since", "1h"}, wantErr: "give only one"},
		{name: "bad since", args: []string{"q", "--since", "yesterday"}, wantErr: "bad `--since` \"yesterday\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := &Factory{IO: ios, Options: &GlobalOptions{Output: c.output}}
			var got *peekOptions
			cmd := newCmdPeek(f, func(o *peekOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			c.check(t, got)
		})
	}
}

func runPeek(t *testing.T, b *fakeQueueBroker, tty bool, output string, args ...string) (string, string, error) {
	t.Helper()
	f, _, outputs := inspectFactory(t, b, tty)
	f.Options.Output = output
	cmd := newCmdPeek(f, nil)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	out, errOut := outputs()
	return out, errOut, err
}

func TestPeekTable(t *testing.T) {
	b := &fakeQueueBroker{msgs: deadLetters(30), report: broker.PeekReport{Mode: broker.PeekHold, Changed: "20 messages now carry the redelivered flag"}}
	out, errOut, err := runPeek(t, b, false, "", "orders.dlq")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 21 || lines[0] != "ID\tAGE\tSIZE\tDELIVERIES\tDEATHS\tSOURCE\tREASON\tBODY" {
		t.Fatalf("want header + 20 rows, got %d:\n%s", len(lines), out)
	}
	if lines[3] != "id-002\t3m\t50B\t2\t1\torders\ttimeout \"x\" line2\t{\"n\":2,\"tier\":\"t0\",\"error\":\"timeout \\\"x\\\"\\nline2\"}" {
		t.Errorf("row: %q", lines[3])
	}
	if b.peeks[0].Limit != 20 {
		t.Errorf("peek limit %d", b.peeks[0].Limit)
	}
	if errOut != "20 messages now carry the redelivered flag\n" {
		t.Errorf("stderr %q", errOut)
	}
}

// On a terminal IDs are printed in full (they are what `redrive --id`
// takes), and both counts have their column.
func TestPeekTableTTYFullIDs(t *testing.T) {
	msgs := deadLetters(2)
	msgs[0].ID = "6400749a-e48d-448b-8e67-c0ffee000001"
	msgs[1].ID = "6400749a-e48d-448b-8e67-c0ffee000002-and-longer"
	msgs[1].Death.Count = 3
	b := &fakeQueueBroker{msgs: msgs}
	out, _, err := runPeek(t, b, true, "", "orders.dlq")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.Contains(lines[0], "DELIVERIES") || !strings.Contains(lines[0], "DEATHS") {
		t.Errorf("header %q", lines[0])
	}
	for i, m := range msgs {
		if f := strings.Fields(lines[i+1]); len(f) < 5 || f[0] != m.ID || f[4] != strconv.FormatInt(m.Death.Count, 10) {
			t.Errorf("row %d: got %q, want it to start with the full ID %s and show %d deaths", i, lines[i+1], m.ID, m.Death.Count)
		}
	}
}

func TestPeekTableTTY(t *testing.T) {
	b := &fakeQueueBroker{msgs: deadLetters(3)}
	out, errOut, err := runPeek(t, b, true, "", "orders.dlq")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || strings.Contains(out, "\t") {
		t.Fatalf("aligned table expected:\n%s", out)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line wider than the terminal (%d): %q", n, l)
		}
	}
	if !strings.Contains(lines[1], "1m") || !strings.Contains(lines[1], "rejected") {
		t.Errorf("row %q", lines[1])
	}
	if errOut != "" {
		t.Errorf("nothing changed, nothing to say: %q", errOut)
	}
}

func TestPeekJSON(t *testing.T) {
	b := &fakeQueueBroker{msgs: deadLetters(6)}
	out, _, err := runPeek(t, b, false, "json", "orders.dlq", "--filter", `.death.reason == "expired"`)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	if len(docs) != 2 || docs[0]["id"] != "id-001" || docs[1]["id"] != "id-004" {
		t.Fatalf("filtered docs: %v", docs)
	}
	d := docs[0]
	if d["source"] != "payments" || d["body_kind"] != "json" || d["body"].(map[string]any)["tier"] != "t1" || d["death"].(map[string]any)["reason"] != "expired" {
		t.Errorf("doc source %v, body_kind %v, body %v, death %v; want payments, json, tier t1, reason expired", d["source"], d["body_kind"], d["body"], d["death"])
	}
	if b.peeks[0].Limit != 0 {
		t.Errorf("a filtered peek reads past non-matching messages: limit %d", b.peeks[0].Limit)
	}

	out, _, err = runPeek(t, &fakeQueueBroker{}, false, "json", "empty")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty queue: %q %v", out, err)
	}
	out, _, err = runPeek(t, &fakeQueueBroker{msgs: deadLetters(3)}, false, "jsonl", "q")
	if err != nil || strings.Count(out, "\n") != 3 {
		t.Errorf("jsonl: %q", out)
	}
}

func TestPeekRaw(t *testing.T) {
	b := &fakeQueueBroker{msgs: deadLetters(3)}
	out, _, err := runPeek(t, b, false, "raw", "q", "-0")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(out, "\x00")
	if len(parts) != 4 || parts[2] != string(b.msgs[2].Body) {
		t.Errorf("raw NUL-separated bodies: %q", out)
	}
}

func TestPeekUnsafeRefused(t *testing.T) {
	refusal := broker.Errorf(broker.ErrUnsafe, "peek `jobs`", "quorum queue with x-delivery-limit 3: a hold peek would raise delivery counts; use `--mode rotate`")
	b := &fakeQueueBroker{err: refusal}
	_, _, err := runPeek(t, b, false, "", "jobs", "--mode", "hold")
	if !errors.Is(err, broker.ErrUnsafe) || exitCodeFor(err) != ExitError || !strings.Contains(err.Error(), "use `--mode rotate`") {
		t.Errorf("refusal: %v (exit %d)", err, exitCodeFor(err))
	}
	if b.peeks[0].Mode != broker.PeekHold {
		t.Errorf("mode %v, want %v", b.peeks[0].Mode, broker.PeekHold)
	}
}

func TestPeekNoMatch(t *testing.T) {
	b := &fakeQueueBroker{msgs: deadLetters(4)}
	out, errOut, err := runPeek(t, b, false, "", "q", "--filter", ".size > 1e9")
	if err != nil || out != "" || !strings.Contains(errOut, "no message matched `--filter` among 4 read") {
		t.Errorf("%q %q %v", out, errOut, err)
	}
}

func TestPeekDemoAcceptance(t *testing.T) {
	stdout, stderr, code := runDLQ(t, "peek", "--broker", "demo:", "--limit", "3", "--output", "json", "orders.dlq")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || len(docs) != 3 {
		t.Fatalf("demo peek: %v %s", err, stdout)
	}
	for _, d := range docs {
		if d["id"] == "" || d["reason"] == "" {
			t.Errorf("demo message without id or reason: %v", d)
		}
	}
}

// A filter path that is null in every message is named on stderr with the
// nearest path that exists; discard refuses it unless --force.
func TestFilterPathNullEverywhere(t *testing.T) {
	const warn = "`.body.totl` is null in all 150 messages examined; did you mean `.body.total`?"
	for _, args := range [][]string{
		{"peek", "orders.dlq", "--filter", ".body.totl > 100"},
		{"stats", "orders.dlq", "--filter", ".body.totl > 100"},
		{"redrive", "orders.dlq", "--dry-run", "--to", "file://" + filepath.Join(t.TempDir(), "x.jsonl"), "--filter", ".body.totl > 100"},
	} {
		_, stderr, code := runDLQ(t, append([]string{"--broker", "demo:"}, args...)...)
		if code != ExitOK || !strings.Contains(stderr, warn) {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, stderr)
		}
	}
	_, stderr, code := runDLQ(t, "--broker", "demo:", "--yes", "discard", "orders.dlq", "--filter", ".body.totl == null", "--no-archive")
	if code != ExitError || !strings.Contains(stderr, warn) || !strings.Contains(stderr, "pass `--force`") {
		t.Errorf("discard: exit %d, stderr:\n%s", code, stderr)
	}
	// A path that exists in some message is no typo.
	_, stderr, _ = runDLQ(t, "--broker", "demo:", "peek", "orders.dlq", "--filter", ".body.total == \"0\"")
	if strings.Contains(stderr, "is null in all") {
		t.Errorf("existing path reported: %s", stderr)
	}
}
