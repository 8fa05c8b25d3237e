package rabbitmq

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestConsumeAckRelease(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 10, nil)
	sub, err := b.Consume(ctx, q, broker.ConsumeOptions{Prefetch: 3})
	if err != nil {
		t.Fatal(err)
	}
	var handed []string
	acked := 0
	for {
		d, err := sub.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		handed = append(handed, d.Message.Properties.MessageID)
		// Release every third message, ack the others.
		if len(handed)%3 == 0 {
			err = sub.Release(ctx, d.Receipt)
		} else {
			err = sub.Ack(ctx, d.Receipt)
			acked++
		}
		if err != nil {
			t.Fatalf("settle: %v", err)
		}
	}
	if len(handed) != 10 {
		t.Errorf("handed out %d deliveries, want the 10 the queue held at the start: %v", len(handed), handed)
	}
	if err := sub.Ack(ctx, broker.Receipt{Tag: 9999}); !errors.Is(err, broker.ErrConflict) {
		t.Errorf("ack of an unknown receipt: %v", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, q, int64(10-acked))
}

func TestConsumeLimitAndClose(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 10, nil)
	sub, err := b.Consume(ctx, q, broker.ConsumeOptions{Prefetch: 2, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	d1, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err == nil || !strings.Contains(err.Error(), "unsettled") {
		t.Fatalf("next with a full window: %v", err)
	}
	if err := sub.Ack(ctx, d1.Receipt, d2.Receipt); err != nil {
		t.Fatal(err)
	}
	d3, err := sub.Next(ctx)
	if err != nil || d3.Message.Properties.MessageID != "m-2" {
		t.Fatalf("third: %v %v", d3, err)
	}
	if _, err := sub.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != io.EOF {
		t.Fatalf("after the limit: %v, want io.EOF", err)
	}
	// Close returns the two unsettled deliveries.
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, q, 8)
	if got := drainIDs(t, b, q); !reflect.DeepEqual(got, seq("m", 2, 10)) {
		t.Errorf("queue after close: %v", got)
	}
	// An empty queue is drained at once.
	sub, err = b.Consume(ctx, q, broker.ConsumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != io.EOF {
		t.Errorf("empty queue: %v", err)
	}
	sub.Close()
}

// The window never lets the broker deliver beyond the limit: on a quorum
// queue a delivery made and returned would raise its count.
func TestConsumeQuorumNoOverDelivery(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	qq, _ := quorumWithDLQ(t, b, 0)
	publishN(t, b, qq, "m", 10, nil)
	for round := 0; round < 4; round++ {
		sub, err := b.Consume(ctx, qq, broker.ConsumeOptions{Prefetch: 5, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for {
			d, err := sub.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := sub.Release(ctx, d.Receipt); err != nil {
				t.Fatal(err)
			}
		}
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Only released messages were returned: 4 rounds × 3 releases spread
	// over the queue; the others were never delivered. Where a requeue
	// does not count (4.3) x-acquired-count counts them instead.
	waitDepth(t, b, qq, 10)
	var counts []int64
	_, err := b.Peek(ctx, qq, broker.PeekOptions{}, func(m *broker.Message) error {
		if b.requeueCounts() {
			counts = append(counts, m.DeliveryCount)
		} else {
			counts = append(counts, m.AcquiredCount)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	if total != 12 {
		t.Errorf("delivery (or, on %s, acquired) counts %v sum to %d, want exactly the 12 releases", b.amqpVersion, counts, total)
	}
}

func TestConsumeRefusals(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	st := brokertest.Name(t, "st")
	declareQueue(t, b, st, amqp.Table{"x-queue-type": "stream"})
	if _, err := b.Consume(ctx, st, broker.ConsumeOptions{}); !errors.Is(err, broker.ErrUnsupported) {
		t.Errorf("consume a stream: %v", err)
	}
	if _, err := b.Consume(ctx, "dlqt-no-such-queue", broker.ConsumeOptions{}); !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "dlq queues") {
		t.Errorf("consume a missing queue: %v", err)
	}
}

func TestPublish(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "dest")
	q2 := brokertest.Name(t, "dest2")
	ex := brokertest.Name(t, "ex")
	declareQueue(t, b, q, nil)
	declareQueue(t, b, q2, nil)
	declareExchange(t, b, ex, "direct")
	bindQueue(t, b, q, "a", ex)
	bindQueue(t, b, q2, "b", ex)

	full := &broker.Message{
		Body: []byte{0, 1, 2, 0xff},
		Headers: map[string]any{"s": "x", "i8": int8(-1), "u8": uint8(200), "i16": int16(-300), "i32": int32(70000), "i64": int64(1) << 40,
			"f": 1.5, "d": broker.Decimal{Scale: 2, Value: 314}, "t": t0, "b": true, "bytes": []byte("raw"), "nil": nil,
			"arr": []any{"a", int32(1)}, "tbl": map[string]any{"k": "v"}},
		Properties: broker.Properties{ContentType: "application/octet-stream", ContentEncoding: "identity", MessageID: "full-1",
			CorrelationID: "corr", Timestamp: t0, Priority: 5, Type: "kind", AppID: "app", ReplyTo: "rq", Expiration: "600000"},
	}
	plain := func(id string) *broker.Message {
		return &broker.Message{ID: id, Body: []byte(id), Properties: broker.Properties{MessageID: id}}
	}
	msgs := []broker.Outgoing{
		{Message: full, Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}},
		{Message: plain("no-queue"), Dest: broker.Destination{Kind: broker.ToQueue, Queue: "dlqt-no-such-queue"}},
		{Message: plain("two-keys"), Dest: broker.Destination{Kind: broker.ToExchange, Exchange: ex, RoutingKeys: []string{"a", "b"}}},
		{Message: plain("one-unbound"), Dest: broker.Destination{Kind: broker.ToExchange, Exchange: ex, RoutingKeys: []string{"a", "nope"}}},
		{Message: plain("no-exchange"), Dest: broker.Destination{Kind: broker.ToExchange, Exchange: "dlqt-no-such-exchange", RoutingKeys: []string{"a"}}},
		{Message: plain("origin"), Dest: broker.Destination{Kind: broker.ToOrigin}},
		{Message: plain("dup"), Dest: broker.Destination{Kind: broker.ToQueue, Queue: "dlqt-no-such-queue"}},
		{Message: plain("dup"), Dest: broker.Destination{Kind: broker.ToQueue, Queue: "dlqt-no-such-queue"}},
		{Message: plain("dup"), Dest: broker.Destination{Kind: broker.ToQueue, Queue: q2}},
		{Message: &broker.Message{Body: []byte("x"), Headers: map[string]any{"bad": struct{}{}}}, Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}},
	}
	errs, err := b.Publish(ctx, msgs)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	want := []error{nil, broker.ErrUnroutable, nil, broker.ErrUnroutable, broker.ErrNotFound, broker.ErrUnsupported, broker.ErrUnroutable, broker.ErrUnroutable, nil, nil}
	for i, w := range want {
		switch {
		case w == nil && errs[i] != nil:
			if i == len(want)-1 {
				continue
			}
			t.Errorf("message %d: %v, want confirmed", i, errs[i])
		case w != nil && !errors.Is(errs[i], w):
			t.Errorf("message %d: %v, want %v", i, errs[i], w)
		}
	}
	if errs[9] == nil || !strings.Contains(errs[9].Error(), `header "bad"`) {
		t.Errorf("bad header: %v", errs[9])
	}
	// q: full + two-keys(a) + one-unbound(a); q2: two-keys(b) + dup.
	waitDepth(t, b, q, 3)
	waitDepth(t, b, q2, 2)
	var got *broker.Message
	_, err = b.Peek(ctx, q, broker.PeekOptions{Limit: 1}, func(m *broker.Message) error {
		got = m.Clone()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want0 := full.Clone()
	want0.Properties.DeliveryMode = 2
	if !reflect.DeepEqual(got.Headers, want0.Headers) || got.Properties != want0.Properties || string(got.Body) != string(full.Body) {
		t.Errorf("published message changed (-want +got):\n%s", testdiff.Diff(
			[]any{want0.Headers, want0.Properties, string(full.Body)}, []any{got.Headers, got.Properties, string(got.Body)}))
	}
	if got.ID != broker.Fingerprint(full) {
		t.Errorf("fingerprint %s, want %s", got.ID, broker.Fingerprint(full))
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Publish(cctx, msgs[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled publish: %v", err)
	}
}

// Requeue publishes go without mandatory: identical copies are confirmed
// together (none waits for another's confirm to match a return), every one
// arrives, and a copy for a queue that no longer exists is not returned.
func TestPublishRequeue(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "back")
	declareQueue(t, b, q, amqp.Table{"x-queue-type": "quorum"})
	const n = 500
	msgs := make([]broker.Outgoing, n)
	for i := range msgs {
		msgs[i] = broker.Outgoing{Message: &broker.Message{Body: []byte("same")}, Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}, Requeue: true}
	}
	msgs = append(msgs, broker.Outgoing{Message: &broker.Message{Body: []byte("same")}, Dest: broker.Destination{Kind: broker.ToQueue, Queue: "dlqt-no-such-queue"}, Requeue: true})
	errs, err := b.Publish(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("message %d: %v", i, e)
		}
	}
	waitDepth(t, b, q, n)
}

func TestOriginThroughRetryLadder(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	workX := brokertest.Name(t, "work-x")
	retryX := brokertest.Name(t, "retry-x")
	work := brokertest.Name(t, "work")
	r1 := brokertest.Name(t, "retry1")
	r2 := brokertest.Name(t, "retry2")
	dlq := brokertest.Name(t, "dlq")
	declareExchange(t, b, workX, "direct")
	declareExchange(t, b, retryX, "direct")
	declareQueue(t, b, work, amqp.Table{"x-dead-letter-exchange": retryX})
	bindQueue(t, b, work, "job", workX)
	for _, r := range []string{r1, r2} {
		declareQueue(t, b, r, amqp.Table{"x-message-ttl": int32(1), "x-dead-letter-exchange": workX})
	}
	declareQueue(t, b, dlq, nil)
	unbind := func(q string) {
		t.Helper()
		if err := b.withChannel(ctx, func(ch *amqp.Channel) error { return ch.QueueUnbind(q, "job", retryX, nil) }); err != nil {
			t.Fatal(err)
		}
	}
	reject := func() {
		t.Helper()
		err := b.withChannel(ctx, func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(work, false)
			if err != nil || !ok {
				t.Fatalf("get from work: %v %v", ok, err)
			}
			return d.Nack(false, false)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		return ch.Publish(workX, "job", true, false, amqp.Publishing{MessageId: "order-7", Body: []byte(`{"order":7}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, work, 1)
	// Tier 1, tier 2, then the parking queue.
	bindQueue(t, b, r1, "job", retryX)
	reject()
	waitDepth(t, b, work, 1)
	unbind(r1)
	bindQueue(t, b, r2, "job", retryX)
	reject()
	waitDepth(t, b, work, 1)
	unbind(r2)
	bindQueue(t, b, dlq, "job", retryX)
	reject()
	waitDepth(t, b, dlq, 1)

	var m *broker.Message
	if _, err := b.Peek(ctx, dlq, broker.PeekOptions{}, func(x *broker.Message) error { m = x.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if m.Death == nil {
		t.Fatal("no death record")
	}
	if len(m.Death.History) != 3 || m.Death.Count != 5 || m.Death.Queue != work || m.Death.Reason != "rejected" {
		t.Fatalf("death record: %d entries, count %d, queue %q, reason %q; want 3, 5, %s, rejected", len(m.Death.History), m.Death.Count, m.Death.Queue, m.Death.Reason, work)
	}
	dest, err := b.Origin(ctx, dlq, m)
	if err != nil {
		t.Fatal(err)
	}
	if dest.Kind != broker.ToExchange || dest.Exchange != workX || !reflect.DeepEqual(dest.RoutingKeys, []string{"job"}) {
		t.Fatalf("origin kind %v, exchange %q, routing keys %q; want %v, %s, [job]", dest.Kind, dest.Exchange, dest.RoutingKeys, broker.ToExchange, workX)
	}
	errs, err := b.Publish(ctx, []broker.Outgoing{{Message: m, Dest: dest}})
	if err != nil || errs[0] != nil {
		t.Fatalf("publish to origin: %v %v", errs, err)
	}
	waitDepth(t, b, work, 1)

	// Published to the queue directly through the default exchange.
	direct := &broker.Message{ID: "x", Headers: map[string]any{"x-death": []any{map[string]any{
		"queue": "orders", "reason": "rejected", "exchange": "", "routing-keys": []any{"orders"}, "count": int64(1)}}}}
	if dest, err := b.Origin(ctx, dlq, direct); err != nil || dest.Kind != broker.ToQueue || dest.Queue != "orders" {
		t.Errorf("default-exchange origin: kind %v, queue %q, %v; want %v, orders", dest.Kind, dest.Queue, err, broker.ToQueue)
	}
	none := &broker.Message{ID: "h-1"}
	if _, err := b.Origin(ctx, dlq, none); !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "`to") {
		t.Errorf("no death record: %v", err)
	}
}

func TestPurge(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "purge")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 7, nil)
	n, err := b.Purge(ctx, q)
	if err != nil || n != 7 {
		t.Fatalf("purge: %d %v", n, err)
	}
	waitDepth(t, b, q, 0)
	if _, err := b.Purge(ctx, "dlqt-no-such-queue"); !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "purge queue") {
		t.Errorf("purge missing: %v", err)
	}
	// The connection survived the 404.
	if _, err := b.Queue(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// TestFlowBlocked blocks the FAULT broker with a tiny memory watermark:
// Publish waits (the flow callback fires) and completes once it is lifted.
func TestFlowBlocked(t *testing.T) {
	env := brokertest.Fault(t)
	ctx := context.Background()
	b, err := Open(ctx, Config{URL: env.Rabbit.AMQPURL, ManagementURL: env.Rabbit.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the queue's own cleanup.
	t.Cleanup(func() { b.Close() })
	q := brokertest.Name(t, "flow")
	declareQueue(t, b, q, nil)
	var mu sync.Mutex
	var events []bool
	b.WatchFlow(func(blocked bool, reason string) {
		mu.Lock()
		events = append(events, blocked)
		mu.Unlock()
	})
	saw := func(want []bool) bool {
		mu.Lock()
		defer mu.Unlock()
		return reflect.DeepEqual(events, want)
	}
	restore := env.MemoryAlarm(t)

	done := make(chan error, 1)
	go func() {
		errs, err := b.Publish(ctx, []broker.Outgoing{{Message: &broker.Message{Body: []byte("x"), Properties: broker.Properties{MessageID: "flow-1"}},
			Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}}})
		if err == nil && errs[0] != nil {
			err = errs[0]
		}
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !saw([]bool{true}) {
		if time.Now().After(deadline) {
			t.Fatalf("no connection.blocked seen; events %v", events)
		}
		select {
		case err := <-done:
			t.Fatalf("publish finished while the broker should block it: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if blocked, reason := b.Blocked(); !blocked || reason == "" {
		t.Errorf("Blocked() = %v %q", blocked, reason)
	}
	restore()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish after unblock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("publish did not complete after the alarm cleared")
	}
	for !saw([]bool{true, false}) {
		if time.Now().After(deadline) {
			t.Fatalf("events %v, want blocked then unblocked", events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitDepth(t, b, q, 1)
}
