package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// deepTable nests a table depth levels deep: RabbitMQ takes it, and
// amqp091-go refuses to read a frame that holds it (more than 32 levels)
// and closes the connection.
func deepTable(depth int) amqp.Table {
	t := amqp.Table{"leaf": "x"}
	for range depth {
		t = amqp.Table{"n": t}
	}
	return t
}

// TestPeekOfAnUnreadableMessage: a classic queue of 9 messages whose fifth
// carries headers nested 40 deep. Every peek fails, with an error that
// says what the message is, where it is (at or after the messages read),
// what the failure changed and what to do; no peek loses, duplicates or
// reorders a message. (The error said "the broker reported error 501 …:
// re-run the command", and re-running fails the same way.)
func TestPeekOfAnUnreadableMessage(t *testing.T) {
	b, env := openTest(t)
	q := brokertest.Name(t, "unreadable")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "a", 4, nil)
	publishN(t, b, q, "p", 1, amqp.Table{"deep": deepTable(40)})
	publishN(t, b, q, "b", 4, nil)
	for i := range 3 {
		var shown *broker.Message
		rep, err := b.Peek(context.Background(), q, broker.PeekOptions{}, func(m *broker.Message) error {
			if m.Unreadable != "" {
				shown = m.Clone()
			}
			return nil
		})
		if !errors.Is(err, broker.ErrUnsupported) {
			t.Fatalf("peek %d: err = %v, want unsupported", i+1, err)
		}
		for _, want := range []string{"the message at position 5 (ID p-0) could not be read", "nest tables or arrays 41 deep", "went back to its queue", "server-side redrive"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("peek %d: the error does not say %q: %v", i+1, want, err)
			}
		}
		// The fifth is shown, read through the management API, marked.
		if shown == nil || shown.ID != "p-0" || shown.Position != "5" || string(shown.Body) != "p-0" || !strings.Contains(shown.Unreadable, "management API") {
			t.Errorf("peek %d showed the unreadable message as %+v", i+1, shown)
		} else if _, ok := shown.Headers["deep"].(map[string]any); !ok {
			t.Errorf("peek %d: the unreadable message's headers were not read: %v", i+1, shown.Headers)
		}
		if rep.Read > 5 {
			t.Errorf("peek %d read %d messages: past the unreadable fifth", i+1, rep.Read)
		}
	}
	waitDepth(t, b, q, 9)
	// The management API reads what the client cannot (and requeues it, in
	// place on a classic queue).
	var msgs []struct {
		Properties struct {
			MessageID string `json:"message_id"`
		} `json:"properties"`
	}
	body := map[string]any{"count": 20, "ackmode": "ack_requeue_true", "encoding": "auto"}
	if err := b.mgmtDo(context.Background(), "POST", "/queues/"+b.vhostPath()+"/"+url.PathEscape(q)+"/get", body, &msgs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Properties.MessageID)
	}
	t.Logf("hostile tally: attack=deep-headers queue=classic version=%s before=9 after=%d lost=%d duplicated=%d", env.Version, len(got), max(9-len(got), 0), max(len(got)-9, 0))
	want := append(append(seq("a", 0, 4), "p-0"), seq("b", 0, 4)...)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after three peeks the queue holds %v, want %v", got, want)
	}
}

