package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

// takerBroker is a queue whose message at a position dlq cannot decode;
// TakeUnreadable records what it was asked and what the archive held when
// the message was removed.
type takerBroker struct {
	fakeQueueBroker
	path     string // the archive to look into before removing
	opts     broker.TakeOptions
	archived []string // IDs in the archive when the message was removed
	taken    bool
	refuse   error
	dest     *broker.Queue // the destination queue's settings, when known
}

func (b *takerBroker) Queue(ctx context.Context, name string) (broker.Queue, error) {
	if b.dest == nil || b.dest.Name != name {
		return broker.Queue{}, broker.Errorf(broker.ErrNotFound, "queue "+name, "no such queue")
	}
	return *b.dest, nil
}

func (b *takerBroker) TakeUnreadable(ctx context.Context, queue string, opts broker.TakeOptions, keep func(*broker.Message) error) (*broker.Message, error) {
	b.opts = opts
	m := &broker.Message{ID: "p-0", Queue: queue, Body: []byte("p"), Position: "3", Unreadable: "its headers nest tables or arrays 41 deep"}
	if keep != nil {
		if err := keep(m); err != nil {
			return m, err
		}
	}
	if b.refuse != nil {
		return m, b.refuse
	}
	if b.path != "" {
		a, err := archive.Open(b.path)
		if err != nil {
			return m, err
		}
		_, _ = a.Peek(ctx, "", broker.PeekOptions{}, func(m *broker.Message) error {
			b.archived = append(b.archived, m.ID+" "+m.Unreadable)
			return nil
		})
		a.Close()
	}
	b.taken = true
	return m, nil
}

func takerFactory(t *testing.T, b *takerBroker) (*Factory, func() (string, string)) {
	ios, _, out, errOut := Test()
	f := &Factory{IO: ios, Options: &GlobalOptions{Yes: true, AuditLog: filepath.Join(t.TempDir(), "audit.jsonl")}, Now: func() time.Time { return inspectNow }}
	f.OpenQueue = func(ctx context.Context, ref string) (broker.Broker, string, error) { return b, ref, nil }
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		dst, err := archive.Create(strings.TrimPrefix(ref, "file://"), archive.WriterOptions{})
		return dst, ref, err
	}
	return f, func() (string, string) { return out.String(), errOut.String() }
}

// TestPositionFlags: --position takes one message as it is; what selects
// or reshapes messages, and a file destination for redrive, are refused.
func TestPositionFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"discard", "q", "--position", "3", "--archive-to", "file://x.jsonl"}, ""},
		{[]string{"discard", "q", "--position", "3", "--no-archive"}, ""},
		{[]string{"discard", "q", "--position", "3"}, "`--archive-to file://PATH.jsonl`"},
		{[]string{"discard", "q", "--position", "0", "--no-archive"}, "`--position` is 1"},
		{[]string{"discard", "q", "--position", "3", "--filter", ".x", "--no-archive"}, "drop `--filter`"},
		{[]string{"discard", "q", "--position", "3", "--dry-run", "--no-archive"}, "drop `--dry-run`"},
		{[]string{"redrive", "q", "--position", "3", "--to", "queue:elsewhere"}, ""},
		{[]string{"redrive", "q", "--position", "3", "--to", "file://x.jsonl"}, "use `dlq discard --position 3 --archive-to"},
		{[]string{"redrive", "q", "--position", "3", "--to", "queue:x", "--server-side"}, "drop `--server-side`"},
	} {
		ios, _, _, _ := Test()
		f := &Factory{IO: ios, Options: &GlobalOptions{}}
		var pos int64
		var cmd interface {
			SetArgs([]string)
			ExecuteContext(context.Context) error
		}
		if tc.args[0] == "discard" {
			cmd = newCmdDiscard(f, func(o *discardOptions) error { pos = o.Take.Position; return nil })
		} else {
			cmd = newCmdRedrive(f, func(o *redriveOptions) error { pos = o.Take.Position; return nil })
		}
		cmd.SetArgs(tc.args[1:])
		err := cmd.ExecuteContext(context.Background())
		switch {
		case tc.wantErr == "" && (err != nil || pos != 3):
			t.Errorf("%v: err %v, position %d; want 3", tc.args, err, pos)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}

// TestDiscardByPositionArchivesFirst: the message is in the archive,
// marked unreadable, before it is removed; the summary and the audit log
// say one message was removed; without a terminal --yes is needed.
func TestDiscardByPositionArchivesFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unreadable.jsonl")
	b := &takerBroker{path: path}
	f, outputs := takerFactory(t, b)
	f.Options.Output = "json"
	cmd := newCmdDiscard(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--archive-to", "file://" + path})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !b.taken || b.opts.Position != 3 || b.opts.To != nil {
		t.Fatalf("taken %v with %+v; want position 3, removed", b.taken, b.opts)
	}
	if len(b.archived) != 1 || !strings.HasPrefix(b.archived[0], "p-0 its headers nest") {
		t.Errorf("the archive held %q when the message was removed, want p-0 marked unreadable", b.archived)
	}
	out, _ := outputs()
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["discarded"] != 1.0 || res["archived"] != 1.0 {
		t.Errorf("summary %s (%v): want discarded 1, archived 1", out, err)
	}
	audit, _ := os.ReadFile(f.Options.AuditLog)
	if !strings.Contains(string(audit), `"action":"discard"`) || !strings.Contains(string(audit), "p-0") {
		t.Errorf("audit log: %s", audit)
	}

	// Without a terminal and without --yes nothing is taken.
	b2 := &takerBroker{}
	f2, _ := takerFactory(t, b2)
	f2.Options.Yes = false
	cmd = newCmdDiscard(f2, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--no-archive"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "--yes") || b2.opts.Position != 0 {
		t.Errorf("without --yes: err %v, asked %+v", err, b2.opts)
	}
}

