package sqs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// drain consumes every message of q, acking each, and returns the bodies.
func drain(t *testing.T, b *Broker, q string) []*broker.Message {
	t.Helper()
	ctx := context.Background()
	sub, err := b.Consume(ctx, q, broker.ConsumeOptions{Visibility: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out []*broker.Message
	for {
		d, err := sub.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Message)
		if err := sub.Ack(ctx, d.Receipt); err != nil {
			t.Fatal(err)
		}
	}
}

func bodiesOf(ms []*broker.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Body)
	}
	sort.Strings(out)
	return out
}

func TestConsumeAckReleaseExtend(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	u := createQueue(t, b, baseName(t), nil)
	sendBodies(t, b, u, "", bodies("m", 25)...)

	sub, err := b.Consume(ctx, u, broker.ConsumeOptions{Limit: 12, Visibility: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var ds []*broker.Delivery
	for {
		d, err := sub.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if len(ds) != 12 {
		t.Fatalf("limit 12: got %d deliveries", len(ds))
	}
	var acks, rels []broker.Receipt
	for i, d := range ds {
		if d.Receipt.Handle == "" || d.Message.ID == "" {
			t.Fatalf("delivery %d: handle %q, ID %q; want both set", i, d.Receipt.Handle, d.Message.ID)
		}
		switch {
		case i < 8:
			acks = append(acks, d.Receipt)
		case i < 10:
			rels = append(rels, d.Receipt)
		}
	}
	if err := sub.(broker.Extender).Extend(ctx, time.Minute, ds[10].Receipt, ds[11].Receipt); err != nil {
		t.Fatalf("extend: %v", err)
	}
	if err := sub.Ack(ctx, acks...); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if err := sub.Release(ctx, rels...); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Two extended ones are still in flight until Close releases them.
	if v, f := depth(t, b, u); v != 15 || f != 2 {
		t.Errorf("before close: %d visible %d in flight, want 15 and 2", v, f)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, u, 17)
	if got := drain(t, b, u); len(got) != 17 {
		t.Errorf("drained %d, want 17", len(got))
	}
	waitDepth(t, b, u, 0)
}

func TestConsumeIdleEOF(t *testing.T) {
	b := openTest(t)
	u := createQueue(t, b, baseName(t), nil)
	sub, err := b.Consume(context.Background(), u, broker.ConsumeOptions{Idle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Next(context.Background()); err != io.EOF {
		t.Errorf("empty queue: %v, want io.EOF", err)
	}
	if _, err := b.Consume(context.Background(), baseName(t)+"-missing", broker.ConsumeOptions{}); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("missing queue: %v", err)
	}
}

func TestPublish(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	base := baseName(t)
	std := createQueue(t, b, base+"-std", nil)
	fifo := createQueue(t, b, base+".fifo", map[string]string{"FifoQueue": "true"})
	arn := mustARN(t, b, std)

	var out []broker.Outgoing
	for i := range 23 {
		ref := []string{nameFromURL(std), std, arn}[i%3]
		out = append(out, broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: ref},
			Message: &broker.Message{System: broker.SQS, Body: []byte(fmt.Sprintf("s-%02d", i)),
				Attributes: map[string]broker.Attribute{"n": {DataType: "Number", StringValue: fmt.Sprint(i)}}}})
	}
	for i := range 12 {
		out = append(out, broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: nameFromURL(fifo)},
			GroupID: fmt.Sprintf("g%d", i%2), DeduplicationID: fmt.Sprintf("d-%d", i),
			Message: &broker.Message{System: broker.RabbitMQ, Body: []byte(fmt.Sprintf("f-%02d", i)),
				Headers: map[string]any{"retries": int32(i)}, Properties: broker.Properties{ContentType: "text/plain"}}})
	}
	// Per-message failures: a missing queue, a FIFO message without a group,
	// an exchange destination, one message too big.
	out = append(out,
		broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: base + "-missing"}, Message: &broker.Message{Body: []byte("x")}},
		broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: fifo}, Message: &broker.Message{System: broker.RabbitMQ, Body: []byte("x")}},
		broker.Outgoing{Dest: broker.Destination{Kind: broker.ToExchange, Exchange: "x"}, Message: &broker.Message{Body: []byte("x")}},
		broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: std}, Message: &broker.Message{Body: []byte(strings.Repeat("x", maxMessageBytes+1))}},
	)
	errs, err := b.Publish(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs[:35] {
		if e != nil {
			t.Errorf("message %d: %v", i, e)
		}
	}
	if !errors.Is(errs[35], broker.ErrNotFound) || !strings.Contains(errs[35].Error(), "-missing") {
		t.Errorf("missing queue: %v", errs[35])
	}
	if errs[36] == nil || !strings.Contains(errs[36].Error(), "group id") {
		t.Errorf("fifo without group: %v", errs[36])
	}
	if !errors.Is(errs[37], broker.ErrUnsupported) {
		t.Errorf("exchange destination: %v", errs[37])
	}
	if errs[38] == nil || !strings.Contains(errs[38].Error(), "limit") {
		t.Errorf("too big: %v", errs[38])
	}

	got := drain(t, b, std)
	if len(got) != 23 {
		t.Fatalf("standard queue got %d messages, want 23", len(got))
	}
	for _, m := range got {
		if m.Attributes["n"].DataType != "Number" {
			t.Errorf("attribute n has data type %q, want Number", m.Attributes["n"].DataType)
		}
	}
	// FIFO: every group in order, headers mapped back.
	fm := drain(t, b, fifo)
	groups := map[string][]string{}
	for _, m := range fm {
		g := m.SystemAttributes[sysGroupID]
		groups[g] = append(groups[g], string(m.Body))
		h, p, err := HeadersFromAttributes(m.Attributes)
		if err != nil || p.ContentType != "text/plain" || h["retries"] == nil {
			t.Errorf("mapped headers: retries %v, content type %q, %v; want set, text/plain", h["retries"], p.ContentType, err)
		}
	}
	if !reflect.DeepEqual(groups["g0"], []string{"f-00", "f-02", "f-04", "f-06", "f-08", "f-10"}) ||
		!reflect.DeepEqual(groups["g1"], []string{"f-01", "f-03", "f-05", "f-07", "f-09", "f-11"}) {
		t.Errorf("fifo order: %v", groups)
	}
}

