package rabbitmq

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

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
		rep, err := b.Peek(context.Background(), q, broker.PeekOptions{}, func(*broker.Message) error { return nil })
		if !errors.Is(err, broker.ErrUnsupported) {
			t.Fatalf("peek %d: err = %v, want unsupported", i+1, err)
		}
		for _, want := range []string{"could not be read", "nest tables deeper than 32", "went back to its queue", "server-side redrive"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("peek %d: the error does not say %q: %v", i+1, want, err)
			}
		}
		if rep.Read > 4 {
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
