package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestUnreadableMessageEndToEnd: a queue holds 6 messages, one whose
// headers nest 40 deep (dlq's AMQP client refuses it), and 3 more. stats
// fails at it and leaves no message twice; peek shows it, marked, with its
// position; discard --position archives it and removes it; then every read
// works, and no message was lost or duplicated. It runs on a classic queue,
// and on a quorum queue with a delivery limit, where below RabbitMQ 4.3 the
// peek needs --get-unreadable (the management API's get counts there). On
// a 4.3 quorum queue, where a requeue does not count, neither stats nor
// peek changes a count or the order: both stop at the message and give back
// what they hold with an explicit nack, the connection kept; and there, as
// on a classic queue, the discard leaves the others in their places.
func TestUnreadableMessageEndToEnd(t *testing.T) {
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) { testUnreadableEndToEnd(t, kind) })
	}
}

func testUnreadableEndToEnd(t *testing.T, kind string) {
	r := newRIRabbit(t)
	var args amqp.Table
	peekFlags := []string{}
	if kind == "quorum" {
		args = amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(20)}
		if !brokertest.RabbitMQ(t).RequeueFree() {
			peekFlags = append(peekFlags, "--get-unreadable")
		}
	}
	q := r.queue(brokertest.Name(t, "unreadable-e2e"), args)
	deep := amqp.Table{"leaf": "x"}
	for range 40 {
		deep = amqp.Table{"n": deep}
	}
	var before []string
	pub := func(prefix string, n int, h amqp.Table) {
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			before = append(before, id)
			r.publish("", q, amqp.Publishing{MessageId: id, Body: []byte(id), Headers: h, DeliveryMode: amqp.Persistent})
		}
	}
	pub("a", 6, nil)
	pub("p", 1, amqp.Table{"deep": deep})
	pub("b", 3, nil)

	_, stderr, code := runDLQ(t, append(r.args, "stats", q)...)
	if code != ExitError || !strings.Contains(stderr, "could not be read") {
		t.Fatalf("stats: exit %d: %s", code, stderr)
	}
	r.waitDepth(q, 10)

	stdout, stderr, code := runDLQ(t, append(append(r.args, "peek", q, "-o", "json"), peekFlags...)...)
	var docs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || code != ExitError {
		t.Fatalf("peek --get-unreadable: exit %d, %v:\n%s\n%s", code, err, stdout, stderr)
	}
	last := docs[len(docs)-1]
	pos, _ := last["position"].(string)
	if last["id"] != "p-0" || pos == "" || !strings.Contains(fmt.Sprint(last["unreadable"]), "41 deep") {
		t.Fatalf("peek showed last %v, want p-0 marked unreadable with its position", last)
	}
	if !strings.Contains(stderr, "position "+pos) {
		t.Errorf("peek's error does not name --position %s: %s", pos, stderr)
	}
	if kind == "classic" || brokertest.RabbitMQ(t).RequeueFree() {
		// What stats and peek read went back in its place, uncounted.
		var got []string
		for _, d := range docs {
			got = append(got, fmt.Sprint(d["id"]))
			if n, _ := d["delivery_count"].(float64); n != 0 {
				t.Errorf("after stats and peek %v has x-delivery-count %v, want 0", d["id"], n)
			}
		}
		if want := "a-0,a-1,a-2,a-3,a-4,a-5,p-0"; strings.Join(got, ",") != want || pos != "7" {
			t.Errorf("after stats, peek read %s with p-0 at position %s, want %s at 7", strings.Join(got, ","), pos, want)
		}
	}
	r.waitDepth(q, 10)

	path := filepath.Join(t.TempDir(), "unreadable.jsonl")
	_, stderr, code = runDLQ(t, append(r.args, "discard", q, "--position", pos, "--archive-to", "file://"+path, "--yes")...)
	if code != ExitOK {
		t.Fatalf("discard --position %s: exit %d: %s", pos, code, stderr)
	}
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var archived []string
	_, _ = a.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error {
		archived = append(archived, m.ID)
		return nil
	})
	a.Close()

	stdout, stderr, code = runDLQ(t, append(r.args, "peek", q, "-o", "json", "--limit", "0")...)
	docs = nil
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || code != ExitOK {
		t.Fatalf("peek after the discard: exit %d, %v: %s", code, err, stderr)
	}
	var left []string
	counted := 0
	for _, d := range docs {
		left = append(left, fmt.Sprint(d["id"]))
		if n, _ := d["delivery_count"].(float64); n != 0 {
			counted++
		}
	}
	if kind == "classic" || brokertest.RabbitMQ(t).RequeueFree() {
		// The discard held the messages before it and gave them back in
		// their places, uncounted.
		if want := "a-0,a-1,a-2,a-3,a-4,a-5,b-0,b-1,b-2"; strings.Join(left, ",") != want || counted != 0 {
			t.Errorf("after the discard the queue holds %s with %d counts raised, want %s and none", strings.Join(left, ","), counted, want)
		}
	}
	seen := map[string]int{}
	for _, id := range append(append([]string{}, left...), archived...) {
		seen[id]++
	}
	lost, dup := 0, len(left)+len(archived)-len(seen)
	for _, id := range before {
		if seen[id] == 0 {
			lost++
		}
	}
	t.Logf("hostile tally: attack=deep-headers-end-to-end queue=%s version=%s before=10 after=%d (queue %d, archive %d) lost=%d duplicated=%d",
		kind, brokertest.RabbitMQ(t).Version, len(left)+len(archived), len(left), len(archived), lost, dup)
	if lost != 0 || dup != 0 || strings.Join(archived, ",") != "p-0" || len(left) != 9 {
		t.Fatalf("after the discard the queue holds %v and the archive %v", left, archived)
	}
}

