package cmd

// Integration tests of dlq redrive, discard and purge against the real
// servers of `make test` (RabbitMQ, fauxqs, local-aws-sqs): dead letters
// made by the broker itself, moved through the command line.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/broker/sqs/sqsbench"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
)

// riRabbit is a plain AMQP connection for setting up and checking queues.
type riRabbit struct {
	t    *testing.T
	conn *amqp.Connection
	ch   *amqp.Channel
	args []string // dlq's global flags for this server
	url  string
	mgmt string
}

func newRIRabbit(t *testing.T) *riRabbit {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatalf("dial rabbitmq: %v", broker.Redact(err.Error()))
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	r := &riRabbit{t: t, conn: conn, ch: ch, args: rabbitArgs(t), url: env.AMQPURL, mgmt: env.MgmtURL}
	t.Cleanup(func() { conn.Close() })
	return r
}

// queue declares a durable queue (deleted at the end of the test).
func (r *riRabbit) queue(name string, args amqp.Table) string {
	r.t.Helper()
	if _, err := r.ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		r.t.Fatalf("declare %s: %v", name, err)
	}
	r.t.Cleanup(func() {
		if ch, err := r.conn.Channel(); err == nil {
			ch.QueueDelete(name, false, false, false)
			ch.Close()
		}
	})
	return name
}

func (r *riRabbit) exchange(name string) string {
	r.t.Helper()
	if err := r.ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		if ch, err := r.conn.Channel(); err == nil {
			ch.ExchangeDelete(name, false, false)
			ch.Close()
		}
	})
	return name
}

func (r *riRabbit) bind(q, key, ex string) {
	r.t.Helper()
	if err := r.ch.QueueBind(q, key, ex, false, nil); err != nil {
		r.t.Fatal(err)
	}
}

// publish sends ps to exchange ex with key and waits for the confirms.
func (r *riRabbit) publish(ex, key string, ps ...amqp.Publishing) {
	r.t.Helper()
	var ds []*amqp.DeferredConfirmation
	for _, p := range ps {
		d, err := r.ch.PublishWithDeferredConfirm(ex, key, false, false, p)
		if err != nil {
			r.t.Fatal(err)
		}
		ds = append(ds, d)
	}
	for _, d := range ds {
		if !d.Wait() {
			r.t.Fatal("publish nacked")
		}
	}
}

// depth is the number of ready messages (queue.declare passive: exact,
// unlike the management API's sampled statistics).
func (r *riRabbit) depth(q string) int {
	r.t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		r.t.Fatal(err)
	}
	defer ch.Close()
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		r.t.Fatalf("inspect %s: %v", q, err)
	}
	return st.Messages
}

func (r *riRabbit) waitDepth(q string, n int) {
	r.t.Helper()
	riPoll(r.t, 30*time.Second, fmt.Sprintf("%s to hold %d messages", q, n), func() bool { return r.depth(q) == n })
}

// reject takes every message of q and rejects it without requeue, so that
// RabbitMQ dead-letters it (and writes x-death).
func (r *riRabbit) reject(q string, n int) {
	r.t.Helper()
	for i := 0; i < n; i++ {
		d, ok, err := r.ch.Get(q, false)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			r.t.Fatalf("%s: only %d of %d messages to reject", q, i, n)
		}
		if err := d.Nack(false, false); err != nil {
			r.t.Fatal(err)
		}
	}
}

// drain takes every message of q (acknowledging it) in queue order.
func (r *riRabbit) drain(q string) []amqp.Delivery {
	r.t.Helper()
	var out []amqp.Delivery
	for {
		d, ok, err := r.ch.Get(q, false)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
		if err := d.Ack(false); err != nil {
			r.t.Fatal(err)
		}
	}
}

// riSorted is a sorted copy of ss, for comparing what reached a
// destination whose order a run does not promise.
func riSorted(ss []string) []string {
	return slices.Sorted(slices.Values(ss))
}

func riBodies(ds []amqp.Delivery) []string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d.Body)
	}
	return s
}

func riPoll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// riSummary parses a -o json redrive summary.
func riSummary(t *testing.T, stdout string) redrive.Summary {
	t.Helper()
	var s redrive.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("summary %q: %v", stdout, err)
	}
	return s
}

