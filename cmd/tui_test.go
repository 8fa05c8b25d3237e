package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/tui"
)

func TestTUIFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *tuiOptions)
	}{
		{name: "defaults", args: nil, check: func(t *testing.T, o *tuiOptions) {
			if o.Queue != "" || o.Limit != 100_000 || o.Refresh != 2*time.Second || o.Peek.Mode != "" {
				t.Fatalf("defaults %+v", o)
			}
		}},
		{name: "queue and flags", args: []string{"orders.dlq", "--limit", "500", "--refresh", "5s", "--mode", "rotate"}, check: func(t *testing.T, o *tuiOptions) {
			if o.Queue != "orders.dlq" || o.Limit != 500 || o.Refresh != 5*time.Second || o.Peek.Mode != "rotate" {
				t.Fatalf("parsed %+v", o)
			}
		}},
		{name: "archive", args: []string{"file://dead.jsonl"}, check: func(t *testing.T, o *tuiOptions) {
			if o.Queue != "file://dead.jsonl" {
				t.Fatalf("queue %q", o.Queue)
			}
		}},
		{name: "bad mode", args: []string{"--mode", "yolo"}, wantErr: "unknown `--mode`"},
		{name: "negative limit", args: []string{"--limit", "-1"}, wantErr: "`--limit` must be 0"},
		{name: "negative refresh", args: []string{"--refresh", "-1s"}, wantErr: "`--refresh` must be positive"},
		{name: "two queues", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := NewFactory(ios, nil)
			var got *tuiOptions
			c := newCmdTUI(f, func(o *tuiOptions) error { got = o; return nil })
			c.SetArgs(tt.args)
			c.SetOut(ios.Out)
			c.SetErr(ios.ErrOut)
			err := c.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was never called")
			}
			tt.check(t, got)
		})
	}
}