// TestRedriveStopsAtAnUnreadableMessage: a redrive moves the messages
// before a message dlq's client cannot read, stops at it with exit code 3
// and an error that names --position (not --resume, which would meet it
// again), and leaves it and the messages after it in the source, in their
// order, the connection kept; on a classic queue and on a quorum queue
// where a requeue does not count, no count was raised.
func TestRedriveStopsAtAnUnreadableMessage(t *testing.T) {
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			var args amqp.Table
			if kind == "quorum" {
				args = amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(20)}
			}
			src := r.queue(brokertest.Name(t, "unreadable-src"), args)
			dst := r.queue(brokertest.Name(t, "unreadable-dst"), nil)
			deep := amqp.Table{"leaf": "x"}
			for range 40 {
				deep = amqp.Table{"n": deep}
			}
			for _, id := range []string{"a-0", "a-1", "a-2", "p-0", "b-0", "b-1"} {
				p := amqp.Publishing{MessageId: id, Body: []byte(id), DeliveryMode: amqp.Persistent}
				if id == "p-0" {
					p.Headers = amqp.Table{"deep": deep}
				}
				r.publish("", src, p)
			}
			_, stderr, code := runDLQ(t, append(r.args, "redrive", src, "--to", "queue:"+dst, "--yes")...)
			if code != ExitPartial || !strings.Contains(stderr, "--position N") || strings.Contains(stderr, "--resume") {
				t.Fatalf("redrive: exit %d, want %d naming --position and not --resume: %s", code, ExitPartial, stderr)
			}
			r.waitDepth(dst, 3)
			r.waitDepth(src, 3)
			var moved []string
			for _, d := range r.drain(dst) {
				moved = append(moved, d.MessageId)
			}
			if strings.Join(moved, ",") != "a-0,a-1,a-2" {
				t.Errorf("the destination holds %v, want a-0,a-1,a-2", moved)
			}
			stdout, stderr, code := runDLQ(t, append(r.args, "peek", src, "-o", "json", "--get-unreadable")...)
			var docs []map[string]any
			if err := json.Unmarshal([]byte(stdout), &docs); err != nil || code != ExitError || len(docs) != 1 {
				t.Fatalf("peek of the source: exit %d, %v:\n%s\n%s", code, err, stdout, stderr)
			}
			if docs[0]["id"] != "p-0" || docs[0]["position"] != "1" {
				t.Errorf("the source's head is %v at position %v, want p-0 at 1", docs[0]["id"], docs[0]["position"])
			}
			if n, _ := docs[0]["delivery_count"].(float64); n != 0 && (kind == "classic" || brokertest.RabbitMQ(t).RequeueFree()) {
				t.Errorf("p-0 has x-delivery-count %v after the redrive, want 0", n)
			}
			left := r.depth(src)
			t.Logf("hostile tally: attack=deep-headers-redrive queue=%s version=%s before=6 after=%d (moved %d, left %d)", kind, brokertest.RabbitMQ(t).Version, len(moved)+left, len(moved), left)
		})
	}
}
