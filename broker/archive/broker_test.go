package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// writeArchive writes msgs to a new archive and returns its path.
func writeArchive(t testing.TB, name string, msgs ...*broker.Message) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	w, err := NewWriter(path, WriterOptions{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func msg(id, queue, origin string, born time.Time, body string) *broker.Message {
	m := &broker.Message{ID: id, System: broker.RabbitMQ, Queue: queue, Body: []byte(body), Timestamp: born}
	if origin != "" {
		m.Death = &broker.Death{Reason: "rejected", Queue: origin, Count: 1, First: born.Add(time.Second)}
	}
	return m
}

func TestQueues(t *testing.T) {
	now := time.Now().UTC()
	path := writeArchive(t, "x.jsonl",
		msg("1", "orders.dlq", "orders.q", now.Add(-2*time.Hour), "abc"),
		msg("2", "orders.dlq", "orders.retry", now.Add(-time.Hour), "de"),
		msg("3", "plain", "", now.Add(-time.Minute), "f"),
		&broker.Message{ID: "4", Queue: "plain", Body: []byte{0, 1, 2, 3, 4}},
	)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	qs, err := b.Queues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 {
		t.Fatalf("got %d queues %q, want 2", len(qs), testdiff.Pick(qs, func(q broker.Queue) string { return q.Name }))
	}
	o, p := qs[0], qs[1]
	if o.Name != "orders.dlq" || o.Depth != 2 || *o.Bytes != 5 || !o.IsDLQ || o.Kind != broker.KindArchive || o.System != broker.Archive {
		t.Errorf("orders.dlq: name %q, depth %d, bytes %d, dlq %t, kind %v, system %v; want orders.dlq, 2, 5, true, %v, %v", o.Name, o.Depth, *o.Bytes, o.IsDLQ, o.Kind, o.System, broker.KindArchive, broker.Archive)
	}
	if !reflect.DeepEqual(o.DeadLetterSources, []string{"orders.q", "orders.retry"}) {
		t.Errorf("sources = %v", o.DeadLetterSources)
	}
	if age := *o.OldestAge; age < 2*time.Hour-time.Minute || age > 2*time.Hour+time.Minute {
		t.Errorf("oldest age = %v, want about 2h (the first death)", age)
	}
	if p.Name != "plain" || p.Depth != 2 || *p.Bytes != 6 || p.IsDLQ {
		t.Errorf("plain: name %q, depth %d, bytes %d, dlq %t; want plain, 2, 6, false", p.Name, p.Depth, *p.Bytes, p.IsDLQ)
	}
	if o.URL != "file://"+path {
		t.Errorf("URL = %q", o.URL)
	}

	q, err := b.Queue(context.Background(), "plain")
	if err != nil || q.Depth != 2 {
		t.Errorf("Queue(plain): depth %d, %v; want 2", q.Depth, err)
	}
	all, err := b.Queue(context.Background(), "")
	if err != nil || all.Depth != 4 || all.Name != "x.jsonl" {
		t.Errorf("Queue(\"\"): name %q, depth %d, %v; want x.jsonl, 4", all.Name, all.Depth, err)
	}
	_, err = b.Queue(context.Background(), "nope")
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "dlq queues --broker file://") {
		t.Errorf("Queue(nope) err = %v", err)
	}
}

func TestPeek(t *testing.T) {
	path := writeArchive(t, "x.jsonl.gz",
		msg("1", "a", "", t0, "one"), msg("2", "b", "", t0, "two"),
		msg("3", "a", "", t0, "three"), msg("4", "a", "", t0, "four"))
	before, _ := os.ReadFile(path)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	peek := func(queue string, opts broker.PeekOptions) ([]string, broker.PeekReport, error) {
		var ids []string
		rep, err := b.Peek(context.Background(), queue, opts, func(m *broker.Message) error {
			ids = append(ids, m.ID+"@"+m.Position)
			if m.ID == "stop" {
				return broker.ErrStop
			}
			return nil
		})
		return ids, rep, err
	}
	tests := []struct {
		queue string
		opts  broker.PeekOptions
		want  []string
	}{
		{"a", broker.PeekOptions{}, []string{"1@line 2", "3@line 4", "4@line 5"}},
		{"a", broker.PeekOptions{Limit: 2}, []string{"1@line 2", "3@line 4"}},
		{"", broker.PeekOptions{}, []string{"1@line 2", "2@line 3", "3@line 4", "4@line 5"}},
		{"x.jsonl.gz", broker.PeekOptions{Limit: 1}, []string{"1@line 2"}},
		{"a", broker.PeekOptions{Offset: "line 4"}, []string{"3@line 4", "4@line 5"}},
		{"a", broker.PeekOptions{Offset: "5"}, []string{"4@line 5"}},
	}
	for _, tt := range tests {
		got, rep, err := peek(tt.queue, tt.opts)
		if err != nil {
			t.Fatalf("Peek(%q, %+v): %v", tt.queue, tt.opts, err)
		}
		if !reflect.DeepEqual(got, tt.want) || rep.Read != int64(len(tt.want)) || rep.Changed != "" {
			t.Errorf("Peek(%q, %+v) = %v, read %d, changed %q; want %v", tt.queue, tt.opts, got, rep.Read, rep.Changed, tt.want)
		}
	}
	if _, _, err := peek("zzz", broker.PeekOptions{}); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("peek of a missing queue: %v", err)
	}
	if _, _, err := peek("a", broker.PeekOptions{Offset: "last"}); err == nil {
		t.Error("offset `last` accepted")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("peeking changed the file")
	}
}