func TestTUINeedsATerminal(t *testing.T) {
	_, stderr, code := runDLQ(t, "tui", "--broker", "demo:")
	if code != ExitError || !strings.Contains(stderr, "`dlq tui` needs a terminal") {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
}

func TestTUIBackendReadOnlyHasNoMutations(t *testing.T) {
	b, err := archive.Demo()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	o := &tuiOptions{f: f, Limit: 10}
	ro := tuiBackend(f, b, o, true, f.Logger)
	if ro.Redrive != nil || ro.Discard != nil || ro.Replace != nil || !ro.ReadOnly {
		t.Fatal("read-only backend offers a mutation")
	}
	if ro.Export == nil || ro.Peek == nil || ro.Queues == nil || ro.Compile == nil {
		t.Fatal("read-only backend lacks a read capability")
	}
	rw := tuiBackend(f, b, o, false, f.Logger)
	if rw.Redrive == nil || rw.Discard == nil || rw.Replace == nil {
		t.Fatal("writable backend over an archive lacks redrive, discard or edit")
	}
}

func TestTUIBackendOverDemoArchive(t *testing.T) {
	b, err := archive.Demo()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	tb := tuiBackend(f, b, &tuiOptions{f: f, Limit: 1000}, true, f.Logger)
	// The editor offers attributes for the messages the broker keeps
	// attributes on (in an archive, those read from SQS), headers for others.
	for _, m := range []*broker.Message{{Queue: "q", System: broker.SQS}, {Queue: "q", System: broker.RabbitMQ}} {
		if got, want := tb.Attributes(m), m.System == broker.SQS; got != want {
			t.Errorf("a message archived from %s keeps attributes: %v, want %v", m.System, got, want)
		}
	}
	ctx := context.Background()
	qs, err := tb.Queues(ctx)
	if err != nil || len(qs) == 0 {
		t.Fatalf("queues %v %v", qs, err)
	}
	var msgs []*broker.Message
	if _, err := tb.Peek(ctx, "orders.dlq", func(m *broker.Message) error { msgs = append(msgs, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		t.Fatal("no messages in orders.dlq of the demo archive")
	}
	// Peeked messages are copies the list may keep.
	if len(msgs) > 1 && &msgs[0].Body[0] == &msgs[1].Body[0] {
		t.Fatal("peek reuses message buffers")
	}
	match, err := tb.Compile(`.death.reason == "rejected"`)
	if err != nil {
		t.Fatal(err)
	}
	n, want := 0, 0
	for _, m := range msgs {
		if ok, err := match(m); err != nil {
			t.Fatal(err)
		} else if ok {
			n++
		}
		if m.Death != nil && m.Death.Reason == "rejected" {
			want++
		}
	}
	if n != want || n == 0 || n == len(msgs) {
		t.Errorf("the filter matched %d of %d messages; %d died rejected (the demo has rejected and other deaths)", n, len(msgs), want)
	}
	if _, err := tb.Compile(".body |||"); err == nil {
		t.Fatal("invalid jq compiled")
	}
	// The TUI groups as `dlq stats` does: same keys, counts, IDs and
	// trends, for every grouping.
	for _, spec := range []string{"reason", "reason-text", "redrives", "source", "exchange", "routing-key", "age", "day", "hour", "body:.currency", "reason,source"} {
		got, err := tb.Group(ctx, spec, msgs)
		if err != nil {
			t.Fatalf("group %s: %v", spec, err)
		}
		gs, err := inspect.ParseGroupBy(spec)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := inspect.CollectStats(ctx, inspect.Messages(msgs), "orders.dlq", broker.PeekOptions{}, inspect.StatsOptions{GroupBy: gs, NoDuplicates: true, Now: f.Now()})
		if err != nil {
			t.Fatal(err)
		}
		var w, g []string
		for _, x := range want.Groups {
			w = append(w, fmt.Sprintf("%s %s %d %s", x.ID, strings.Join(x.Values, " · "), x.Count, inspect.Sparkline(x.Trend)))
		}
		for _, x := range got.Groups {
			g = append(g, fmt.Sprintf("%s %s %d %s", x.ID, x.Key, x.Count, x.Trend))
		}
		if d := diffText(strings.Join(w, "\n"), strings.Join(g, "\n")); d != "" {
			t.Errorf("group by %s: the TUI differs from dlq stats:\n%s", spec, d)
		}
		// Every message is in the group the TUI counts it in.
		n := make([]int, len(got.Groups))
		for _, m := range msgs {
			if i := got.Of(m); i >= 0 {
				n[i]++
			}
		}
		for i, x := range got.Groups {
			if n[i] != x.Count {
				t.Errorf("group by %s: %d messages map to %q, which counts %d", spec, n[i], x.Key, x.Count)
			}
		}
	}
	if _, err := tb.Group(ctx, "nonsense", msgs); err == nil {
		t.Fatal("unknown grouping accepted")
	}
	// Export writes exactly the given messages.
	path := t.TempDir() + "/out.jsonl"
	res, err := tb.Export(ctx, tui.ActionRequest{Queue: "orders.dlq", Archive: path, Messages: msgs[:3], IDs: []string{msgs[0].ID, msgs[1].ID, msgs[2].ID}}, func(tui.Progress) {})
	if err != nil || res.Done != 3 {
		t.Fatalf("export %+v %v", res, err)
	}
	ab, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ab.Close()
	got := 0
	if _, err := ab.Peek(ctx, "", broker.PeekOptions{}, func(*broker.Message) error { got++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Fatalf("archive holds %d messages, want 3", got)
	}
}

// TestTUISelectionKeepsTheTUIWords: the redrive and discard runs the TUI
// starts word the settings in their per-message errors as the TUI does.
func TestTUISelectionKeepsTheTUIWords(t *testing.T) {
	words := func(s broker.Setting) string { return "key " + string(s.Option) }
	ro, err := tuiSelection(tui.ActionRequest{Queue: "orders.dlq", IDs: []string{"m1"}, Words: words})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Words == nil {
		t.Fatal("redrive.Options.Words is nil: errors would name flags in the TUI")
	}
	if got := broker.RenderError(broker.Hintf("pass %s", broker.OptTransform), ro.Words); got != "pass key transform" {
		t.Errorf("rendered %q", got)
	}
}
