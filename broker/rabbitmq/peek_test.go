package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// peekIDs peeks and returns the message-ids visited, stopping after stopAfter
// (0: never) with ErrStop.
func peekIDs(t *testing.T, b *Broker, queue string, opts broker.PeekOptions, stopAfter int) ([]string, broker.PeekReport, error) {
	t.Helper()
	var ids []string
	rep, err := b.Peek(context.Background(), queue, opts, func(m *broker.Message) error {
		ids = append(ids, m.Properties.MessageID)
		if stopAfter > 0 && len(ids) >= stopAfter {
			return broker.ErrStop
		}
		return nil
	})
	return ids, rep, err
}

func TestPeekClassicHold(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 50, nil)

	ids, rep, err := peekIDs(t, b, q, broker.PeekOptions{Limit: 20}, 0)
	if err != nil {
		t.Fatalf("peek: %v", err)
	}
	if !reflect.DeepEqual(ids, seq("m", 0, 20)) {
		t.Fatalf("visited %v", ids)
	}
	if rep.Mode != broker.PeekHold || rep.Read != 20 || rep.Changed != "20 messages now carry the redelivered flag" {
		t.Errorf("report mode %v, read %d, changed %q; want %v, 20, \"20 messages now carry the redelivered flag\"", rep.Mode, rep.Read, rep.Changed, broker.PeekHold)
	}
	waitDepth(t, b, q, 50)

	// Stop early: the rest of what was prefetched is returned as well.
	ids, rep, err = peekIDs(t, b, q, broker.PeekOptions{Limit: 30}, 5)
	if err != nil || len(ids) != 5 || rep.Read != 5 {
		t.Fatalf("stopped peek: %v %v, read %d; want 5 read", ids, err, rep.Read)
	}
	var redelivered []bool
	_, err = b.Peek(context.Background(), q, broker.PeekOptions{Limit: 3}, func(m *broker.Message) error {
		redelivered = append(redelivered, m.Redelivered)
		return nil
	})
	if err != nil || !reflect.DeepEqual(redelivered, []bool{true, true, true}) {
		t.Errorf("second peek: redelivered %v, %v", redelivered, err)
	}
	waitDepth(t, b, q, 50)
	ids, rep, err = peekIDs(t, b, q, broker.PeekOptions{Limit: 10, Mode: broker.PeekRequeue}, 0)
	if err != nil || !reflect.DeepEqual(ids, seq("m", 0, 10)) || rep.Changed != "10 messages now carry the redelivered flag" {
		t.Fatalf("requeue peek: %v, changed %q, %v; want m000…m009, \"10 messages now carry the redelivered flag\"", ids, rep.Changed, err)
	}
	waitDepth(t, b, q, 50)
	// The measured property: order unchanged after hold peeks.
	if got := drainIDs(t, b, q); !reflect.DeepEqual(got, seq("m", 0, 50)) {
		t.Fatalf("order after hold peeks:\n%v", got)
	}
}

func TestPeekClassicHoldBounds(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 30, nil)
	for _, opts := range []broker.PeekOptions{{Limit: 0, MaxUnacked: 10}, {Limit: 20, MaxUnacked: 10}} {
		_, _, err := peekIDs(t, b, q, opts, 0)
		if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "`mode rotate`") {
			t.Errorf("peek %+v: %v, want ErrUnsafe naming --mode rotate", opts, err)
		}
	}
	// All of a queue within the bound is fine.
	ids, _, err := peekIDs(t, b, q, broker.PeekOptions{Limit: 0}, 0)
	if err != nil || len(ids) != 30 {
		t.Errorf("peek all: %d, %v", len(ids), err)
	}
	waitDepth(t, b, q, 30)

	empty := brokertest.Name(t, "empty")
	declareQueue(t, b, empty, nil)
	ids, rep, err := peekIDs(t, b, empty, broker.PeekOptions{}, 0)
	if err != nil || len(ids) != 0 || rep.Changed != "" {
		t.Errorf("empty queue: %v, changed %q, %v; want nothing", ids, rep.Changed, err)
	}
}