// riRemoval parses a -o json discard or purge summary, whose count is
// "discarded": Moved holds it.
func riRemoval(t *testing.T, stdout string) redrive.Summary {
	t.Helper()
	s := riSummary(t, stdout)
	var d struct {
		Discarded *int64 `json:"discarded"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || d.Discarded == nil {
		t.Fatalf("summary %q has no discarded count (%v)", stdout, err)
	}
	s.Moved = *d.Discarded
	return s
}

// riRich is a message with every property and typed application headers.
func riRich(i int) amqp.Publishing {
	return amqp.Publishing{
		ContentType: "application/json", ContentEncoding: "identity", DeliveryMode: amqp.Persistent, Priority: 4,
		CorrelationId: fmt.Sprintf("corr-%d", i), MessageId: fmt.Sprintf("msg-%d", i), Type: "order.created", AppId: "shop",
		Timestamp: time.Unix(1700000000+int64(i), 0).UTC(), ReplyTo: "replies",
		Headers: amqp.Table{"tenant": "acme", "attempt": int32(3), "big": int64(1) << 40, "ok": true, "ratio": 0.25,
			"raw": []byte{0, 1, 2, 0xff}, "nested": amqp.Table{"k": "v"}, "list": []any{"a", int32(1)}},
		Body: []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("é", 5))),
	}
}

// checkFidelity compares a redriven delivery with what was first published.
func checkFidelity(t *testing.T, d amqp.Delivery, want amqp.Publishing, keepDeath bool) {
	t.Helper()
	if !bytes.Equal(d.Body, want.Body) {
		t.Errorf("body %q, want %q", d.Body, want.Body)
	}
	if d.ContentType != want.ContentType || d.ContentEncoding != want.ContentEncoding || d.MessageId != want.MessageId ||
		d.CorrelationId != want.CorrelationId || !d.Timestamp.Equal(want.Timestamp) || d.Priority != want.Priority ||
		d.Type != want.Type || d.AppId != want.AppId || d.ReplyTo != want.ReplyTo || d.DeliveryMode != want.DeliveryMode {
		t.Errorf("properties (-want +got):\n%s", testdiff.Diff(
			[]any{want.ContentType, want.ContentEncoding, want.MessageId, want.CorrelationId, want.Timestamp, want.Priority, want.Type, want.AppId, want.ReplyTo, want.DeliveryMode},
			[]any{d.ContentType, d.ContentEncoding, d.MessageId, d.CorrelationId, d.Timestamp, d.Priority, d.Type, d.AppId, d.ReplyTo, d.DeliveryMode}))
	}
	for k, v := range want.Headers {
		got, ok := d.Headers[k]
		if !ok {
			t.Errorf("header %s lost", k)
			continue
		}
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("header %s = %T %v, want %T %v", k, got, got, v, v)
		}
	}
	for k := range d.Headers {
		if broker.IsDeathHeader(k) && !keepDeath {
			t.Errorf("death header %s not stripped", k)
		}
	}
	if _, ok := d.Headers["x-death"]; keepDeath && !ok {
		t.Errorf("x-death stripped despite --keep-death-headers")
	}
	rec, ok := d.Headers[redrive.RedriveHeader].(amqp.Table)
	if !ok {
		t.Fatalf("%s header = %#v, want a table", redrive.RedriveHeader, d.Headers[redrive.RedriveHeader])
	}
	if rec["source"] == "" || rec["time"] == nil || rec["count"] == nil {
		t.Errorf("%s = %v", redrive.RedriveHeader, rec)
	}
}

// A retry ladder (work → retry → dlq, each hop a rejection that RabbitMQ
// dead-letters and records in x-death, newest first) is redriven to the
// hop that put the messages into the DLQ, with every property and header
// kept, death headers stripped and x-dlq-redrive added; a second round with
// --keep-death-headers keeps x-death and counts the redrive twice.
//
// The first round runs with --concurrency 1, which keeps the source's
// order at the destination (`dlq help redrive-safety`, "Order"); the
// second runs with the default concurrency, where windows may overtake each
// other, so it matches messages by their ID.
func TestRedriveIntegrationRabbitRetryLadder(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "ladder")
	work, ladder := r.exchange(base+".work"), r.exchange(base+".ladder")
	dlq := r.queue(base+".dlq", nil)
	retry := r.queue(base+".retry", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	wq := r.queue(base+".q", amqp.Table{"x-dead-letter-exchange": ladder, "x-dead-letter-routing-key": "r1"})
	r.bind(wq, "job", work)
	r.bind(retry, "r1", ladder)
	const n = 12
	var sent []amqp.Publishing
	for i := 0; i < n; i++ {
		sent = append(sent, riRich(i))
	}
	r.publish(work, "job", sent...)
	r.reject(wq, n)
	r.waitDepth(retry, n)
	r.reject(retry, n)
	r.waitDepth(dlq, n)

	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "-o", "json", "--no-journal", "--concurrency", "1")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	s := riSummary(t, stdout)
	if s.Moved != n || s.Destinations["exchange:"+ladder+":r1"] != n {
		t.Fatalf("moved %d, destinations %v: want %d moved to the ladder hop", s.Moved, s.Destinations, n)
	}
	if r.depth(dlq) != 0 {
		t.Errorf("dlq still holds %d", r.depth(dlq))
	}
	got := r.drain(retry)
	if len(got) != n {
		t.Fatalf("retry queue has %d of %d", len(got), n)
	}
	if ids, want := riMessageIDs(got), riMessageIDs(sent); !slices.Equal(ids, want) {
		t.Errorf("with --concurrency 1 the messages arrived in the order %v, want the source's order %v", ids, want)
	}
	byID := map[string]amqp.Publishing{}
	for _, p := range sent {
		byID[p.MessageId] = p
	}
	for _, d := range got {
		checkFidelity(t, d, byID[d.MessageId], false)
		if c := d.Headers[redrive.RedriveHeader].(amqp.Table)["count"]; fmt.Sprint(c) != "1" {
			t.Errorf("redrive count %v, want 1", c)
		}
	}

	// Back to the DLQ through the ladder's last hop, then out again with
	// the death headers kept.
	r.publish(ladder, "r1", riRepublish(got)...)
	r.reject(retry, n)
	r.waitDepth(dlq, n)
	stdout, stderr, code = runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--keep-death-headers", "-o", "json", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	again := r.drain(retry)
	if ids, want := riMessageIDs(again), riMessageIDs(sent); !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))) {
		t.Errorf("second round moved %v, want %v (in any order)", ids, want)
	}
	for _, d := range again {
		checkFidelity(t, d, byID[d.MessageId], true)
		if c := d.Headers[redrive.RedriveHeader].(amqp.Table)["count"]; fmt.Sprint(c) != "2" {
			t.Errorf("redrive count %v, want 2", c)
		}
	}
}

// riMessageIDs lists the message-id properties of deliveries or
// publishings, in their order.
func riMessageIDs[M amqp.Delivery | amqp.Publishing](ms []M) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		switch m := any(m).(type) {
		case amqp.Delivery:
			ids[i] = m.MessageId
		case amqp.Publishing:
			ids[i] = m.MessageId
		}
	}
	return ids
}

// riRepublish turns deliveries back into publishings, headers and all.
func riRepublish(ds []amqp.Delivery) []amqp.Publishing {
	var ps []amqp.Publishing
	for _, d := range ds {
		ps = append(ps, amqp.Publishing{Headers: d.Headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			DeliveryMode: d.DeliveryMode, Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo,
			MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, AppId: d.AppId, Body: d.Body})
	}
	return ps
}

// riDeadLetters makes a DLQ of the given kind fed by a work queue, and n
// dead letters {"n":i} in it, rejected by a consumer.
func riDeadLetters(t *testing.T, r *riRabbit, kind string, n int) (work, dlq string) {
	t.Helper()
	base := brokertest.Name(t, kind)
	dlq = r.queue(base+".dlq", amqp.Table{"x-queue-type": kind})
	work = r.queue(base+".q", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	var ps []amqp.Publishing
	for i := 0; i < n; i++ {
		ps = append(ps, amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", MessageId: fmt.Sprint("m", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	r.publish("", work, ps...)
	r.reject(work, n)
	r.waitDepth(dlq, n)
	return work, dlq
}

// --filter on a quorum DLQ: the matching messages go home; the others stay
// in one pass, in their order, without their delivery count raised (they
// are rotated, never returned: a return would raise x-delivery-count).
// Then the same on a classic DLQ, where they are held and returned in
// place.
func TestRedriveIntegrationRabbitFilter(t *testing.T) {
	for _, kind := range []string{"quorum", "classic"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			const n = 30
			work, dlq := riDeadLetters(t, r, kind, n)
			stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--filter", ".body.n % 3 == 0", "-o", "json", "--no-journal")...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s %s", code, stdout, stderr)
			}
			s := riSummary(t, stdout)
			if s.Moved != 10 || s.Examined != n || s.Skipped[redrive.ReasonFiltered] != 20 {
				t.Fatalf("moved %d, examined %d, skipped %v: want 10 moved, %d examined once, 20 filtered", s.Moved, s.Examined, s.Skipped, n)
			}
			var wantMoved, wantLeft []string
			for i := 0; i < n; i++ {
				if i%3 == 0 {
					wantMoved = append(wantMoved, fmt.Sprintf(`{"n":%d}`, i))
				} else {
					wantLeft = append(wantLeft, fmt.Sprintf(`{"n":%d}`, i))
				}
			}
			// Order at the destination is promised only with --concurrency 1.
			if got := riBodies(r.drain(work)); !slices.Equal(riSorted(got), riSorted(wantMoved)) {
				t.Errorf("moved %v, want %v", got, wantMoved)
			}
			left := r.drain(dlq)
			if got := riBodies(left); !slices.Equal(got, wantLeft) {
				t.Errorf("left in the DLQ %v, want %v in their order", got, wantLeft)
			}
			for _, d := range left {
				if c, ok := d.Headers["x-delivery-count"]; ok && fmt.Sprint(c) != "0" {
					t.Errorf("%s: x-delivery-count %v after the redrive", d.MessageId, c)
				}
				if _, ok := d.Headers["x-death"]; !ok {
					t.Errorf("%s lost its x-death while staying in the DLQ", d.MessageId)
				}
			}
		})
	}
}

// --dry-run reads under the peek-safety rules: depth, order and delivery
// counts are unchanged and nothing reaches the destination.
func TestRedriveIntegrationRabbitDryRun(t *testing.T) {
	for _, kind := range []string{"quorum", "classic"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			work, dlq := riDeadLetters(t, r, kind, 20)
			stdout, stderr, code := runDLQ(t, append(r.args, "redrive", dlq, "--dry-run", "--filter", ".body.n < 5", "--transform", ".body.retry = 0")...)
			if code != ExitOK || !strings.Contains(stdout, "would move 5 of 20") || !strings.Contains(stdout, `"retry"`) {
				t.Fatalf("exit %d: %s %s", code, stdout, stderr)
			}
			// The whole queue is read by rotation (on RabbitMQ 4.3 a
			// quorum queue is held): the first line says so, and nothing
			// says "nothing was changed" beside it.
			changed := "rotated 20 messages"
			if kind == "quorum" && brokertest.RabbitMQ(t).RequeueFree() {
				changed = "20 messages now carry the redelivered flag and x-acquired-count +1 (x-delivery-count unchanged, each in its place)"
			}
			first, _, _ := strings.Cut(stdout, "\n")
			if !strings.HasPrefix(first, "dry run: no message was moved, but reading the queue changed it: "+changed) ||
				strings.Contains(stdout+stderr, "nothing was changed") {
				t.Errorf("the dry run does not say what its read changed; stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			if d := r.depth(work); d != 0 {
				t.Errorf("dry run published %d messages", d)
			}
			left := r.drain(dlq)
			var want []string
			for i := 0; i < 20; i++ {
				want = append(want, fmt.Sprintf(`{"n":%d}`, i))
			}
			if got := riBodies(left); !slices.Equal(got, want) {
				t.Errorf("after a dry run the DLQ holds %v, want %v", got, want)
			}
			for _, d := range left {
				if c, ok := d.Headers["x-delivery-count"]; ok && fmt.Sprint(c) != "0" {
					t.Errorf("dry run raised x-delivery-count to %v", c)
				}
			}
		})
	}
}

// Messages whose origin no longer routes anywhere come back as returns:
// they stay in the DLQ, are reported as unroutable, and the run exits 3
// (partly done) when others moved.
func TestRedriveIntegrationRabbitUnroutable(t *testing.T) {
	r := newRIRabbit(t)
	qa, _, dlq := riTwoOrigins(t, r, "unroutable", 8, func(i int) amqp.Publishing {
		id := fmt.Sprint("ab"[i%2:i%2+1], i/2)
		return amqp.Publishing{MessageId: id, Body: []byte(id)}
	})
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--no-journal")...)
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d (partial): %s %s", code, ExitPartial, stdout, stderr)
	}
	if !strings.Contains(stdout, "unroutable") || !strings.Contains(stderr, "unroutable 4") {
		t.Errorf("unroutable messages not reported: %s / %s", stdout, stderr)
	}
	if got := riBodies(r.drain(qa)); !slices.Equal(riSorted(got), []string{"a0", "a1", "a2", "a3"}) {
		t.Errorf("moved %v", got)
	}
	if got := riBodies(r.drain(dlq)); !slices.Equal(got, []string{"b0", "b1", "b2", "b3"}) {
		t.Errorf("left in the DLQ %v, want the unroutable ones", got)
	}
}

// riTwoOrigins dead-letters n messages into one DLQ, alternately through
// origin queues a and b bound to one exchange (message i from msg(i)),
// then unbinds b: the messages that died in b no longer route.
func riTwoOrigins(t *testing.T, r *riRabbit, prefix string, n int, msg func(i int) amqp.Publishing) (qa, qb, dlq string) {
	t.Helper()
	base := brokertest.Name(t, prefix)
	ex := r.exchange(base + ".ex")
	dlq = r.queue(base+".dlq", nil)
	qa = r.queue(base+".a", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	qb = r.queue(base+".b", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	r.bind(qa, "a", ex)
	r.bind(qb, "b", ex)
	for i := 0; i < n; i++ {
		r.publish(ex, "ab"[i%2:i%2+1], msg(i))
	}
	r.reject(qa, n/2)
	r.reject(qb, n/2)
	r.waitDepth(dlq, n)
	if err := r.ch.QueueUnbind(qb, "b", ex, nil); err != nil {
		t.Fatal(err)
	}
	return qa, qb, dlq
}

// --transform rewrites the messages it can; a message whose transform
// fails (a body that is not JSON) or produces an invalid result (a
// priority outside 0–255) is counted, never published, and stays.
func TestRedriveIntegrationRabbitTransform(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "transform")
	dlq := r.queue(base+".dlq", nil)
	dst := r.queue(base+".dst", nil)
	r.publish("", dlq,
		amqp.Publishing{MessageId: "ok", Body: []byte(`{"n":1,"retry":5}`)},
		amqp.Publishing{MessageId: "text", Body: []byte(`not json`)},
		amqp.Publishing{MessageId: "prio", Body: []byte(`{"n":3,"retry":5,"prio":true}`)},
	)
	tr := `.body.retry = 0 | if .body.prio then .properties.priority = 300 else . end`
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--to", "queue:"+dst, "--transform", tr, "-o", "json", "--no-journal")...)
	if code != ExitPartial {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	s := riSummary(t, stdout)
	if s.Moved != 1 || s.Failed[redrive.ReasonInvalidTransform] != 2 {
		t.Fatalf("moved %d, failed %v; want 1, %s 2", s.Moved, s.Failed, redrive.ReasonInvalidTransform)
	}
	moved := r.drain(dst)
	if len(moved) != 1 || string(moved[0].Body) != `{"n":1,"retry":0}` {
		t.Fatalf("destination got %v", riBodies(moved))
	}
	left := r.drain(dlq)
	if len(left) != 2 || string(left[0].Body) != "not json" || left[1].MessageId != "prio" {
		t.Errorf("left %v", riBodies(left))
	}
}

// --read-only refuses every mutation with exit 4 before touching the
// broker.
func TestRedriveIntegrationReadOnly(t *testing.T) {
	r := newRIRabbit(t)
	work, dlq := riDeadLetters(t, r, "classic", 5)
	for _, args := range [][]string{
		{"redrive", dlq},
		{"discard", dlq, "--filter", "true", "--no-archive", "--yes"},
		{"purge", dlq, "--no-archive", "--yes"},
	} {
		_, stderr, code := runDLQ(t, append(append([]string{"--read-only"}, r.args...), args...)...)
		if code != ExitDenied || !strings.Contains(stderr, "read-only") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
	if r.depth(dlq) != 5 || r.depth(work) != 0 {
		t.Errorf("read-only run changed the broker: dlq %d work %d", r.depth(dlq), r.depth(work))
	}
	// A dry run is allowed.
	if _, stderr, code := runDLQ(t, append(append([]string{"--read-only"}, r.args...), "redrive", dlq, "--dry-run")...); code != ExitOK {
		t.Errorf("read-only dry run: exit %d %s", code, stderr)
	}
}

// A missing source: one line naming the queue and the fix, exit 1, no
// summary of zeros, and no journal offered as interrupted afterwards.
func TestRedriveIntegrationRabbitMissingSource(t *testing.T) {
	r := newRIRabbit(t)
	name := brokertest.Name(t, "missing")
	for i := 0; i < 2; i++ {
		stdout, stderr, code := runDLQ(t, append(r.args, "redrive", name, "--yes")...)
		if code != ExitError || stdout != "" {
			t.Fatalf("run %d: exit %d, stdout %q", i+1, code, stdout)
		}
		assertOneLine(t, stderr)
		if !strings.Contains(stderr, "`"+name+"` not found") || !strings.Contains(stderr, "dlq queues") ||
			strings.Count(stderr, name) > 2 || strings.Contains(stderr, "interrupted") {
			t.Errorf("run %d: %s", i+1, stderr)
		}
	}
}

// A destination that routes nowhere (a missing queue, an exchange with
// nothing bound with the key, or nothing bound at all) is refused before a
// message is taken: one line naming it and the fix, exit 1, the quorum DLQ
// as it was (no rotation, no delivery count raised). An exchange given
// without a key routes each message with the key of its death record.
func TestRedriveIntegrationRabbitDestinationChecks(t *testing.T) {
	r := newRIRabbit(t)
	work, dlq := riDeadLetters(t, r, "quorum", 5)
	ex := r.exchange(brokertest.Name(t, "ex"))
	for _, to := range []string{"queue:" + brokertest.Name(t, "missing"), "exchange:" + ex + ":unbound", "exchange:" + ex} {
		stdout, stderr, code := runDLQ(t, append(r.args, "redrive", dlq, "--to", to, "--yes")...)
		if code != ExitError || stdout != "" {
			t.Errorf("--to %s: exit %d, stdout %q", to, code, stdout)
		}
		assertOneLine(t, stderr)
		if !strings.Contains(stderr, "`"+to+"`") || !strings.Contains(stderr, "nothing was moved") {
			t.Errorf("--to %s: %s", to, stderr)
		}
	}
	ds := r.drain(dlq)
	if len(ds) != 5 {
		t.Fatalf("the DLQ holds %d, want the 5 it had", len(ds))
	}
	for _, d := range ds {
		if n, _ := d.Headers["x-delivery-count"].(int64); n > 0 || d.Redelivered {
			t.Errorf("%s: delivery count %v, redelivered %v after a refused run", d.MessageId, d.Headers["x-delivery-count"], d.Redelivered)
		}
	}
	r.publish("", work, riRepublish(ds)...)
	r.reject(work, 5)
	r.waitDepth(dlq, 5)

	dst := r.queue(brokertest.Name(t, "dst"), nil)
	r.bind(dst, work, ex)
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", dlq, "--to", "exchange:"+ex, "--yes", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("--to exchange:%s: exit %d %s", ex, code, stderr)
	}
	if s := riSummary(t, stdout); s.Moved != 5 || s.Destinations["exchange:"+ex+":"+work] != 5 {
		t.Errorf("moved %d, destinations %v; want 5 to exchange:%s:%s", s.Moved, s.Destinations, ex, work)
	}
	if r.depth(dst) != 5 || r.depth(dlq) != 0 {
		t.Errorf("dst %d dlq %d", r.depth(dst), r.depth(dlq))
	}
}

// discard --archive-to and purge --archive-to on RabbitMQ: the archive
// holds exactly the removed messages with their death records, the rest
// stays; then the archive is redriven into a queue. The audit log records
// each step without the password.
func TestRedriveIntegrationRabbitDiscardPurgeArchive(t *testing.T) {
	r := newRIRabbit(t)
	_, dlq := riDeadLetters(t, r, "quorum", 12)
	dir := t.TempDir()
	disc := filepath.Join(dir, "discarded.jsonl")
	stdout, stderr, code := runDLQ(t, append(r.args, "discard", dlq, "--filter", ".body.n >= 8", "--archive-to", "file://"+disc, "--yes", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if s := riRemoval(t, stdout); s.Moved != 4 || s.Archived != 4 {
		t.Fatalf("discard: discarded %d, archived %d; want 4, 4", s.Moved, s.Archived)
	}
	arch := brokertest.ReadArchive(t, disc)
	if len(arch) != 4 {
		t.Fatalf("archive holds %d messages, want 4", len(arch))
	}
	for i, m := range arch {
		if m.Death == nil {
			t.Errorf("archived %d: %s without a death record", i, m.Body)
		} else if string(m.Body) != fmt.Sprintf(`{"n":%d}`, 8+i) || m.Death.Reason != "rejected" {
			t.Errorf("archived %d: %s, death reason %q; want {\"n\":%d}, rejected", i, m.Body, m.Death.Reason, 8+i)
		}
	}
	r.waitDepth(dlq, 8)

	all := filepath.Join(dir, "purged.jsonl.gz")
	stdout, stderr, code = runDLQ(t, append(r.args, "purge", dlq, "--archive-to", "file://"+all, "--yes")...)
	if code != ExitOK || !strings.Contains(stdout, "removed 8") {
		t.Fatalf("purge: exit %d: %s %s", code, stdout, stderr)
	}
	if got := len(brokertest.ReadArchive(t, all)); got != 8 {
		t.Errorf("purge archive holds %d, want 8", got)
	}
	if d := r.depth(dlq); d != 0 {
		t.Errorf("dlq holds %d after purge", d)
	}

	// The archive goes back into a queue on the broker.
	back := r.queue(brokertest.Name(t, "back"), nil)
	stdout, stderr, code = runDLQ(t, "--management-url", r.mgmt, "redrive", "--yes", "file://"+all, "--to", r.url+"#queue:"+back, "-o", "json", "--no-journal")
	if code != ExitOK {
		t.Fatalf("redrive archive: exit %d: %s %s", code, stdout, stderr)
	}
	got := r.drain(back)
	if len(got) != 8 || !slices.Contains(riBodies(got), `{"n":0}`) {
		t.Fatalf("queue got %v", riBodies(got))
	}
	if _, ok := got[0].Headers["x-death"]; ok {
		t.Errorf("death headers not stripped from archived messages")
	}
	// The archive is read-only: it still holds everything.
	if n := len(brokertest.ReadArchive(t, all)); n != 8 {
		t.Errorf("archive holds %d after the redrive", n)
	}
	riCheckAudit(t, "discard", "purge", "redrive")
}

// riCheckAudit checks that the audit log has the actions and no secret.
func riCheckAudit(t *testing.T, actions ...string) {
	t.Helper()
	stdout, _, code := runDLQ(t, "audit", "-o", "json")
	if code != ExitOK {
		t.Fatalf("dlq audit: exit %d", code)
	}
	for _, a := range actions {
		if !strings.Contains(stdout, `"action": "`+a+`"`) && !strings.Contains(stdout, `"action":"`+a+`"`) {
			t.Errorf("audit log has no %s record", a)
		}
	}
	f := &Factory{Options: &GlobalOptions{}}
	raw, err := os.ReadFile(f.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, string(raw))
}

// riSQS is a plain SQS client on one emulator.
type riSQS struct {
	t    *testing.T
	c    *awssqs.Client
	args []string
	ep   string
}

func newRISQS(t *testing.T, endpoint string) *riSQS {
	t.Helper()
	c := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: aws.AnonymousCredentials{}}, dlqsqs.OwnRequestBodies)
	return &riSQS{t: t, c: c, ep: endpoint, args: []string{"--broker", "sqs://us-east-1", "--endpoint-url", endpoint}}
}

func (s *riSQS) queue(name string, attrs map[string]string) string {
	s.t.Helper()
	out, err := s.c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		s.t.Fatalf("create %s: %v", name, err)
	}
	u := aws.ToString(out.QueueUrl)
	s.t.Cleanup(func() { s.c.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

func (s *riSQS) arn(u string) string {
	s.t.Helper()
	out, err := s.c.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

func (s *riSQS) send(u string, es ...sqstypes.SendMessageBatchRequestEntry) {
	s.t.Helper()
	for len(es) > 0 {
		k := min(len(es), 10)
		batch := es[:k]
		for i := range batch {
			batch[i].Id = aws.String(strconv.Itoa(i))
		}
		out, err := s.c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: batch})
		if err != nil {
			s.t.Fatalf("send: %v", err)
		}
		if len(out.Failed) > 0 {
			s.t.Fatalf("send: %d failed:\n%s", len(out.Failed), testdiff.Render(out.Failed))
		}
		es = es[k:]
	}
}

// drain receives and deletes every message of u, in receive order.
func (s *riSQS) drain(u string) []sqstypes.Message {
	s.t.Helper()
	all, err := sqsbench.Drain(context.Background(), s.c, u)
	if err != nil {
		s.t.Fatal(err)
	}
	return all
}

func (s *riSQS) count(u string) int {
	s.t.Helper()
	out, err := s.c.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		s.t.Fatal(err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b
}

func riStr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// SQS standard to its origin (found by the RedrivePolicy scan on fauxqs):
// body and attributes (String, Number, Binary, custom types) kept,
// x-dlq-redrive added; a --filter leaves the rest with one receive each.
func TestRedriveIntegrationSQSFidelityAndFilter(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "sqsfid")
	dlq := s.queue(base+"-dlq", nil)
	src := s.queue(base+"-src", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))})
	var es []sqstypes.SendMessageBatchRequestEntry
	for i := 0; i < 20; i++ {
		es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprintf(`{"n":%d,"txt":"ü"}`, i)),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"tenant": riStr("acme"),
				"n":      {DataType: aws.String("Number.int"), StringValue: aws.String(strconv.Itoa(i))},
				"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 0xfe}},
			}})
	}
	s.send(dlq, es...)
	stdout, stderr, code := runDLQ(t, append(s.args, "redrive", "--yes", base+"-dlq", "--filter", ".body.n < 10", "-o", "json", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if sum := riSummary(t, stdout); sum.Moved != 10 || sum.Skipped[redrive.ReasonFiltered] != 10 || sum.Examined != 20 {
		t.Fatalf("moved %d, skipped %v, examined %d; want 10, %s 10, 20", sum.Moved, sum.Skipped, sum.Examined, redrive.ReasonFiltered)
	}
	moved := s.drain(src)
	if len(moved) != 10 {
		t.Fatalf("source got %d", len(moved))
	}
	for _, m := range moved {
		var body struct{ N int }
		json.Unmarshal([]byte(aws.ToString(m.Body)), &body)
		a := m.MessageAttributes
		if !strings.HasSuffix(aws.ToString(m.Body), `"txt":"ü"}`) || aws.ToString(a["tenant"].StringValue) != "acme" ||
			aws.ToString(a["n"].DataType) != "Number.int" || aws.ToString(a["n"].StringValue) != strconv.Itoa(body.N) ||
			!bytes.Equal(a["blob"].BinaryValue, []byte{0, 1, 0xfe}) {
			t.Errorf("message lost fidelity: %s %v", aws.ToString(m.Body), a)
		}
		rec := aws.ToString(a[redrive.RedriveHeader].StringValue)
		if !strings.Contains(rec, `"count":1`) || !strings.Contains(rec, base+"-dlq") {
			t.Errorf("%s = %q", redrive.RedriveHeader, rec)
		}
	}
	left := s.drain(dlq)
	if len(left) != 10 {
		t.Fatalf("dlq kept %d, want 10", len(left))
	}
	for _, m := range left {
		// One receive by dlq, one by this drain.
		if c := m.Attributes["ApproximateReceiveCount"]; c != "2" {
			t.Errorf("left message received %s times, want 2 (once by the run)", c)
		}
	}
}

// FIFO on fauxqs: group order kept, and each redrive gives new
// deduplication ids, so the same messages redriven again within 5 minutes
// (into a queue with content-based deduplication) all arrive.
func TestRedriveIntegrationSQSFIFO(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "fifo")
	fifo := map[string]string{"FifoQueue": "true"}
	dlq := s.queue(base+"-dlq.fifo", fifo)
	dst := s.queue(base+"-dst.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	fill := func(round int) {
		var es []sqstypes.SendMessageBatchRequestEntry
		for i := 0; i < 30; i++ {
			es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprintf("g%d-%02d", i%3, i)),
				MessageGroupId: aws.String(fmt.Sprint("g", i%3)), MessageDeduplicationId: aws.String(fmt.Sprintf("r%d-%d", round, i))})
		}
		s.send(dlq, es...)
	}
	for round := 0; round < 2; round++ {
		fill(round)
		stdout, stderr, code := runDLQ(t, append(s.args, "redrive", "--yes", base+"-dlq.fifo", "--to", "queue:"+base+"-dst.fifo", "-o", "json", "--no-journal")...)
		if code != ExitOK {
			t.Fatalf("round %d: exit %d: %s %s", round, code, stdout, stderr)
		}
		if sum := riSummary(t, stdout); sum.Moved != 30 {
			t.Fatalf("round %d: moved %d, want 30", round, sum.Moved)
		}
	}
	got := s.drain(dst)
	if len(got) != 60 {
		t.Fatalf("destination holds %d of 60: a redrive within 5 minutes was deduplicated away", len(got))
	}
	last := map[string]string{}
	seen := map[string]int{}
	for _, m := range got {
		g, b := m.Attributes["MessageGroupId"], aws.ToString(m.Body)
		if strings.HasPrefix(m.Attributes["MessageDeduplicationId"], "r") {
			t.Errorf("%s kept its original deduplication id", b)
		}
		seen[b]++
		// Each group's bodies rise within a round, then start again.
		if l, ok := last[g]; ok && b <= l && seen[b] == 1 {
			t.Errorf("group %s out of order: %s after %s", g, b, l)
		}
		last[g] = b
	}
}

// SQS → RabbitMQ and RabbitMQ → SQS keep what the documented mapping
// keeps: attributes become typed headers (and back), AMQP properties
// travel as dlq-* attributes, the SQS MessageId becomes the message-id.
func TestRedriveIntegrationCrossBroker(t *testing.T) {
	env := brokertest.SQS(t)
	r := newRIRabbit(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "cross")
	sq := s.queue(base+"-sqs", nil)
	rq := r.queue(base+".rabbit", nil)
	s.send(sq, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(`{"id":1}`), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
		"tenant": riStr("acme"), "n": {DataType: aws.String("Number"), StringValue: aws.String("42")}, "blob": {DataType: aws.String("Binary"), BinaryValue: []byte{9, 8}}}})

	stdout, stderr, code := runDLQ(t, append(s.args, "--management-url", r.mgmt, "redrive", "--yes", base+"-sqs", "--to", r.url+"#queue:"+rq, "-o", "json", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("sqs → rabbitmq: exit %d: %s %s", code, stdout, stderr)
	}
	got := r.drain(rq)
	if len(got) != 1 {
		t.Fatalf("rabbitmq queue has %d", len(got))
	}
	d := got[0]
	if string(d.Body) != `{"id":1}` || d.Headers["tenant"] != "acme" || fmt.Sprint(d.Headers["n"]) != "42" ||
		!bytes.Equal(d.Headers["blob"].([]byte), []byte{9, 8}) || d.MessageId == "" || d.DeliveryMode != amqp.Persistent {
		t.Errorf("mapped message: body %s, tenant %v, n %v, blob %v, message id %q, delivery mode %d; want {\"id\":1}, acme, 42, [9 8], set, %d",
			d.Body, d.Headers["tenant"], d.Headers["n"], d.Headers["blob"], d.MessageId, d.DeliveryMode, amqp.Persistent)
	}
	if _, ok := d.Headers[redrive.RedriveHeader].(amqp.Table); !ok {
		t.Errorf("no %s table", redrive.RedriveHeader)
	}

	// And back: properties and headers become attributes.
	r.publish("", rq, riRich(7))
	dst := s.queue(base+"-back", nil)
	stdout, stderr, code = runDLQ(t, append(r.args, "--endpoint-url", env.Endpoint, "redrive", "--yes", rq, "--to", "sqs://us-east-1#queue:"+base+"-back", "-o", "json", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("rabbitmq → sqs: exit %d: %s %s", code, stdout, stderr)
	}
	back := s.drain(dst)
	if len(back) != 1 {
		t.Fatalf("sqs queue has %d", len(back))
	}
	a := back[0].MessageAttributes
	if aws.ToString(back[0].Body) != string(riRich(7).Body) || aws.ToString(a["dlq-content-type"].StringValue) != "application/json" ||
		aws.ToString(a["dlq-message-id"].StringValue) != "msg-7" || aws.ToString(a["dlq-correlation-id"].StringValue) != "corr-7" ||
		aws.ToString(a["tenant"].StringValue) != "acme" || a["dlq-amqp"].StringValue == nil {
		t.Errorf("mapped attributes %v", riAttrs(a))
	}
	if len(a) > 10 {
		t.Errorf("%d attributes, SQS allows 10", len(a))
	}
}

func riAttrs(a map[string]sqstypes.MessageAttributeValue) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = aws.ToString(v.DataType) + ":" + aws.ToString(v.StringValue)
	}
	return m
}

// An SQS message that already has 10 attributes has no room for
// x-dlq-redrive: it is refused with the fix named, and stays; with
// --no-redrive-header it moves with its attributes unchanged.
func TestRedriveIntegrationSQSAttributeLimit(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "attrs")
	dlq := s.queue(base+"-dlq", nil)
	dst := s.queue(base+"-dst", nil)
	attrs := map[string]sqstypes.MessageAttributeValue{}
	for i := 0; i < 10; i++ {
		attrs[fmt.Sprint("a", i)] = riStr("v")
	}
	s.send(dlq, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String("full"), MessageAttributes: attrs})
	stdout, stderr, code := runDLQ(t, append(s.args, "redrive", "--yes", base+"-dlq", "--to", "queue:"+base+"-dst", "--no-journal")...)
	if code != ExitError || !strings.Contains(stdout, "attribute-limit") || !strings.Contains(stdout, "--no-redrive-header") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if n := s.count(dst); n != 0 {
		t.Fatalf("destination got %d", n)
	}
	riPoll(t, 10*time.Second, "the refused message to be visible again", func() bool { return s.count(dlq) == 1 })
	stdout, stderr, code = runDLQ(t, append(s.args, "redrive", "--yes", base+"-dlq", "--to", "queue:"+base+"-dst", "--no-redrive-header", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	got := s.drain(dst)
	if len(got) != 1 || len(got[0].MessageAttributes) != 10 {
		t.Fatalf("moved %v", got)
	}
}

// discard and purge with --archive-to on SQS; the archive is redriven back.
func TestRedriveIntegrationSQSDiscardPurgeArchive(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "sqsdisc")
	dlq := s.queue(base+"-dlq", nil)
	var es []sqstypes.SendMessageBatchRequestEntry
	for i := 0; i < 15; i++ {
		es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i)),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"tenant": riStr("acme")}})
	}
	s.send(dlq, es...)
	dir := t.TempDir()
	disc := filepath.Join(dir, "d.jsonl")
	stdout, stderr, code := runDLQ(t, append(s.args, "discard", base+"-dlq", "--filter", ".body.n < 5", "--archive-to", "file://"+disc, "--yes", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	arch := brokertest.ReadArchive(t, disc)
	if len(arch) != 5 || arch[0].Attributes["tenant"].StringValue != "acme" {
		t.Fatalf("archive %d messages", len(arch))
	}
	riPoll(t, 10*time.Second, "10 messages left", func() bool { return s.count(dlq) == 10 })
	all := filepath.Join(dir, "all.jsonl")
	if stdout, stderr, code = runDLQ(t, append(s.args, "purge", base+"-dlq", "--archive-to", "file://"+all, "--yes")...); code != ExitOK {
		t.Fatalf("purge: exit %d: %s %s", code, stdout, stderr)
	}
	if n := len(brokertest.ReadArchive(t, all)); n != 10 {
		t.Errorf("purge archived %d, want 10", n)
	}
	if n := s.count(dlq); n != 0 {
		t.Errorf("dlq holds %d after purge", n)
	}
	back := s.queue(base+"-back", nil)
	if stdout, stderr, code = runDLQ(t, append(s.args, "redrive", "--yes", "file://"+all, "--to", "queue:"+base+"-back", "--no-journal")...); code != ExitOK {
		t.Fatalf("redrive archive: exit %d: %s %s", code, stdout, stderr)
	}
	got := s.drain(back)
	if len(got) != 10 || aws.ToString(got[0].MessageAttributes["tenant"].StringValue) != "acme" {
		t.Errorf("archive redriven: %d messages at the destination\nstdout: %s\nstderr: %s", len(got), stdout, stderr)
	}
}

// --server-side on local-aws-sqs: a message move task to the origin,
// followed to the end; then a slow one is watched, interrupted (the task
// keeps running), listed by `dlq redrive status` and stopped by `dlq
// redrive cancel`.
func TestRedriveIntegrationSQSServerSide(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.MoveEndpoint)
	base := brokertest.Name(t, "move")
	dlq := s.queue(base+"-dlq", nil)
	src := s.queue(base+"-src", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, s.arn(dlq)), "VisibilityTimeout": "1"})
	var es []sqstypes.SendMessageBatchRequestEntry
	for i := 0; i < 20; i++ {
		es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprint("m", i))})
	}
	// Dead-lettered for real: received more often than maxReceiveCount, so
	// that each message records its source (a move to the origin needs it).
	s.send(src, es...)
	riPoll(t, 30*time.Second, "20 dead letters", func() bool {
		s.c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		return s.count(dlq) == 20
	})
	stdout, stderr, code := runDLQ(t, append(s.args, "redrive", "--yes", dlq, "--server-side", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var task broker.MoveTask
	if err := json.Unmarshal([]byte(stdout), &task); err != nil || task.State != broker.MoveCompleted {
		t.Fatalf("task %s: %v", stdout, err)
	}
	riPoll(t, 20*time.Second, "20 messages in the source", func() bool { return s.count(src) == 20 })

	// A slow move: one message a second, of more messages than a loaded
	// machine could let pass before the test interrupts it.
	s.drain(src)
	const slow = 120
	var ses []sqstypes.SendMessageBatchRequestEntry
	for i := 0; i < slow; i++ {
		ses = append(ses, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprint("s", i))})
	}
	s.send(dlq, ses...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ExitCode, 1)
	var out, errOut *bytes.Buffer
	go func() {
		ios, _, o, e := Test()
		out, errOut = o, e
		done <- Run(ctx, ios, append(s.args, "redrive", "--yes", dlq, "--to", "queue:"+src, "--server-side", "--rate", "1"))
	}()
	riPoll(t, 20*time.Second, "a running move task", func() bool {
		stdout, _, _ := runDLQ(t, append(s.args, "redrive", "status", dlq, "-o", "json")...)
		return strings.Contains(stdout, `"running"`)
	})
	cancel()
	if code := <-done; code != ExitCancelled {
		t.Errorf("interrupted watch: exit %d, want %d; %s %s", code, ExitCancelled, out, errOut)
	}
	assertNoSecret(t, out.String(), errOut.String())
	if !strings.Contains(errOut.String(), "dlq redrive cancel") {
		t.Errorf("interrupted watch does not say how to stop the move: %s", errOut)
	}
	stdout, stderr, code = runDLQ(t, append(s.args, "redrive", "cancel", dlq, "--yes")...)
	if code != ExitOK {
		t.Fatalf("cancel: exit %d: %s %s", code, stdout, stderr)
	}
	riPoll(t, 20*time.Second, "the task to stop", func() bool {
		stdout, _, _ := runDLQ(t, append(s.args, "redrive", "status", dlq, "-o", "json")...)
		return !strings.Contains(stdout, `"running"`) && !strings.Contains(stdout, `"cancelling"`)
	})
	if moved, left := s.count(src), s.count(dlq); moved+left != slow || left == 0 {
		t.Errorf("after cancel: %d moved, %d left (want all %d accounted for, some left)", moved, left, slow)
	}
	riCheckAudit(t, "redrive-server-side", "redrive-cancel")
}

