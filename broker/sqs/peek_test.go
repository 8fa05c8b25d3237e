package sqs

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// peekAll peeks and returns the bodies and IDs visited.
func peekAll(t *testing.T, b *Broker, q string, opts broker.PeekOptions) (bodies, ids []string, rep broker.PeekReport) {
	t.Helper()
	rep, err := b.Peek(context.Background(), q, opts, func(m *broker.Message) error {
		bodies = append(bodies, string(m.Body))
		ids = append(ids, m.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("peek %s: %v", q, err)
	}
	return bodies, ids, rep
}

func TestPeekStandard(t *testing.T) {
	b := openTest(t)
	u := createQueue(t, b, baseName(t), nil)
	want := bodies("m", 25)
	sendBodies(t, b, u, "", want...)

	got, ids, rep := peekAll(t, b, u, broker.PeekOptions{})
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("peek read %d messages %v, want the 25 sent", len(got), got)
	}
	if rep.Read != 25 || rep.Mode != broker.PeekReceive || !strings.Contains(rep.Changed, "receive count of 25 messages went up by 1") {
		t.Errorf("report: read %d, mode %v, changed %q; want 25, %v, …receive count of 25 messages went up by 1…", rep.Read, rep.Mode, rep.Changed, broker.PeekReceive)
	}
	// Returned at once: nothing is left in flight and a second peek sees
	// every message again, with the same IDs.
	waitDepth(t, b, u, 25)
	_, ids2, _ := peekAll(t, b, nameFromURL(u), broker.PeekOptions{})
	sort.Strings(ids)
	sort.Strings(ids2)
	if !reflect.DeepEqual(ids, ids2) {
		t.Errorf("second peek saw other IDs:\n%v\n%v", ids, ids2)
	}
	waitDepth(t, b, u, 25)
	// Each peek received each message exactly once.
	_, err := b.Peek(context.Background(), u, broker.PeekOptions{}, func(m *broker.Message) error {
		if m.DeliveryCount != 2 {
			t.Errorf("message %s: %d receives before the third peek, want 2", m.Body, m.DeliveryCount)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPeekLimitAndStop(t *testing.T) {
	b := openTest(t)
	u := createQueue(t, b, baseName(t), nil)
	sendBodies(t, b, u, "", bodies("m", 30)...)
	got, _, rep := peekAll(t, b, u, broker.PeekOptions{Limit: 7})
	if len(got) != 7 || rep.Read != 7 {
		t.Errorf("limit 7: got %d, read %d", len(got), rep.Read)
	}
	n := 0
	_, err := b.Peek(context.Background(), u, broker.PeekOptions{}, func(*broker.Message) error {
		n++
		if n == 3 {
			return broker.ErrStop
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("stop after 3: n=%d err=%v", n, err)
	}
	boom := errors.New("boom")
	if _, err := b.Peek(context.Background(), u, broker.PeekOptions{}, func(*broker.Message) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("visit error = %v, want boom", err)
	}
	waitDepth(t, b, u, 30)
}

func TestPeekRefusesQueueWithRedrivePolicy(t *testing.T) {
	b := openTest(t)
	src, dlq := createPair(t, b, 3, false)
	sendBodies(t, b, src, "", bodies("m", 4)...)

	_, err := b.Peek(context.Background(), src, broker.PeekOptions{}, func(*broker.Message) error {
		t.Error("visited a message of a refused peek")
		return nil
	})
	if !errors.Is(err, broker.ErrUnsafe) {
		t.Fatalf("peek of a queue with a redrive policy: %v, want ErrUnsafe", err)
	}
	for _, s := range []string{"`force`", "maxReceiveCount 3", "`" + nameFromURL(dlq) + "`"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not mention %s", err, s)
		}
	}
	waitDepth(t, b, src, 4) // refused before receiving anything

	// Forced, three peeks take every message to its limit, and the report
	// says so; a fourth receive would dead-letter them.
	var rep broker.PeekReport
	for range 3 {
		_, _, rep = peekAll(t, b, src, broker.PeekOptions{Force: true})
	}
	if rep.Read != 4 || !strings.Contains(rep.Changed, "4 now at maxReceiveCount 3") {
		t.Errorf("forced peek report: read %d, changed %q; want 4, …4 now at maxReceiveCount 3…", rep.Read, rep.Changed)
	}
	waitDepth(t, b, src, 4)
	waitDepth(t, b, dlq, 0)
}

func TestPeekFIFO(t *testing.T) {
	b := openTest(t)
	u := createQueue(t, b, baseName(t)+".fifo", map[string]string{"FifoQueue": "true"})
	sendBodies(t, b, u, "g1", "g1-0", "g1-1", "g1-2")
	sendBodies(t, b, u, "g2", "g2-0", "g2-1")

	got, _, rep := peekAll(t, b, u, broker.PeekOptions{})
	sort.Strings(got)
	if len(got) < 2 || got[0] != "g1-0" || !contains(got, "g2-0") {
		t.Fatalf("fifo peek read %v, want at least each group's head", got)
	}
	if rep.Read != int64(len(got)) || !strings.Contains(rep.Changed, "went up by 1") {
		t.Errorf("report: read %d of %d, changed %q; want …went up by 1…", rep.Read, len(got), rep.Changed)
	}
	if len(got) < 5 && !strings.Contains(rep.Changed, "head of their message group") {
		t.Errorf("report does not explain the unread messages: %q", rep.Changed)
	}
	if want := int64(5 - len(got)); rep.OutOfReach != want {
		t.Errorf("report: out of reach %d, want %d (5 sent, %d read)", rep.OutOfReach, want, len(got))
	}
	waitDepth(t, b, u, 5)

	// Group order is untouched: consuming now yields each group in order.
	var order []string
	for len(order) < 5 {
		msgs, err := b.receive(context.Background(), u, 10, 30e9, 1e9)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatalf("queue ran dry after %v", order)
		}
		for _, m := range msgs {
			order = append(order, *m.Body)
		}
		if _, err := b.deleteHandles(context.Background(), u, handlesOf(msgs)); err != nil {
			t.Fatal(err)
		}
	}
	var g1, g2 []string
	for _, s := range order {
		if strings.HasPrefix(s, "g1") {
			g1 = append(g1, s)
		} else {
			g2 = append(g2, s)
		}
	}
	if !reflect.DeepEqual(g1, []string{"g1-0", "g1-1", "g1-2"}) || !reflect.DeepEqual(g2, []string{"g2-0", "g2-1"}) {
		t.Errorf("group order after peek: %v", order)
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// local-aws-sqs hands the messages a peek made visible again out first, so
// a walk that returns each batch at once sees the same ten again and again.
// The walk then holds the rest, and still sees every message once.
func TestPeekStandardWhereReturnedMessagesComeFirst(t *testing.T) {
	env := brokertest.SQS(t)
	b := openAt(t, env.MoveEndpoint)
	u := createQueue(t, b, baseName(t), nil)
	want := bodies("m", 35)
	sendBodies(t, b, u, "", want...)
	waitDepth(t, b, u, 35)
	got, _, rep := peekAll(t, b, u, broker.PeekOptions{})
	sort.Strings(got)
	if d := testdiff.Diff(want, got); d != "" {
		t.Fatalf("peek read %d (%+v) (-want +got):\n%s", len(got), rep, d)
	}
	if rep.Read != 35 {
		t.Errorf("read %d, want 35", rep.Read)
	}
	// Everything held was given back.
	waitDepth(t, b, u, 35)
}