// TestRedriveByPosition: the message goes to --to; a refusal of the broker
// (it could not be sure) is an error, and nothing counts as moved.
func TestRedriveByPosition(t *testing.T) {
	b := &takerBroker{}
	f, outputs := takerFactory(t, b)
	cmd := newCmdRedrive(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--to", "queue:orders.unreadable"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.opts.To == nil || b.opts.To.Queue != "orders.unreadable" {
		t.Errorf("asked %+v, want queue orders.unreadable", b.opts)
	}
	if out, _ := outputs(); !strings.Contains(out, "moved 1 of 1 messages examined in `orders.dlq`") {
		t.Errorf("output %q", out)
	}
	b2 := &takerBroker{refuse: broker.Errorf(broker.ErrConflict, "take", "another message came first; nothing was removed")}
	f2, _ := takerFactory(t, b2)
	cmd = newCmdRedrive(f2, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--to", "queue:x"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "nothing was removed") {
		t.Errorf("refused take: err %v", err)
	}
}

// TestRedriveByPositionIntoADroppingQueue: --position moves into a queue
// that drops its oldest messages past its limit only with --allow-drop, as
// every other redrive; without it nothing is taken.
func TestRedriveByPositionIntoADroppingQueue(t *testing.T) {
	limit := int64(10)
	dest := &broker.Queue{Name: "orders.small", Depth: 10, MaxLength: &limit, Overflow: broker.OverflowDropHead}
	b := &takerBroker{dest: dest}
	f, _ := takerFactory(t, b)
	cmd := newCmdRedrive(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--to", "queue:orders.small"})
	err := cmd.ExecuteContext(context.Background())
	if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "drop-head") || !strings.Contains(err.Error(), "nothing was moved") {
		t.Errorf("redrive --position into a drop-head queue: err = %v, want the drop refused", err)
	}
	if b.taken || b.opts.Position != 0 {
		t.Errorf("the take ran (%+v) although the destination drops", b.opts)
	}
	b = &takerBroker{dest: dest}
	f, _ = takerFactory(t, b)
	cmd = newCmdRedrive(f, nil)
	cmd.SetArgs([]string{"orders.dlq", "--position", "3", "--to", "queue:orders.small", "--allow-drop"})
	if err := cmd.ExecuteContext(context.Background()); err != nil || !b.taken {
		t.Errorf("redrive --position --allow-drop: err %v, taken %v; want it moved", err, b.taken)
	}
}