// --server-side on RabbitMQ: a dynamic shovel moves the DLQ and is removed
// when done; a shovel that cannot finish (its destination refuses
// publishes) is listed by status and removed by cancel, leaving every
// message in one of the two queues.
func TestRedriveIntegrationRabbitServerSide(t *testing.T) {
	r := newRIRabbit(t)
	work, dlq := riDeadLetters(t, r, "classic", 50)
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--to", "queue:"+work, "--server-side", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	r.waitDepth(work, 50)
	if stdout, _, _ := runDLQ(t, append(r.args, "redrive", "status", dlq, "-o", "json")...); strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a finished shovel was left behind: %s", stdout)
	}

	// A shovel interrupted by cancel: status lists it, cancel removes it,
	// and every message is in one of the two queues.
	const big = 20000
	dst := r.queue(brokertest.Name(t, "dst"), nil)
	r.drain(work)
	var ps []amqp.Publishing
	for i := 0; i < big; i++ {
		ps = append(ps, amqp.Publishing{Body: []byte(strconv.Itoa(i))})
	}
	r.publish("", dlq, ps...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ExitCode, 1)
	go func() {
		ios, _, _, _ := Test()
		done <- Run(ctx, ios, append(r.args, "redrive", "--yes", dlq, "--to", "queue:"+dst, "--server-side"))
	}()
	var handle string
	riPoll(t, 30*time.Second, "a shovel in the status", func() bool {
		stdout, _, _ := runDLQ(t, append(r.args, "redrive", "status", dlq, "-o", "json")...)
		var ts []broker.MoveTask
		if json.Unmarshal([]byte(stdout), &ts) != nil || len(ts) == 0 {
			return false
		}
		handle = ts[0].Handle
		return true
	})
	cancel()
	if code := <-done; code != ExitCancelled {
		t.Errorf("interrupted watch: exit %d, want %d", code, ExitCancelled)
	}
	stdout, stderr, code = runDLQ(t, append(r.args, "redrive", "cancel", dlq, handle, "--yes")...)
	if code != ExitOK {
		t.Fatalf("cancel: exit %d: %s %s", code, stdout, stderr)
	}
	// A shovel acknowledges after the confirm: removing it mid-way may
	// leave a message in both queues, never in neither.
	riPoll(t, 30*time.Second, "the shovel to be gone and every message in a queue", func() bool {
		stdout, _, _ := runDLQ(t, append(r.args, "redrive", "status", dlq, "-o", "json")...)
		return strings.TrimSpace(stdout) == "[]" && r.depth(dst)+r.depth(dlq) >= big
	})
	got := map[string]bool{}
	for _, d := range append(r.drain(dst), r.drain(dlq)...) {
		got[string(d.Body)] = true
	}
	if len(got) != big {
		t.Errorf("%d distinct messages after the cancel, want %d", len(got), big)
	}
}