func TestPeekRotateClassic(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 40, amqp.Table{"tenant": "acme", "n": int32(7)})
	var before []*broker.Message
	_, err := b.Peek(context.Background(), q, broker.PeekOptions{Limit: 0, Mode: broker.PeekHold}, func(m *broker.Message) error {
		before = append(before, m.Clone())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, q, 40)

	tests := []struct {
		name      string
		opts      broker.PeekOptions
		stopAfter int
		visited   []string
		order     []string
		changed   string
	}{
		{name: "all", opts: broker.PeekOptions{Mode: broker.PeekRotate}, visited: seq("m", 0, 40), order: seq("m", 0, 40),
			changed: "rotated 40 messages to the back of the queue; order kept; each now has exchange \"\" and routing key `" + q +
				"`, its redelivered flag and x-delivery-count cleared, and its per-message TTL started again"},
		{name: "limit keeps order", opts: broker.PeekOptions{Mode: broker.PeekRotate, Limit: 10}, visited: seq("m", 0, 10), order: seq("m", 0, 40),
			changed: "rotated 40 messages to the back of the queue; order kept"},
		{name: "stop keeps order", opts: broker.PeekOptions{Mode: broker.PeekRotate}, stopAfter: 3, visited: seq("m", 0, 3), order: seq("m", 0, 40),
			changed: "rotated 40 messages"},
		{name: "force rotates only the visited", opts: broker.PeekOptions{Mode: broker.PeekRotate, Limit: 10, Force: true}, visited: seq("m", 0, 10),
			order: append(seq("m", 10, 40), seq("m", 0, 10)...), changed: "they now come after the other 30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, rep, err := peekIDs(t, b, q, tt.opts, tt.stopAfter)
			if err != nil {
				t.Fatalf("peek: %v", err)
			}
			if !reflect.DeepEqual(ids, tt.visited) {
				t.Errorf("visited %v", ids)
			}
			if !strings.Contains(rep.Changed, tt.changed) || rep.Mode != broker.PeekRotate {
				t.Errorf("report mode %v, changed %q; want %v, %q", rep.Mode, rep.Changed, broker.PeekRotate, tt.changed)
			}
			waitDepth(t, b, q, 40)
			var after []*broker.Message
			_, err = b.Peek(context.Background(), q, broker.PeekOptions{Limit: 0, Mode: broker.PeekRotate}, func(m *broker.Message) error {
				after = append(after, m.Clone())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, m := range after {
				order = append(order, m.Properties.MessageID)
			}
			if !reflect.DeepEqual(order, tt.order) {
				t.Fatalf("order after rotation:\n%v\nwant\n%v", order, tt.order)
			}
			// Restore the original order for the next case.
			if tt.opts.Force {
				if _, _, err := peekIDs(t, b, q, broker.PeekOptions{Mode: broker.PeekRotate, Limit: 30, Force: true}, 0); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// Everything but the redelivered flag survives rotation.
	var after []*broker.Message
	_, err = b.Peek(context.Background(), q, broker.PeekOptions{Limit: 0, Mode: broker.PeekRotate}, func(m *broker.Message) error {
		after = append(after, m.Clone())
		return nil
	})
	if err != nil || len(after) != 40 {
		t.Fatalf("final peek: %d, %v", len(after), err)
	}
	for i := range after {
		x, y := before[i], after[i]
		if x.ID != y.ID || !reflect.DeepEqual(x.Headers, y.Headers) || x.Properties != y.Properties || string(x.Body) != string(y.Body) {
			t.Fatalf("message %d changed by rotation (-before +after):\n%s", i, testdiff.Diff(
				[]any{x.ID, x.Headers, x.Properties, string(x.Body)}, []any{y.ID, y.Headers, y.Properties, string(y.Body)}))
		}
		if y.Redelivered {
			t.Errorf("message %d still redelivered after rotation", i)
		}
	}
}

// The rotation notice says that x-death still records where a message died
// only when some rotated message has x-death.
func TestPeekRotateNotesXDeath(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "dead")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 2, amqp.Table{"x-death": []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "work", "exchange": ""}}})
	waitDepth(t, b, q, 2)
	_, rep, err := peekIDs(t, b, q, broker.PeekOptions{Mode: broker.PeekRotate}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "each now has exchange \"\" and routing key `" + q + "` (x-death still records where it died), its redelivered flag"
	if !strings.Contains(rep.Changed, want) {
		t.Errorf("changed %q, want it to contain %q", rep.Changed, want)
	}
}

func TestPeekRotateRefusesLongTail(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", RotateTailMax+30, nil)
	_, _, err := peekIDs(t, b, q, broker.PeekOptions{Mode: broker.PeekRotate, Limit: 20}, 0)
	if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "`force`") || !strings.Contains(err.Error(), "`limit 0`") {
		t.Fatalf("long tail: %v, want ErrUnsafe naming --force and --limit 0", err)
	}
	if d := depth(t, b, q); d != RotateTailMax+30 {
		t.Fatalf("depth %d after a refused peek", d)
	}
}

// quorumWithDLQ declares a quorum queue with a delivery limit that
// dead-letters into a classic queue; it returns both names.
func quorumWithDLQ(t *testing.T, b *Broker, limit int64) (string, string) {
	t.Helper()
	dlq := brokertest.Name(t, "dlq")
	qq := brokertest.Name(t, "qq")
	declareQueue(t, b, dlq, nil)
	args := amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
	switch {
	case limit > 0:
		args["x-delivery-limit"] = limit
	case b.serverMajor(context.Background()) >= 4:
		// 4.x gives a quorum queue a limit of 20 unless it turns it off.
		args["x-delivery-limit"] = int64(-1)
	}
	declareQueue(t, b, qq, args)
	return qq, dlq
}

// requeueCountsHere skips a test of the rules of servers that count a
// requeue (3.x-4.2) on one that does not (4.3 and later).
func requeueCountsHere(t *testing.T, b *Broker) {
	t.Helper()
	if !b.requeueCounts() {
		t.Skipf("RabbitMQ %s does not count a requeue: TestPeekQuorumRequeueFree covers it", b.amqpVersion)
	}
}

func TestPeekQuorumNeverDeadLetters(t *testing.T) {
	b, _ := openTest(t)
	qq, dlq := quorumWithDLQ(t, b, 3)
	publishN(t, b, qq, "m", 3, nil)
	// The default: rotation where a requeue counts, else hold and nack.
	want := broker.PeekRotate
	if !b.requeueCounts() {
		want = broker.PeekHold
	}
	const peeks = 1000
	for i := 0; i < peeks; i++ {
		ids, rep, err := peekIDs(t, b, qq, broker.PeekOptions{Limit: 20}, 0)
		if err != nil {
			t.Fatalf("peek %d: %v", i, err)
		}
		if len(ids) != 3 || rep.Mode != want {
			t.Fatalf("peek %d: visited %v, mode %s, want %s", i, ids, rep.Mode, want)
		}
		if want == broker.PeekHold {
			waitDepth(t, b, qq, 3)
		}
		if i == 0 && !reflect.DeepEqual(ids, seq("m", 0, 3)) {
			t.Fatalf("order %v", ids)
		}
	}
	if n := depth(t, b, dlq); n != 0 {
		t.Fatalf("%d peeks dead-lettered %d messages", peeks, n)
	}
	if got := drainIDs(t, b, qq); !reflect.DeepEqual(got, seq("m", 0, 3)) {
		t.Fatalf("quorum queue after %d peeks: %v", peeks, got)
	}
}

func TestPeekQuorumHoldRefused(t *testing.T) {
	b, _ := openTest(t)
	requeueCountsHere(t, b)
	qq, dlq := quorumWithDLQ(t, b, 3)
	publishN(t, b, qq, "m", 4, nil)
	for _, mode := range []broker.PeekMode{broker.PeekHold, broker.PeekRequeue} {
		_, _, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: mode}, 0)
		if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "`mode rotate`") || !strings.Contains(err.Error(), "delivery limit of 3") {
			t.Errorf("%s on a quorum queue with a limit: %v", mode, err)
		}
	}
	// Forced holds never push a message over the limit: those near it are
	// rotated instead of returned.
	for i := 0; i < 8; i++ {
		mode := broker.PeekHold
		if i%2 == 1 {
			mode = broker.PeekRequeue
		}
		ids, rep, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: mode, Force: true}, 0)
		if err != nil || len(ids) != 4 {
			t.Fatalf("forced %s %d: %v %v", mode, i, ids, err)
		}
		if rep.Changed == "" {
			t.Errorf("forced %s reported no change", mode)
		}
		waitDepth(t, b, qq, 4)
	}
	if n := depth(t, b, dlq); n != 0 {
		t.Fatalf("forced holds dead-lettered %d messages", n)
	}
}