func TestConsumeNeverModifies(t *testing.T) {
	path := writeArchive(t, "x.jsonl", msg("1", "a", "", t0, "one"), msg("2", "b", "", t0, "two"), msg("3", "a", "", t0, "three"))
	before, _ := os.ReadFile(path)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for _, limit := range []int64{0, 1} {
		sub, err := b.Consume(ctx, "a", broker.ConsumeOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for {
			d, err := sub.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprint(d.Message.ID, ":", d.Receipt.Tag))
			if err := sub.Ack(ctx, d.Receipt); err != nil {
				t.Fatal(err)
			}
		}
		sub.Close()
		want := []string{"1:2", "3:4"}
		if limit == 1 {
			want = want[:1]
		}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("limit %d: got %v, want %v", limit, ids, want)
		}
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("consuming and acking changed the archive")
	}
	if _, err := b.Consume(ctx, "zzz", broker.ConsumeOptions{}); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("consume of a missing queue: %v", err)
	}
}

func TestPublish(t *testing.T) {
	dir := t.TempDir()
	src := writeArchive(t, "src.jsonl", msg("1", "a", "o", t0, "one"))
	b, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl.gz")
	m := fullMessage()
	errs, err := b.Publish(context.Background(), []broker.Outgoing{
		{Message: m, Dest: broker.Destination{Kind: broker.ToFile, Path: out}},
		{Message: m, Dest: broker.Destination{Kind: broker.ToQueue, Queue: "q"}},
		{Message: m, Dest: broker.Destination{Kind: broker.ToFile, Path: src}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], broker.ErrUnsupported) || !errors.Is(errs[2], broker.ErrConflict) {
		t.Fatalf("errs = %v", errs)
	}
	// Durable before Publish returned: readable by another reader before Close.
	o, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []*broker.Message
	o.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error { got = append(got, m); return nil })
	if len(got) != 1 || !reflect.DeepEqual(got[0], m) {
		t.Fatalf("published file holds %d messages, want 1 (-want +got):\n%s", len(got), testdiff.Diff([]*broker.Message{m}, got))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	c, err := Create(filepath.Join(dir, "new.jsonl"), WriterOptions{Source: Source{System: broker.SQS, Broker: "sqs://eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	errs, err = c.Publish(context.Background(), []broker.Outgoing{{Message: m, Dest: broker.Destination{Kind: broker.ToQueue, Queue: "q"}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("Create'd archive publish: %v %v", errs, err)
	}
	qs, err := c.Queues(context.Background())
	if err != nil || len(qs) != 1 || qs[0].Name != m.Queue {
		t.Errorf("queues after publish %q, %v; want [%s]", testdiff.Pick(qs, func(q broker.Queue) string { return q.Name }), err, m.Queue)
	}
	c.Close()
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("id,body\n1,x\n"), 0o600)
	tests := []struct{ path, want string }{
		{filepath.Join(dir, "missing.jsonl"), "no such file: check the path after `file://`"},
		{dir, "is a directory"},
		{bad, "line 1: not a dlq archive"},
		{"", "archive path is empty"},
	}
	for _, tt := range tests {
		_, err := Open(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q) = %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestDemo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := demoAt(now)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != "demo:" {
		t.Errorf("String = %q", b.String())
	}
	qs, err := b.Queues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	depth := map[string]int64{}
	for _, q := range qs {
		depth[q.Name] = q.Depth
		if !q.IsDLQ || q.OldestAge == nil {
			t.Errorf("queue %s: dlq %t, oldest age known %t; want both", q.Name, q.IsDLQ, q.OldestAge != nil)
		}
	}
	want := map[string]int64{"orders.dlq": 150, "payments.dlq": 80, "billing-dlq": 75, "events-dlq.fifo": 45}
	if !reflect.DeepEqual(depth, want) {
		t.Errorf("demo queues = %v, want %v", depth, want)
	}
	var newest time.Time
	var ladders, binary, noID, fifo int
	_, err = b.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error {
		if m.Death == nil {
			t.Errorf("message %s has no death record", m.ID)
			return nil
		}
		if m.Death.Last.After(newest) {
			newest = m.Death.Last
		}
		if len(m.Death.History) > 1 {
			ladders++
		}
		if !broker.IsText(m.Body) {
			binary++
		}
		if m.Properties.MessageID == "" {
			noID++
		}
		if m.SystemAttributes["MessageGroupId"] != "" {
			fifo++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := now.Sub(newest); d < 0 || d > time.Hour {
		t.Errorf("newest death %v before now, want within the hour", d)
	}
	if ladders == 0 || binary < 2 || noID == 0 || fifo != 45 {
		t.Errorf("ladders %d, binary %d, without message-id %d, fifo %d", ladders, binary, noID, fifo)
	}
}

func TestTargetCreatesNothingUntilPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	b, err := Target(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if qs, err := b.Queues(context.Background()); err != nil || len(qs) != 0 {
		t.Errorf("empty target: %v %v", qs, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("target created the file without a publish: %v", err)
	}
	b, _ = Target(path, WriterOptions{})
	errs, err := b.Publish(context.Background(), []broker.Outgoing{{Message: &broker.Message{ID: "1", Queue: "q"}, Dest: broker.Destination{Kind: broker.ToQueue, Queue: "q"}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("publish: %v %v", errs, err)
	}
	b.Close()
	o, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := o.Queue(context.Background(), "q"); err != nil || q.Depth != 1 {
		t.Errorf("after publish: depth %d, %v; want 1", q.Depth, err)
	}
	if _, err := Target(filepath.Join(path+".d", "x.jsonl"), WriterOptions{}); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("missing directory: %v", err)
	}
}
