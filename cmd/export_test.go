package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

func TestExportFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *exportOptions)
	}{
		{name: "ok", args: []string{"q", "--to", "file://d.jsonl.gz", "--filter", ".size > 0", "-n", "9", "--mode", "rotate"}, check: func(t *testing.T, o *exportOptions) {
			if o.path != "d.jsonl.gz" || o.filter == nil || o.Limit != 9 || o.Peek.Mode != "rotate" {
				t.Errorf("path %q, filter set %t, limit %d, mode %q; want d.jsonl.gz, true, 9, rotate", o.path, o.filter != nil, o.Limit, o.Peek.Mode)
			}
		}},
		{name: "no to", args: []string{"q"}, wantErr: "`--to` is required"},
		{name: "not a file", args: []string{"q", "--to", "queue:x"}, wantErr: "is not an archive: use `file://PATH.jsonl`"},
		{name: "empty path", args: []string{"q", "--to", "file://"}, wantErr: "is not an archive"},
		{name: "bad filter", args: []string{"q", "--to", "file://x", "--filter", "..."}, wantErr: "`--filter`: invalid jq"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := &Factory{IO: ios, Options: &GlobalOptions{}}
			var got *exportOptions
			cmd := newCmdExport(f, func(o *exportOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("err %v, runF called %v", err, got != nil)
			}
			c.check(t, got)
		})
	}
}

func TestExportRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.jsonl.gz")
	src := &fakeQueueBroker{msgs: deadLetters(1200), report: broker.PeekReport{Mode: broker.PeekRotate}}
	f, _, outputs := inspectFactory(t, src, false)
	var dst *archive.Broker
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		var err error
		dst, err = archive.Create(strings.TrimPrefix(ref, "file://"), archive.WriterOptions{})
		return dst, "", err
	}
	f.Options.Output = "json"
	cmd := newCmdExport(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--to", "file://" + path, "--filter", `.death.reason == "expired"`})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, _ := outputs()
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["exported"] != 400.0 || res["read"] != 1200.0 {
		t.Fatalf("result %s %v", out, err)
	}
	// Read the archive back: 400 expired messages, bodies intact.
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	n := 0
	_, err = a.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error {
		if m.Death == nil {
			t.Fatalf("message %d: no death record", n)
		}
		if m.Death.Reason != "expired" || string(m.Body) != string(src.msgs[3*n+1].Body) {
			t.Fatalf("message %d: death reason %q, body %s; want expired, %s", n, m.Death.Reason, m.Body, src.msgs[3*n+1].Body)
		}
		n++
		return nil
	})
	if err != nil || n != 400 {
		t.Fatalf("archive holds %d: %v", n, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v", st.Mode().Perm())
	}

	// Exporting again to the same file is refused without --append.
	f2, _, _ := inspectFactory(t, &fakeQueueBroker{msgs: deadLetters(1)}, false)
	f2.OpenDestination = f.OpenDestination
	cmd = newCmdExport(f2, nil)
	cmd.SetArgs([]string{"orders.dlq", "--to", "file://" + path})
	err = cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "`--append`") {
		t.Errorf("existing file: %v", err)
	}
	cmd = newCmdExport(f2, nil)
	cmd.SetArgs([]string{"orders.dlq", "--to", "file://" + path, "--append"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestExportIntoItselfRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	ios, _, _, _ := Test()
	f := &Factory{IO: ios, Options: &GlobalOptions{}}
	cmd := newCmdExport(f, nil)
	cmd.SetArgs([]string{"file://" + path, "--to", "file://" + path})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "archive being read") {
		t.Errorf("export into the archive being read: %v", err)
	}
}

func TestExportDemoAcceptance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.jsonl")
	stdout, stderr, code := runDLQ(t, "export", "--broker", "demo:", "orders.dlq", "--to", "file://"+path, "--limit", "10")
	if code != ExitOK || !strings.Contains(stdout, "exported 10 messages") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	stdout, stderr, code = runDLQ(t, "stats", "file://"+path, "--output", "json")
	if code != ExitOK || !strings.Contains(stdout, `"total": 10`) {
		t.Fatalf("stats of the export: exit %d: %s %s", code, stdout, stderr)
	}
}

