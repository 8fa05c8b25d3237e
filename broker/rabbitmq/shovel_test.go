package rabbitmq

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestShovelMovesToOriginAndRemovesItself(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	dlq := brokertest.Name(t, "dlq")
	src := brokertest.Name(t, "src")
	declareQueue(t, b, dlq, nil)
	declareQueue(t, b, src, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	publishN(t, b, dlq, "m", 50, nil)
	waitDepth(t, b, dlq, 50)

	task, err := b.StartMove(ctx, dlq, broker.Destination{Kind: broker.ToOrigin}, broker.MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if task.Destination != "queue:"+src || task.Handle == "" || !task.Lingers {
		t.Fatalf("task destination %q, handle %q, lingers %t; want queue:%s, set, true", task.Destination, task.Handle, task.Lingers, src)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		tasks, err := b.MoveStatus(ctx, dlq)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			break // src-delete-after: the shovel deleted itself
		}
		if tasks[0].State == broker.MoveFailed {
			t.Fatalf("shovel failed: %s", tasks[0].Failure)
		}
		if time.Now().After(deadline) {
			t.Fatalf("shovel still there: %q", testdiff.Pick(tasks, func(m broker.MoveTask) string { return m.Handle + " " + string(m.State) }))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitDepth(t, b, src, 50)
	waitDepth(t, b, dlq, 0)
	if ids := drainIDs(t, b, src); !slices.Equal(ids, seq("m", 0, 50)) {
		t.Fatalf("moved %v", ids)
	}
}

func TestShovelCancelAndRefusals(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	dlq := brokertest.Name(t, "dlq")
	declareQueue(t, b, dlq, nil)
	publishN(t, b, dlq, "m", 3, nil)
	waitDepth(t, b, dlq, 3)
	if _, err := b.StartMove(ctx, dlq, broker.Destination{Kind: broker.ToOrigin}, broker.MoveOptions{}); !errors.Is(err, broker.ErrConflict) {
		t.Fatalf("origin without a dead-letter source: %v", err)
	}
	if _, err := b.StartMove(ctx, dlq, broker.Destination{Kind: broker.ToQueue, Queue: "x"}, broker.MoveOptions{MaxPerSecond: 10}); !errors.Is(err, broker.ErrUnsupported) {
		t.Fatalf("rate: %v", err)
	}
	// A shovel to an exchange nothing is bound to keeps retrying; cancel it.
	ex := brokertest.Name(t, "ex")
	declareExchange(t, b, ex, "direct")
	ok, err := b.Routable(ctx, broker.Destination{Kind: broker.ToExchange, Exchange: ex, RoutingKeys: []string{"k"}})
	if err != nil || ok {
		t.Fatalf("routable %v %v", ok, err)
	}
	bindQueue(t, b, dlq, "k", ex)
	ok, err = b.Routable(ctx, broker.Destination{Kind: broker.ToExchange, Exchange: ex, RoutingKeys: []string{"k"}})
	if err != nil || !ok {
		t.Fatalf("routable after bind %v %v", ok, err)
	}
	other := brokertest.Name(t, "other")
	declareQueue(t, b, other, nil)
	task, err := b.StartMove(ctx, dlq, broker.Destination{Kind: broker.ToQueue, Queue: other}, broker.MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CancelMove(ctx, dlq, task.Handle); err != nil && !errors.Is(err, broker.ErrNotFound) {
		t.Fatal(err)
	}
	tasks, err := b.MoveStatus(ctx, dlq)
	if err != nil || len(tasks) != 0 {
		t.Fatalf("after cancel: %q %v; want none", testdiff.Pick(tasks, func(m broker.MoveTask) string { return m.Handle + " " + string(m.State) }), err)
	}
	// Nothing lost either way. A shovel cancelled between a confirm and its
	// ack leaves that message in both queues (at least once), never in none.
	deadline := time.Now().Add(time.Minute)
	for {
		d, o := depth(t, b, dlq), depth(t, b, other)
		if d+o >= 3 && d <= 3 && o <= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq %d + other %d: want every one of the 3 messages in one of them", d, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Routable answers from the queue itself for queues and the default
// exchange, and from the bindings for other exchanges (with no key: is
// anything bound).
func TestRoutable(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	q := brokertest.Name(t, "q")
	declareQueue(t, b, q, nil)
	ex := brokertest.Name(t, "ex")
	declareExchange(t, b, ex, "direct")
	for _, c := range []struct {
		dest broker.Destination
		want bool
	}{
		{broker.Destination{Kind: broker.ToQueue, Queue: q}, true},
		{broker.Destination{Kind: broker.ToQueue, Queue: q + "-missing"}, false},
		{broker.Destination{Kind: broker.ToExchange, RoutingKeys: []string{q}}, true},
		{broker.Destination{Kind: broker.ToExchange, RoutingKeys: []string{q + "-missing"}}, false},
		{broker.Destination{Kind: broker.ToExchange}, true},
		{broker.Destination{Kind: broker.ToExchange, Exchange: ex}, false},
		{broker.Destination{Kind: broker.ToExchange, Exchange: ex + "-missing"}, false},
	} {
		if ok, err := b.Routable(ctx, c.dest); err != nil || ok != c.want {
			t.Errorf("Routable(%s) = %v, %v; want %v", c.dest, ok, err, c.want)
		}
	}
	bindQueue(t, b, q, "k", ex)
	if ok, err := b.Routable(ctx, broker.Destination{Kind: broker.ToExchange, Exchange: ex}); err != nil || !ok {
		t.Errorf("Routable(exchange:%s) after a bind = %v, %v", ex, ok, err)
	}
}