// TestPeekQuorumLimitZero: x-delivery-limit 0 removes a message at its
// first return, so hold and requeue are refused.
func TestPeekQuorumLimitZero(t *testing.T) {
	b, _ := openTest(t)
	requeueCountsHere(t, b)
	dlq := brokertest.Name(t, "dlq")
	qq := brokertest.Name(t, "qq")
	declareQueue(t, b, dlq, nil)
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq, "x-delivery-limit": int64(0)})
	publishN(t, b, qq, "m", 2, nil)
	_, _, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: broker.PeekHold}, 0)
	if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "delivery limit of 0") {
		t.Errorf("hold with a limit of 0: %v", err)
	}
	ids, _, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: broker.PeekHold, Force: true}, 0)
	if err != nil || len(ids) != 2 {
		t.Fatalf("forced hold: %v %v", ids, err)
	}
	waitDepth(t, b, qq, 2)
	if n := depth(t, b, dlq); n != 0 {
		t.Errorf("a forced hold dead-lettered %d messages", n)
	}
}

// TestPeekQuorumDefaultLimit: on RabbitMQ 4.x a quorum queue without a
// delivery limit has one of 20, which hold mode must respect.
func TestPeekQuorumDefaultLimit(t *testing.T) {
	b, _ := openTest(t)
	if major := b.serverMajor(context.Background()); major < 4 {
		t.Skipf("RabbitMQ %d: quorum queues have no default delivery limit before 4.0", major)
	}
	requeueCountsHere(t, b)
	qq := brokertest.Name(t, "qq")
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum"})
	publishN(t, b, qq, "m", 2, nil)
	_, _, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: broker.PeekRequeue}, 0)
	if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "delivery limit of 20") {
		t.Errorf("requeue on a 4.x quorum queue without a limit: %v", err)
	}
	// Forced requeues 25 times: the messages near the limit are rotated,
	// none is dropped.
	for i := 0; i < 25; i++ {
		ids, _, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: broker.PeekRequeue, Force: true}, 0)
		if err != nil || len(ids) != 2 {
			t.Fatalf("forced requeue %d: %v %v", i, ids, err)
		}
		waitDepth(t, b, qq, 2)
	}
	if got := drainIDs(t, b, qq); len(got) != 2 {
		t.Fatalf("after 25 forced requeues the queue holds %v", got)
	}
}