// TestExportToTheHomeDirectory: `--to file://~/x.jsonl` writes every
// message into the home directory's file. The file was created there
// with its header only, and the export failed on the first message.
func TestExportToTheHomeDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	stdout, stderr, code := runDLQ(t, "export", "demo:orders.dlq", "--to", "file://~/x.jsonl", "--limit", "10")
	if code != ExitOK || !strings.Contains(stdout, "exported 10 messages") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	stdout, stderr, code = runDLQ(t, "stats", "file://"+filepath.Join(home, "x.jsonl"), "--output", "json")
	if code != ExitOK || !strings.Contains(stdout, `"total": 10`) {
		t.Fatalf("stats of the export: exit %d: %s %s", code, stdout, stderr)
	}
}

// An archive read whole names what it exported from: every queue in it.
func TestExportWholeArchiveNamesItsSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "all.jsonl")
	stdout, stderr, code := runDLQ(t, "export", "demo:", "--to", "file://"+path)
	if code != ExitOK || !strings.Contains(stdout, "messages from every queue of demo: to file://") {
		t.Fatalf("exit %d: %q %s", code, stdout, stderr)
	}
}

// TestExportExtremeTimestamps: messages whose AMQP timestamp is 0, -1,
// 2^62 or the largest int64 (in the message, its properties and a header)
// are exported, redriven from the archive into another archive, and peeked
// there: every time comes back exactly. Export refused them ("year outside
// of range [0,9999]"), and so did discard's archive-first step.
func TestExportExtremeTimestamps(t *testing.T) {
	dir := t.TempDir()
	exported, redriven := filepath.Join(dir, "exported.jsonl"), filepath.Join(dir, "redriven.jsonl.gz")
	secs := []int64{0, -1, 1 << 62, math.MaxInt64}
	var msgs []*broker.Message
	for _, s := range secs {
		ts := time.Unix(s, 0).UTC()
		msgs = append(msgs, &broker.Message{ID: fmt.Sprintf("ts%d", s), System: broker.RabbitMQ, Queue: "orders.dlq", Body: []byte("x"),
			Timestamp: ts, Properties: broker.Properties{MessageID: fmt.Sprintf("ts%d", s), Timestamp: ts}, Headers: map[string]any{"sent": ts}})
	}
	f, _, _ := inspectFactory(t, &fakeQueueBroker{msgs: msgs, report: broker.PeekReport{Mode: broker.PeekRotate}}, false)
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		dst, err := archive.Create(strings.TrimPrefix(ref, "file://"), archive.WriterOptions{})
		return dst, "", err
	}
	cmd := newCmdExport(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--to", "file://" + exported})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("export: %v", err)
	}
	if _, stderr, code := runDLQ(t, "redrive", "file://"+exported, "--to", "file://"+redriven, "--yes"); code != 0 {
		t.Fatalf("redrive of the export into another archive: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := runDLQ(t, "peek", "file://"+redriven, "-o", "json")
	if code != 0 {
		t.Fatalf("peek of the redriven archive: exit %d: %s", code, stderr)
	}
	var docs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || len(docs) != len(secs) {
		t.Fatalf("peek -o json: %d messages, %v:\n%s", len(docs), err, stdout)
	}
	a, err := archive.Open(redriven)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	i := 0
	_, err = a.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error {
		want := time.Unix(secs[i], 0).UTC()
		if sent, _ := m.Headers["sent"].(time.Time); m.Timestamp != want || m.Properties.Timestamp != want || sent != want {
			t.Errorf("message %s: timestamp %d, property %d, header %d; want %d s", m.ID, m.Timestamp.Unix(), m.Properties.Timestamp.Unix(), sent.Unix(), secs[i])
		}
		i++
		return nil
	})
	if err != nil || i != len(secs) {
		t.Fatalf("read the redriven archive: %d messages, %v", i, err)
	}
}