// Identical messages (same body, no message-id) from two origins, one of
// which no longer routes: each return is matched to its own publish (the
// x-dlq-redrive id tells them apart), so exactly the unroutable ones stay
// in the DLQ and none is lost.
func TestRedriveIntegrationRabbitIdenticalMessagesUnroutable(t *testing.T) {
	r := newRIRabbit(t)
	const n = 300
	qa, qb, dlq := riTwoOrigins(t, r, "same", n, func(int) amqp.Publishing { return amqp.Publishing{Body: []byte("same")} })
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "-o", "json", "--no-journal")...)
	if code != ExitPartial {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	s := riSummary(t, stdout)
	if s.Moved != n/2 || s.Failed[redrive.ReasonUnroutable] != n/2 {
		t.Fatalf("moved %d, failed %v; want %d, %s %d", s.Moved, s.Failed, n/2, redrive.ReasonUnroutable, n/2)
	}
	if got := r.depth(qa); got != n/2 {
		t.Errorf("origin a got %d, want %d", got, n/2)
	}
	left := r.drain(dlq)
	if len(left) != n/2 {
		t.Fatalf("dlq kept %d, want the %d unroutable", len(left), n/2)
	}
	for _, d := range left {
		if d.Headers["x-first-death-queue"] != qb {
			t.Errorf("a message of %v stayed: it was routable", d.Headers["x-first-death-queue"])
		}
	}
}