// TestUnreadableWhy: headers are refused past 32 levels of tables or arrays
// or 8,192 entries in one, as amqp091-go's reader refuses them.
func TestUnreadableWhy(t *testing.T) {
	nest := func(depth int) map[string]any {
		m := map[string]any{"leaf": "x"}
		for range depth {
			m = map[string]any{"n": m}
		}
		return m
	}
	big := make([]any, 8193)
	for _, tc := range []struct {
		name string
		h    map[string]any
		want string
	}{
		{"plain", map[string]any{"a": json.Number("1"), "b": []any{"x"}}, ""},
		{"32 deep", map[string]any{"t": nest(31)}, ""},
		{"33 deep", map[string]any{"t": nest(32)}, "nest tables or arrays 33 deep"},
		{"deep array", map[string]any{"a": []any{nest(40)}}, "nest tables or arrays 42 deep"},
		{"8192 entries", map[string]any{"a": big[:8192]}, ""},
		{"8193 entries", map[string]any{"a": big}, "table or array of 8193 entries"},
	} {
		if got := unreadableWhy(tc.h); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFromMgmt: a message as the management API returns it becomes the
// message dlq would have read, header types approximately.
func TestFromMgmt(t *testing.T) {
	raw := `{"payload":"aGk=","payload_encoding":"base64","redelivered":true,"exchange":"x","routing_key":"k",
	 "properties":{"message_id":"m-1","timestamp":1700000000,"delivery_mode":2,"priority":3,"content_type":"text/plain",
	 "headers":{"n":7,"f":1.5,"s":"v","t":{"u":[1,"a"]},"x-death":[{"count":2,"reason":"rejected","queue":"orders.q","time":1700000000,"exchange":"orders.x","routing-keys":["k"]}]}}}`
	var mm mgmtMessage
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&mm); err != nil {
		t.Fatal(err)
	}
	m, err := fromMgmt("orders.dlq", &mm)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %s %v %s %d %d %s %v %v %v %v %s %d %s", m.ID, m.Body, m.Queue, m.Redelivered, m.RoutingKey, m.Properties.DeliveryMode, m.Properties.Priority,
		m.Properties.Timestamp.Format(time.RFC3339), m.Headers["n"], m.Headers["f"], m.Headers["s"], m.Headers["t"], m.Death.Reason, m.Death.Count, m.Death.Last.Format(time.RFC3339))
	want := "m-1 hi orders.dlq true k 2 3 2023-11-14T22:13:20Z 7 1.5 v map[u:[1 a]] rejected 2 2023-11-14T22:13:20Z"
	if got != want {
		t.Errorf("fromMgmt:\n got %s\nwant %s", got, want)
	}
}