func TestPeekQuorumNoLimitHold(t *testing.T) {
	b, _ := openTest(t)
	requeueCountsHere(t, b)
	qq, _ := quorumWithDLQ(t, b, 0)
	publishN(t, b, qq, "m", 3, nil)
	_, rep, err := peekIDs(t, b, qq, broker.PeekOptions{Mode: broker.PeekHold}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Changed, "3 messages returned with x-delivery-count +1") {
		t.Errorf("report changed %q, want \"3 messages returned with x-delivery-count +1\"", rep.Changed)
	}
	waitDepth(t, b, qq, 3)
	var counts []int64
	_, err = b.Peek(context.Background(), qq, broker.PeekOptions{}, func(m *broker.Message) error {
		counts = append(counts, m.DeliveryCount)
		return nil
	})
	if err != nil || !reflect.DeepEqual(counts, []int64{1, 1, 1}) {
		t.Errorf("delivery counts after one hold %v, %v", counts, err)
	}
	// The rotation reset them.
	counts = nil
	_, err = b.Peek(context.Background(), qq, broker.PeekOptions{}, func(m *broker.Message) error {
		counts = append(counts, m.DeliveryCount)
		return nil
	})
	if err != nil || !reflect.DeepEqual(counts, []int64{0, 0, 0}) {
		t.Errorf("delivery counts after rotation %v, %v", counts, err)
	}
}