// A shovel whose destination refuses messages (a full queue with overflow
// reject-publish) sends them back to the source and still ends: the run
// says how many are left and exits partial, never "ok".
func TestRedriveIntegrationRabbitServerSideRefused(t *testing.T) {
	r := newRIRabbit(t)
	_, dlq := riDeadLetters(t, r, "classic", 20)
	full := r.queue(brokertest.Name(t, "full"), amqp.Table{"x-max-length": int32(5), "x-overflow": "reject-publish"})
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", "--yes", dlq, "--to", "queue:"+full, "--server-side")...)
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d (partial): %s %s", code, ExitPartial, stdout, stderr)
	}
	if !strings.Contains(stderr, "still holds 15 messages") {
		t.Errorf("stderr does not say what is left: %s", stderr)
	}
	if d := r.depth(full) + r.depth(dlq); d != 20 || r.depth(full) != 5 {
		t.Errorf("destination %d + source %d, want 5 + 15", r.depth(full), r.depth(dlq))
	}
}

// A redrive from an archive run twice to one RabbitMQ queue sends each
// message once: the second run is refused before anything is sent, and
// --again sends them anyway.
func TestRedriveIntegrationRabbitArchiveTwice(t *testing.T) {
	r := newRIRabbit(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dest := r.queue(fmt.Sprintf("dlq-archive-twice-%d", time.Now().UnixNano()), nil)
	src := filepath.Join(t.TempDir(), "dlq.jsonl.gz")
	if _, stderr, code := runDLQ(t, "export", "--broker", "demo:", "orders.dlq", "--limit", "59", "--to", "file://"+src); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	redrive := func(extra ...string) (string, string, ExitCode) {
		return runDLQ(t, append([]string{"redrive", "--broker", "file://" + src, "orders.dlq", "--to", r.url + "#queue:" + dest, "--yes"}, extra...)...)
	}
	if stdout, stderr, code := redrive(); code != ExitOK || !strings.Contains(stdout, "moved 59") {
		t.Fatalf("first redrive: exit %d: %s %s", code, stdout, stderr)
	}
	r.waitDepth(dest, 59)
	for _, extra := range [][]string{nil, {"--dry-run"}} {
		_, stderr, code := redrive(extra...)
		if code != ExitError || !strings.Contains(stderr, "59 of these messages were already redriven to queue:"+dest) {
			t.Errorf("%v: exit %d, want %d and the earlier redrive named: %s", extra, code, ExitError, stderr)
		}
	}
	if d := r.depth(dest); d != 59 {
		t.Fatalf("after the refused redrives %s holds %d messages, want 59", dest, d)
	}
	if stdout, stderr, code := redrive("--again"); code != ExitOK || !strings.Contains(stdout, "moved 59") {
		t.Fatalf("--again: exit %d: %s %s", code, stdout, stderr)
	}
	r.waitDepth(dest, 118)
}

// On a terminal the preview's read (a rotation) chooses, and the run moves
// exactly the messages it showed: the IDs the preview took survive the
// rotation.
func TestRedriveIntegrationRabbitTerminalMovesWhatItShowed(t *testing.T) {
	for _, kind := range []string{"quorum", "classic"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			work, dlq := riDeadLetters(t, r, kind, 20)
			stdout, stderr, code := runDLQWith(t, runOpts{TTY: true, Stdin: "y\n"}, append(r.args, "redrive", dlq, "--filter", ".body.n < 5", "--no-journal")...)
			if code != ExitOK || !strings.Contains(stdout, "moved 5 of 20") {
				t.Fatalf("exit %d: %s %s", code, stdout, stderr)
			}
			// (On RabbitMQ 4.3 a quorum queue is held, not rotated.)
			does, did := "rotating it: each message is republished to its back", "rotated 20 messages"
			if kind == "quorum" && brokertest.RabbitMQ(t).RequeueFree() {
				does, did = "no message is moved, see `dlq help peek-safety`", "20 messages now carry the redelivered flag and x-acquired-count +1"
			}
			if !strings.Contains(stderr, "to preview the redrive ("+does) ||
				!strings.Contains(stderr, "no message was moved yet, but reading `"+dlq+"` changed it: "+did) ||
				strings.Contains(stderr, "nothing is changed") {
				t.Errorf("the preview does not say what its read does and did; stderr:\n%s", stderr)
			}
			if d, l := r.depth(work), r.depth(dlq); d != 5 || l != 15 {
				t.Errorf("origin holds %d and the DLQ %d, want 5 and 15; stderr:\n%s", d, l, stderr)
			}
		})
	}
}