func TestPublishSplitsBySize(t *testing.T) {
	b := openTest(t)
	u := createQueue(t, b, baseName(t), nil)
	big := strings.Repeat("y", 100*1024)
	var out []broker.Outgoing
	for i := range 5 {
		out = append(out, broker.Outgoing{Dest: broker.Destination{Kind: broker.ToQueue, Queue: u},
			Message: &broker.Message{System: broker.SQS, Body: []byte(fmt.Sprintf("%d%s", i, big))}})
	}
	q, err := b.queueInfo(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(out))
	if bs := b.batch(out, []int{0, 1, 2, 3, 4}, q, errs); len(bs) != 3 {
		t.Errorf("5 × 100 KiB in %d batches, want 3 (256 KiB each at most)", len(bs))
	}
	errs, err = b.Publish(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("message %d: %v", i, e)
		}
	}
	waitDepth(t, b, u, 5)
}

// TestRedriveBehaviour documents the emulator's dead-lettering: a message
// received more than maxReceiveCount times lands in the DLQ (fauxqs moves it
// on the receive that would exceed the limit, without DeadLetterQueueSourceArn),
// and a consume-publish-ack loop moves it home.
func TestRedriveBehaviour(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	src, dlq := createPair(t, b, 2, false)
	sendBodies(t, b, src, "", "poison")

	for i := 0; i < 3; i++ {
		msgs, err := b.receive(ctx, src, 10, time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && len(msgs) != 1 {
			t.Fatalf("receive %d: %d messages, want 1", i+1, len(msgs))
		}
		if i == 2 && len(msgs) != 0 {
			t.Fatalf("third receive got the message; want it dead-lettered")
		}
		if len(msgs) > 0 {
			if _, err := b.changeVisibility(ctx, src, handlesOf(msgs), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDepth(t, b, dlq, 1)
	var dead *broker.Message
	if _, err := b.Peek(ctx, dlq, broker.PeekOptions{}, func(m *broker.Message) error { dead = m.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if dead == nil {
		t.Fatal("dlq holds nothing")
	}
	if string(dead.Body) != "poison" {
		t.Fatalf("dlq holds %q, want poison", dead.Body)
	}
	t.Logf("dead letter: receive count before peek %d, death %+v", dead.DeliveryCount, dead.Death)

	// Move it home: origin, publish, then ack.
	dest, err := b.Origin(ctx, nameFromURL(dlq), dead)
	if err != nil {
		t.Fatal(err)
	}
	if dest.Queue != nameFromURL(src) {
		t.Fatalf("origin = %v, want %s", dest, nameFromURL(src))
	}
	sub, err := b.Consume(ctx, dlq, broker.ConsumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	d, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := b.Publish(ctx, []broker.Outgoing{{Message: d.Message, Dest: dest}})
	if err != nil || errs[0] != nil {
		t.Fatalf("publish: %v %v", err, errs)
	}
	if err := sub.Ack(ctx, d.Receipt); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, dlq, 0)
	waitDepth(t, b, src, 1)
}

func TestOrigin(t *testing.T) {
	env := brokertest.SQS(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, endpoint string }{{"fauxqs-scan", env.Endpoint}, {"list-sources", env.MoveEndpoint}} {
		t.Run(tc.name, func(t *testing.T) {
			b := openAt(t, tc.endpoint)
			src, dlq := createPair(t, b, 3, false)
			m := &broker.Message{System: broker.SQS, Body: []byte("x")}
			dest, err := b.Origin(ctx, nameFromURL(dlq), m)
			if err != nil {
				t.Fatal(err)
			}
			if dest.Kind != broker.ToQueue || dest.Queue != nameFromURL(src) {
				t.Errorf("origin kind %v, queue %q; want %v, %s", dest.Kind, dest.Queue, broker.ToQueue, nameFromURL(src))
			}
			// Which path answered.
			_, lerr := b.listDeadLetterSources(ctx, dlq)
			t.Logf("ListDeadLetterSourceQueues: %v", lerr)
			if tc.name == "list-sources" && lerr != nil {
				t.Errorf("local-aws-sqs should answer ListDeadLetterSourceQueues: %v", lerr)
			}
			if tc.name == "fauxqs-scan" && !errors.Is(lerr, broker.ErrUnsupported) {
				t.Errorf("fauxqs ListDeadLetterSourceQueues = %v, want unsupported (so the scan is tested)", lerr)
			}

			// A second source makes it ambiguous (after the cache expires).
			other := createQueue(t, b, baseName(t)+"-other", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, mustARN(t, b, dlq))})
			b.mu.Lock()
			delete(b.origins, dlq)
			b.mu.Unlock()
			_, err = b.Origin(ctx, dlq, m)
			if !errors.Is(err, broker.ErrConflict) || !strings.Contains(err.Error(), "`to") ||
				!strings.Contains(err.Error(), nameFromURL(src)) || !strings.Contains(err.Error(), nameFromURL(other)) {
				t.Errorf("ambiguous origin: %v", err)
			}
			// The message's own DeadLetterQueueSourceArn wins.
			m.Death = &broker.Death{QueueARN: mustARN(t, b, other)}
			dest, err = b.Origin(ctx, dlq, m)
			if err != nil || dest.Queue != nameFromURL(other) {
				t.Errorf("origin from DeadLetterQueueSourceArn: queue %q, %v; want %s", dest.Queue, err, nameFromURL(other))
			}
			// No source at all.
			lone := createQueue(t, b, baseName(t)+"-lone", nil)
			if _, err := b.Origin(ctx, lone, &broker.Message{}); !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "`to") {
				t.Errorf("no source: %v", err)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	u := createQueue(t, b, baseName(t), nil)
	sendBodies(t, b, u, "", bodies("m", 12)...)
	n, err := b.Purge(ctx, nameFromURL(u))
	if err != nil {
		t.Fatal(err)
	}
	if n != 12 {
		t.Errorf("purged %d, want 12", n)
	}
	waitDepth(t, b, u, 0)
	if _, err := b.Purge(ctx, baseName(t)+"-missing"); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("purge missing: %v", err)
	}
	// A second purge within 60 seconds: real SQS refuses with
	// PurgeQueueInProgress; the emulator may allow it.
	if _, err := b.Purge(ctx, u); err != nil {
		if !errors.Is(err, broker.ErrConflict) || !strings.Contains(err.Error(), "60 seconds") {
			t.Errorf("second purge: %v", err)
		}
	}
}

// TestLocalAWSSQS runs the basic round trip against the second emulator,
// which speaks another protocol dialect.
func TestLocalAWSSQS(t *testing.T) {
	env := brokertest.SQS(t)
	b := openAt(t, env.MoveEndpoint)
	ctx := context.Background()
	u := createQueue(t, b, baseName(t), nil)
	errs, err := b.Publish(ctx, []broker.Outgoing{{Dest: broker.Destination{Kind: broker.ToQueue, Queue: nameFromURL(u)},
		Message: &broker.Message{System: broker.RabbitMQ, Body: []byte{0xde, 0xad}, Headers: map[string]any{"k": "v", "n": int64(5)}}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("publish: %v %v", err, errs)
	}
	var got *broker.Message
	if _, err := b.Peek(ctx, u, broker.PeekOptions{}, func(m *broker.Message) error { got = m.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("peeked nothing")
	}
	if string(got.Body) != "\xde\xad" || got.Timestamp.IsZero() {
		t.Fatalf("peeked body %q, timestamp %v; want \"\\xde\\xad\", set", got.Body, got.Timestamp)
	}
	h, _, err := HeadersFromAttributes(got.Attributes)
	if err != nil || h["k"] != "v" || h["n"] != int64(5) {
		t.Errorf("headers %v %v", h, err)
	}
	qs, err := b.QueuesWithPrefix(ctx, nameFromURL(u))
	if err != nil || len(qs) != 1 || qs[0].Depth != 1 {
		t.Errorf("queues %q, %v; want one with depth 1, depths %v", testdiff.Pick(qs, func(q broker.Queue) string { return q.Name }), err, testdiff.Pick(qs, func(q broker.Queue) int64 { return q.Depth }))
	}
	_, _ = b.api.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
}