func TestPeekStream(t *testing.T) {
	b, _ := openTest(t)
	st := brokertest.Name(t, "st")
	declareQueue(t, b, st, amqp.Table{"x-queue-type": "stream"})
	before := time.Now().Add(-time.Second)
	publishN(t, b, st, "m", 10, nil)
	b.mu.Lock()
	conn := b.conn
	b.mu.Unlock()
	// Wait for the statistics that give the stream's length.
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := b.peekInfo(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if info.depth == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream length never reported: %d", info.depth)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tests := []struct {
		opts broker.PeekOptions
		want []string
	}{
		{broker.PeekOptions{}, seq("m", 0, 10)},
		{broker.PeekOptions{}, seq("m", 0, 10)}, // repeatable
		{broker.PeekOptions{Mode: broker.PeekHold}, seq("m", 0, 10)},
		{broker.PeekOptions{Limit: 3}, seq("m", 0, 3)},
		{broker.PeekOptions{Offset: "5"}, seq("m", 5, 10)},
		{broker.PeekOptions{Offset: "first", Limit: 2}, seq("m", 0, 2)},
		{broker.PeekOptions{Offset: before.UTC().Format(time.RFC3339)}, seq("m", 0, 10)},
		{broker.PeekOptions{Offset: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, nil},
		{broker.PeekOptions{Offset: "1h"}, seq("m", 0, 10)},
		{broker.PeekOptions{Offset: "99"}, nil},
	}
	for _, tt := range tests {
		start := time.Now()
		ids, rep, err := peekIDs(t, b, st, tt.opts, 0)
		if err != nil {
			t.Fatalf("peek %+v: %v", tt.opts, err)
		}
		if !reflect.DeepEqual(ids, tt.want) || rep.Mode != broker.PeekStream || rep.Changed != "" {
			t.Errorf("peek %+v: %v, mode %v, changed %q; want %v, %v, \"\"", tt.opts, ids, rep.Mode, rep.Changed, tt.want, broker.PeekStream)
		}
		t.Logf("peek %+v took %s", tt.opts, time.Since(start))
	}
	ids, _, err := peekIDs(t, b, st, broker.PeekOptions{Offset: "last"}, 0)
	if err != nil || len(ids) == 0 || ids[len(ids)-1] != "m-9" {
		t.Errorf("offset last: %v %v", ids, err)
	}
	ids, _, err = peekIDs(t, b, st, broker.PeekOptions{Offset: "next"}, 0)
	if err != nil || len(ids) != 0 {
		t.Errorf("offset next: %v %v", ids, err)
	}
	var positions []string
	_, err = b.Peek(context.Background(), st, broker.PeekOptions{Limit: 2, Offset: "3"}, func(m *broker.Message) error {
		positions = append(positions, m.Position)
		return nil
	})
	if err != nil || !reflect.DeepEqual(positions, []string{"3", "4"}) {
		t.Errorf("positions %v %v", positions, err)
	}
	if _, _, err := peekIDs(t, b, st, broker.PeekOptions{Offset: "yesterday"}, 0); err == nil || !strings.Contains(err.Error(), "`offset`") {
		t.Errorf("bad offset: %v", err)
	}
	// The connection survived everything (a basic.get on a stream would
	// have closed it), and the stream still holds every message.
	b.mu.Lock()
	closed := b.conn == nil || b.conn.IsClosed()
	b.mu.Unlock()
	if closed || conn != b.conn {
		t.Errorf("the peeks closed or replaced the connection (closed %v)", closed)
	}
	if ids, _, err := peekIDs(t, b, st, broker.PeekOptions{Offset: "first"}, 0); err != nil || !reflect.DeepEqual(ids, seq("m", 0, 10)) {
		t.Errorf("after the peeks the stream holds %v, %v; want m0…m9", ids, err)
	}
}

func TestPeekRefusals(t *testing.T) {
	b, _ := openTest(t)
	q := brokertest.Name(t, "classic")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 2, nil)
	tests := []struct {
		queue string
		opts  broker.PeekOptions
		kind  error
		want  string
	}{
		{q, broker.PeekOptions{Mode: broker.PeekStream}, broker.ErrUnsupported, "stream mode reads stream queues only"},
		{q, broker.PeekOptions{Offset: "first"}, broker.ErrUnsupported, "stream queues only"},
		{q, broker.PeekOptions{Mode: broker.PeekReceive}, broker.ErrUnsupported, "not available on RabbitMQ"},
		{"dlqt-no-such-queue", broker.PeekOptions{}, broker.ErrNotFound, "`dlqt-no-such-queue` not found on vhost `/`"},
	}
	for _, tt := range tests {
		_, _, err := peekIDs(t, b, tt.queue, tt.opts, 0)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("peek %s %+v: %v, want %v with %q", tt.queue, tt.opts, err, tt.kind, tt.want)
		}
	}
	if d := depth(t, b, q); d != 2 {
		t.Errorf("depth %d after refusals", d)
	}
}