// A FIFO queue shows only the head of each message group without taking
// messages (fauxqs shows one; local-aws-sqs does not lock a group in flight
// and shows all), so stats and a dry run may read part of 3 messages of one
// group; their machine output and the dry run's words then say how many
// they missed, and read plus out of reach is always what the queue holds.
func TestStatsIntegrationSQSFIFOOutOfReach(t *testing.T) {
	env := brokertest.SQS(t)
	const sent = 3
	short := 0
	t.Cleanup(func() {
		if !t.Failed() && short == 0 {
			t.Error("no emulator hid a message behind its group's head: nothing was tested")
		}
	})
	for _, ep := range []string{env.Endpoint, env.MoveEndpoint} {
		t.Run(ep, func(t *testing.T) {
			s := newRISQS(t, ep)
			base := brokertest.Name(t, "reach")
			q := base + "-dlq.fifo"
			u := s.queue(q, map[string]string{"FifoQueue": "true"})
			s.queue(base+"-dst.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
			var es []sqstypes.SendMessageBatchRequestEntry
			for i := range sent {
				es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprintf("g-%02d", i)),
					MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(fmt.Sprint("d", i))})
			}
			s.send(u, es...)
			riPoll(t, 10*time.Second, "all messages in the queue", func() bool { return s.count(u) == sent })

			stdout, stderr, code := runDLQ(t, append(s.args, "stats", q, "-o", "json")...)
			if code != ExitOK {
				t.Fatalf("stats: exit %d: %s %s", code, stdout, stderr)
			}
			var res inspect.StatsResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			read := res.Read
			if read < 1 || res.Total != read || res.OutOfReach != sent-read {
				t.Fatalf("stats json: read %d, total %d, out_of_reach %d; want at least 1 read, total as read, out_of_reach the rest of %d\n%s",
					res.Read, res.Total, res.OutOfReach, sent, stderr)
			}
			if read < sent {
				short++
			}

			stdout, stderr, code = runDLQ(t, append(s.args, "stats", q, "-o", "prom")...)
			if code != ExitOK {
				t.Fatalf("stats prom: exit %d: %s %s", code, stdout, stderr)
			}
			for _, want := range []string{
				fmt.Sprintf("dlq_dead_letter_messages{queue=%q} %d\n", q, read),
				fmt.Sprintf("dlq_dead_letter_messages_out_of_reach{queue=%q} %d\n", q, sent-read),
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("prom lacks %q:\n%s", want, stdout)
				}
			}

			stdout, stderr, code = runDLQ(t, append(s.args, "redrive", q, "--to", "queue:"+base+"-dst.fifo", "--dry-run")...)
			if code != ExitOK {
				t.Fatalf("dry run: exit %d: %s %s", code, stdout, stderr)
			}
			want := fmt.Sprintf("would move %d of %d messages examined in `%s`\n", read, read, q)
			want2 := fmt.Sprintf("\n%d more in held message groups could not be read", sent-read)
			if !strings.Contains(stdout, want) || strings.Contains(stdout, want2) != (read < sent) || read == sent && strings.Contains(stdout, "held message groups") {
				t.Errorf("dry run does not give the shortfall (%q, %q when %d < %d):\n%s", want, want2, read, sent, stdout)
			}
			stdout, stderr, code = runDLQ(t, append(s.args, "redrive", q, "--to", "queue:"+base+"-dst.fifo", "--dry-run", "-o", "json")...)
			if sum := riSummary(t, stdout); code != ExitOK || sum.Examined != read || sum.OutOfReach != sent-read {
				t.Errorf("dry run json: exit %d, examined %d, out_of_reach %d; want %d, %d, %d\n%s", code, sum.Examined, sum.OutOfReach, ExitOK, read, sent-read, stderr)
			}
			// Counts settle after the reads hand their messages back.
			riPoll(t, 10*time.Second, "the queue to hold what was sent after the reads", func() bool { return s.count(u) == sent })
		})
	}
}