// TestUnreadableOnALimitedQuorumQueue: a quorum queue with a delivery limit
// of 5 holds 100 messages, one whose headers nest 40 deep, and 20 more. A
// peek rotates it until the unreadable message closes the connection: no
// message may then be in the queue twice (a rotation left confirmed copies
// beside their originals: 9 → 11), and only the few deliveries held (one
// window) may have their count raised. Without --get-unreadable the
// management API is not asked (its get counts a delivery); with it, the
// message is shown, marked, at its position.
func TestUnreadableOnALimitedQuorumQueue(t *testing.T) {
	b, env := openTest(t)
	if !b.requeueCounts() {
		// RabbitMQ 4.3 reads a quorum queue by holding it, not rotating:
		// TestUnreadableKeepsTheConnection covers it.
		t.Skipf("RabbitMQ %s holds a quorum queue to read it; this test is of the rotation", env.Version)
	}
	q := brokertest.Name(t, "unreadable-quorum")
	declareQueue(t, b, q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	publishN(t, b, q, "a", 100, nil)
	publishN(t, b, q, "p", 1, amqp.Table{"deep": deepTable(40)})
	publishN(t, b, q, "b", 20, nil)
	const total = 121
	rep, err := b.Peek(context.Background(), q, broker.PeekOptions{}, func(m *broker.Message) error {
		if m.Unreadable != "" {
			t.Errorf("without --get-unreadable the unreadable message was read: %+v", m)
		}
		return nil
	})
	if !errors.Is(err, broker.ErrUnsupported) || !strings.Contains(err.Error(), "`get-unreadable`") || !strings.Contains(err.Error(), "no message is in the queue twice") {
		t.Fatalf("peek: err = %v, want the unreadable error naming get-unreadable", err)
	}
	if rep.Mode != broker.PeekRotate || rep.Read > 101 {
		t.Errorf("peek: mode %s, read %d", rep.Mode, rep.Read)
	}
	waitDepth(t, b, q, total)
	var shown *broker.Message
	_, err = b.Peek(context.Background(), q, broker.PeekOptions{GetUnreadable: true}, func(m *broker.Message) error {
		if m.Unreadable != "" {
			shown = m.Clone()
		}
		return nil
	})
	if !errors.Is(err, broker.ErrUnsupported) || shown == nil || shown.ID != "p-0" || shown.Position == "" {
		t.Fatalf("peek --get-unreadable: shown %+v, err %v; want p-0 at its position", shown, err)
	}
	if !strings.Contains(err.Error(), "the message at position "+shown.Position+" (ID p-0)") {
		t.Errorf("the error does not name the message's position %s: %v", shown.Position, err)
	}
	waitDepth(t, b, q, total)
	// The tally: take everything through the management API (the AMQP
	// client cannot), and count each message and its deliveries.
	var msgs []mgmtMessage
	body := map[string]any{"count": 1000, "ackmode": "ack_requeue_false", "encoding": "auto"}
	if err := b.mgmtDo(context.Background(), "POST", "/queues/"+b.vhostPath()+"/"+url.PathEscape(q)+"/get", body, &msgs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	raised := 0
	for _, mm := range msgs {
		id, _ := mm.Properties["message_id"].(string)
		seen[id]++
		h, _ := mm.Properties["headers"].(map[string]any)
		c, _ := h["x-delivery-count"].(json.Number)
		if n, _ := c.Int64(); n > 0 && id != "p-0" {
			raised++
		}
	}
	duplicated, lost := len(msgs)-len(seen), 0
	for _, id := range append(append(seq("a", 0, 100), "p-0"), seq("b", 0, 20)...) {
		if seen[id] == 0 {
			lost++
		}
	}
	t.Logf("hostile tally: attack=deep-headers queue=quorum limit=5 version=%s before=%d after=%d lost=%d duplicated=%d counts-raised=%d", env.Version, total, len(msgs), lost, duplicated, raised)
	if lost != 0 || duplicated != 0 || len(msgs) != total {
		t.Fatalf("after the peeks the queue holds %d messages (%d distinct; want %d): lost %d, duplicated %d", len(msgs), len(seen), total, lost, duplicated)
	}
	if raised > 2*limitedRotateWindow {
		t.Errorf("%d messages besides the unreadable one had their x-delivery-count raised; want at most the deliveries held, %d a peek", raised, limitedRotateWindow)
	}
}

// mgmtIDs takes every message of queue through the management API (the
// AMQP client cannot read them all) and returns their message-ids in order.
func mgmtIDs(t *testing.T, b *Broker, queue string) []string {
	t.Helper()
	var msgs []mgmtMessage
	body := map[string]any{"count": 1000, "ackmode": "ack_requeue_false", "encoding": "auto"}
	if err := b.mgmtDo(context.Background(), "POST", "/queues/"+b.vhostPath()+"/"+url.PathEscape(queue)+"/get", body, &msgs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		id, _ := m.Properties["message_id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// tally counts, against the messages that were there before, what the
// queues hold now: lost and duplicated.
func tally(before []string, after ...[]string) (n, lost, duplicated int) {
	seen := map[string]int{}
	for _, ids := range after {
		for _, id := range ids {
			seen[id]++
			n++
		}
	}
	for _, id := range before {
		if seen[id] == 0 {
			lost++
		}
	}
	return n, lost, n - len(seen)
}

// TestTakeUnreadable: the unreadable message at a position is archived
// (keep) and removed from a classic queue, and moved from a quorum queue
// with a delivery limit to another queue; the messages before it go behind
// the others in their order, on both, nothing else changes, nothing is lost
// or duplicated. A position that
// holds a readable message is refused, and nothing is removed.
func TestTakeUnreadable(t *testing.T) {
	b, env := openTest(t)
	ctx := context.Background()

	classic := brokertest.Name(t, "take-classic")
	declareQueue(t, b, classic, nil)
	publishN(t, b, classic, "a", 4, nil)
	publishN(t, b, classic, "p", 1, amqp.Table{"deep": deepTable(40)})
	publishN(t, b, classic, "b", 4, nil)
	before := append(append(seq("a", 0, 4), "p-0"), seq("b", 0, 4)...)
	var kept []string
	m, err := b.TakeUnreadable(ctx, classic, broker.TakeOptions{Position: 5}, func(m *broker.Message) error {
		kept = append(kept, m.ID)
		return nil
	})
	if err != nil || m == nil || m.ID != "p-0" || m.Unreadable == "" {
		t.Fatalf("take the unreadable message of the classic queue: %+v, %v", m, err)
	}
	if strings.Join(kept, ",") != "p-0" {
		t.Errorf("kept %v, want p-0", kept)
	}
	got := mgmtIDs(t, b, classic)
	n, lost, dup := tally(before, got, kept)
	t.Logf("hostile tally: attack=deep-headers-discard-by-position queue=classic version=%s before=9 after=%d (queue %d, archive %d) lost=%d duplicated=%d", env.Version, n, len(got), len(kept), lost, dup)
	// A discard from a classic queue keeps the others in their places.
	if want := append(seq("a", 0, 4), seq("b", 0, 4)...); strings.Join(got, ",") != strings.Join(want, ",") || lost != 0 || dup != 0 {
		t.Fatalf("the classic queue holds %v, want %v", got, want)
	}

	readable := brokertest.Name(t, "take-readable")
	declareQueue(t, b, readable, nil)
	publishN(t, b, readable, "r", 3, nil)
	if _, err := b.TakeUnreadable(ctx, readable, broker.TakeOptions{Position: 2}, func(*broker.Message) error {
		t.Error("a readable message was kept")
		return nil
	}); !errors.Is(err, broker.ErrConflict) || !strings.Contains(err.Error(), "nothing was removed") {
		t.Errorf("take a readable message: err = %v, want a refusal", err)
	}
	waitDepth(t, b, readable, 3)

	quorum := brokertest.Name(t, "take-quorum")
	dest := brokertest.Name(t, "take-dest")
	declareQueue(t, b, quorum, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	declareQueue(t, b, dest, nil)
	publishN(t, b, quorum, "a", 10, nil)
	publishN(t, b, quorum, "p", 1, amqp.Table{"deep": deepTable(40)})
	publishN(t, b, quorum, "b", 9, nil)
	before = append(append(seq("a", 0, 10), "p-0"), seq("b", 0, 9)...)
	to := &broker.Destination{Kind: broker.ToQueue, Queue: dest}
	m, err = b.TakeUnreadable(ctx, quorum, broker.TakeOptions{Position: 11, To: to}, nil)
	if err != nil || m == nil || m.ID != "p-0" {
		t.Fatalf("move the unreadable message of the quorum queue: %+v, %v", m, err)
	}
	waitDepth(t, b, dest, 1)
	moved := mgmtIDs(t, b, dest)
	got = mgmtIDs(t, b, quorum)
	n, lost, dup = tally(before, got, moved)
	t.Logf("hostile tally: attack=deep-headers-move-by-position queue=quorum limit=5 version=%s before=20 after=%d (queue %d, moved %d) lost=%d duplicated=%d", env.Version, n, len(got), len(moved), lost, dup)
	if strings.Join(moved, ",") != "p-0" || lost != 0 || dup != 0 || n != 20 {
		t.Fatalf("the quorum queue holds %v and the destination %v: want 19 and p-0", got, moved)
	}
	// The messages before it went behind the others, in their order: no
	// delivery came back by a closed channel to a place of its own.
	if want := append(seq("b", 0, 9), seq("a", 0, 10)...); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the quorum queue's order after the take:\n got %v\nwant %v", got, want)
	}
	// No queue of dlq's is left behind.
	var qs []mgmtQueue
	if err := b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"?columns=name", nil, &qs); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if strings.HasPrefix(q.Name, "dlq-unreadable") {
			t.Errorf("queue %s was left behind", q.Name)
		}
	}
}

// TestTakeUnreadableHostile: a take that may not finish removes nothing
// and leaves nothing behind: a user with read permission only is refused
// before anything moves; a user who may write but not declare a shovel
// (no policymaker tag) is refused a move at the first shovel; evidence
// that cannot be kept (a full disk) puts the message back (or, for a
// discard that holds the messages, leaves it in its place). Every message
// is still in the queue once, and no queue of dlq's is left.
func TestTakeUnreadableHostile(t *testing.T) {
	b, env := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "take-hostile")
	declareQueue(t, b, q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	publishN(t, b, q, "a", 4, nil)
	publishN(t, b, q, "p", 1, amqp.Table{"deep": deepTable(40)})
	publishN(t, b, q, "b", 3, nil)
	before := append(append(seq("a", 0, 4), "p-0"), seq("b", 0, 3)...)
	leftBehind := func() (names []string) {
		var qs []mgmtQueue
		if err := b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"?columns=name", nil, &qs); err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if strings.HasPrefix(q.Name, "dlq-unreadable") {
				names = append(names, q.Name)
			}
		}
		return names
	}

	monitor := openMonitoring(t, env)
	if _, err := monitor.TakeUnreadable(ctx, q, broker.TakeOptions{Position: 5}, nil); !errors.Is(err, broker.ErrAccessDenied) {
		t.Errorf("take as the monitoring user: err = %v, want access denied", err)
	}
	writer := env.User(t, "writer", "management", ".*", ".*", ".*")
	w, err := Open(ctx, Config{URL: writer, ManagementURL: env.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	dest := brokertest.Name(t, "take-hostile-dest")
	declareQueue(t, b, dest, nil)
	if _, err := w.TakeUnreadable(ctx, q, broker.TakeOptions{Position: 5, To: &broker.Destination{Kind: broker.ToQueue, Queue: dest}}, nil); err == nil || !strings.Contains(err.Error(), "nothing was removed") {
		t.Errorf("move by a user who may not declare a shovel: err = %v, want a refusal that removed nothing", err)
	}
	full := errors.New("write /var/dlq/evidence.jsonl: no space left on device")
	if _, err := b.TakeUnreadable(ctx, q, broker.TakeOptions{Position: 5}, func(*broker.Message) error { return full }); err == nil ||
		!strings.Contains(err.Error(), "keeping it failed") || !strings.Contains(err.Error(), "nothing was removed") {
		t.Errorf("take with evidence that cannot be kept: err = %v, want it put back", err)
	}
	waitDepth(t, b, q, int64(len(before)))
	got := mgmtIDs(t, b, q)
	n, lost, dup := tally(before, got)
	t.Logf("hostile tally: attack=take-unreadable-denied-and-full-disk queue=quorum limit=5 version=%s before=%d after=%d lost=%d duplicated=%d", env.Version, len(before), n, lost, dup)
	if lost != 0 || dup != 0 || n != len(before) {
		t.Errorf("after the refused takes the queue holds %v, want each of %v once", got, before)
	}
	if names := leftBehind(); len(names) > 0 {
		t.Errorf("queues of dlq's left behind: %v", names)
	}
}

// TestUnreadableKeepsTheConnection: the frame guard lets dlq's client read
// a message with headers 32 levels deep as any other (the client's limit,
// met exactly), and stops at one 33 deep or with a table of 8,193 entries
// without losing the connection: a peek gives back what it held with an
// explicit nack. On a classic queue, and on a quorum queue where a requeue
// does not count (RabbitMQ 4.3), two peeks and a stats-like full read then
// change no message's place or x-delivery-count. (Without the guard the
// client closed the connection, and on 4.3 every held delivery came back
// at the end of the queue with x-delivery-count +1.)
func TestUnreadableKeepsTheConnection(t *testing.T) {
	b, env := openTest(t)
	kinds := []string{"classic"}
	if !b.requeueCounts() {
		kinds = append(kinds, "quorum")
	}
	wide := amqp.Table{}
	for i := range clientMaxEntries + 1 {
		wide[fmt.Sprintf("k%d", i)] = int32(i)
	}
	bad := []struct {
		name    string
		headers amqp.Table
	}{{"deep", amqp.Table{"deep": deepTable(32)}}, {"wide", amqp.Table{"wide": wide}}}
	for _, kind := range kinds {
		for _, v := range bad {
			t.Run(kind+"/"+v.name, func(t *testing.T) { testUnreadableKeepsTheConnection(t, b, env, kind, v.name, v.headers) })
		}
	}
}

func testUnreadableKeepsTheConnection(t *testing.T, b *Broker, env brokertest.RabbitEnv, kind, name string, bad amqp.Table) {
	q := brokertest.Name(t, "unreadable-guard")
	var args amqp.Table
	if kind == "quorum" {
		args = amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)}
	}
	declareQueue(t, b, q, args)
	publishN(t, b, q, "a", 3, nil)
	publishN(t, b, q, "edge", 1, amqp.Table{"deep": deepTable(31)})
	publishN(t, b, q, "p", 1, bad)
	publishN(t, b, q, "b", 3, nil)
	before := append(append(seq("a", 0, 3), "edge-0", "p-0"), seq("b", 0, 3)...)
	for i := range 2 {
		// The broker takes back what a read gave back asynchronously: the
		// next read starts once all are ready again.
		waitDepth(t, b, q, int64(len(before)))
		var read []string
		var shown *broker.Message
		_, err := b.Peek(context.Background(), q, broker.PeekOptions{}, func(m *broker.Message) error {
			read = append(read, m.ID)
			switch {
			case m.Unreadable != "":
				shown = m.Clone()
			case m.ID == "edge-0":
				if _, ok := m.Headers["deep"]; !ok {
					t.Errorf("peek %d: the message 32 levels deep was read without its headers", i+1)
				}
			}
			return nil
		})
		if !errors.Is(err, broker.ErrUnsupported) || !strings.Contains(err.Error(), "the connection kept") {
			t.Fatalf("peek %d: err = %v, want the unreadable error of a kept connection", i+1, err)
		}
		if shown == nil || shown.ID != "p-0" || shown.Position != "5" {
			t.Errorf("peek %d read %v and showed %+v; want p-0 at position 5", i+1, read, shown)
		}
	}
	waitDepth(t, b, q, int64(len(before)))
	var msgs []mgmtMessage
	body := map[string]any{"count": 100, "ackmode": "ack_requeue_true", "encoding": "auto"}
	if err := b.mgmtDo(context.Background(), "POST", "/queues/"+b.vhostPath()+"/"+url.PathEscape(q)+"/get", body, &msgs); err != nil {
		t.Fatal(err)
	}
	var after []string
	counted := 0
	for _, mm := range msgs {
		id, _ := mm.Properties["message_id"].(string)
		after = append(after, id)
		h, _ := mm.Properties["headers"].(map[string]any)
		if _, ok := h["x-delivery-count"]; ok {
			counted++
		}
	}
	n, lost, dup := tally(before, after)
	t.Logf("hostile tally: attack=%s-headers-connection-kept queue=%s version=%s before=%d after=%d lost=%d duplicated=%d counts-raised=%d",
		name, kind, env.Version, len(before), n, lost, dup, counted)
	if strings.Join(after, ",") != strings.Join(before, ",") || counted != 0 {
		t.Errorf("after two peeks the queue holds %v with %d counts raised, want %v and none", after, counted, before)
	}
}