// TestPeekQuorumRequeueFree: on a server where a requeue does not count
// (4.3 and later), a quorum queue is read by hold and explicit nack, by
// default and with any delivery limit (0 and 1 included) and without
// --force: every message stays in its place with its x-delivery-count;
// only the redelivered flag and x-acquired-count change, and the report
// says so. Explicit requeue mode does the same.
func TestPeekQuorumRequeueFree(t *testing.T) {
	b, _ := openTest(t)
	if b.requeueCounts() {
		t.Skipf("RabbitMQ %s counts a requeue: the other quorum peek tests cover it", b.amqpVersion)
	}
	for _, limit := range []int64{0, 1, -1, 20} {
		dlq := brokertest.Name(t, "dlq")
		qq := brokertest.Name(t, "qq")
		declareQueue(t, b, dlq, nil)
		args := amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
		if limit != 20 {
			args["x-delivery-limit"] = limit // 20: the default
		}
		declareQueue(t, b, qq, args)
		publishN(t, b, qq, "m", 6, nil)
		for i, mode := range []broker.PeekMode{broker.PeekAuto, broker.PeekAuto, broker.PeekRequeue, broker.PeekHold} {
			var got []string
			var acquired []int64
			rep, err := b.Peek(context.Background(), qq, broker.PeekOptions{Mode: mode, Limit: 3}, func(m *broker.Message) error {
				got = append(got, m.Properties.MessageID)
				acquired = append(acquired, m.AcquiredCount)
				if m.DeliveryCount != 0 {
					t.Errorf("limit %d, peek %d: %s has x-delivery-count %d", limit, i, m.Properties.MessageID, m.DeliveryCount)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("limit %d, peek %d (%s): %v", limit, i, mode, err)
			}
			n := int64(i)
			wantMode := broker.PeekHold
			if mode == broker.PeekRequeue {
				wantMode = mode
			}
			if rep.Mode != wantMode {
				t.Errorf("limit %d, peek %d (%s): mode %s", limit, i, mode, rep.Mode)
			}
			if d := testdiff.Lines(seq("m", 0, 3), got); d != "" {
				t.Errorf("limit %d, peek %d: messages read (-want +got):\n%s", limit, i, d)
			}
			if d := testdiff.Diff([]int64{n, n, n}, acquired); d != "" {
				t.Errorf("limit %d, peek %d: x-acquired-count (-want +got):\n%s", limit, i, d)
			}
			// A read of 3 holds one more, which says whether anything
			// returned earlier comes after them (see peekHold): the first
			// time 4 (none was), then all 6 (4 were).
			held := 6
			if i == 0 {
				held = 4
			}
			if want := fmt.Sprintf("%d messages now carry the redelivered flag and x-acquired-count +1 (x-delivery-count unchanged, each in its place)", held); rep.Changed != want {
				t.Errorf("limit %d, peek %d: report %q, want %q", limit, i, rep.Changed, want)
			}
			waitDepth(t, b, qq, 6)
		}
		if n := depth(t, b, dlq); n != 0 {
			t.Errorf("limit %d: the peeks dead-lettered %d messages", limit, n)
		}
		// An explicit rotation drops x-acquired-count with the other counts,
		// and says so.
		rep, err := b.Peek(context.Background(), qq, broker.PeekOptions{Mode: broker.PeekRotate}, func(*broker.Message) error { return nil })
		if err != nil || !strings.Contains(rep.Changed, "its redelivered flag, x-delivery-count and x-acquired-count cleared") {
			t.Errorf("limit %d: rotation reported %q, %v", limit, rep.Changed, err)
		}
		var acquired []int64
		if _, err := b.Peek(context.Background(), qq, broker.PeekOptions{}, func(m *broker.Message) error {
			acquired = append(acquired, m.AcquiredCount)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if d := testdiff.Diff([]int64{0, 0, 0, 0, 0, 0}, acquired); d != "" {
			t.Errorf("limit %d: x-acquired-count after the rotation (-want +got):\n%s", limit, d)
		}
		waitDepth(t, b, qq, 6)
		// After a read of all six, a read of three: 4.3 delivers the
		// returned messages first, and a return goes behind them, so a
		// hold of only those three would have put them last.
		if _, err := b.Peek(context.Background(), qq, broker.PeekOptions{Limit: 3}, func(*broker.Message) error { return nil }); err != nil {
			t.Fatal(err)
		}
		waitDepth(t, b, qq, 6)
		if d := testdiff.Lines(seq("m", 0, 6), drainIDs(t, b, qq)); d != "" {
			t.Errorf("limit %d: the queue after the peeks (-want +got):\n%s", limit, d)
		}
	}
}