// With --group on a terminal the read that finds the group serves the
// preview: a quorum DLQ is rotated once before the question, not twice.
func TestRedriveIntegrationRabbitGroupReadsOnce(t *testing.T) {
	r := newRIRabbit(t)
	work, dlq := riDeadLetters(t, r, "quorum", 20)
	group := inspect.GroupID(inspect.ShapeOf("rejected"))
	stdout, stderr, code := runDLQWith(t, runOpts{TTY: true, Stdin: "y\n"}, append(r.args, "redrive", dlq, "--group", group, "--filter", ".body.n < 5", "--no-journal")...)
	if code != ExitOK || !strings.Contains(stdout, "moved 5 of 20") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	// One read announced (two before: one for the groups, one for the
	// preview); where the read rotates (RabbitMQ before 4.3; 4.3 holds a
	// quorum queue), its rotation is said once.
	if !strings.Contains(stderr, "reading `"+dlq+"` once to find its failure groups and the messages they hold") ||
		strings.Count(stderr, "dlq: reading `"+dlq+"`") != 1 || strings.Count(stderr, "rotated 20 messages") > 1 {
		t.Errorf("want one read, and a rotation said at most once; stderr:\n%s", stderr)
	}
	if d, l := r.depth(work), r.depth(dlq); d != 5 || l != 15 {
		t.Errorf("origin holds %d and the DLQ %d, want 5 and 15; stderr:\n%s", d, l, stderr)
	}
}
