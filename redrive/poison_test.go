package redrive

import (
	"context"
	"fmt"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// redriven is a dead letter that dlq has redriven n times before (n = 0:
// never), its record as RabbitMQ carries it.
func redriven(id string, n int32) *broker.Message {
	m := dead(id, fmt.Sprintf(`{"id":%q}`, id))
	if n > 0 {
		m.Headers[RedriveHeader] = map[string]any{"count": n, "source": "orders.dlq", "id": "run-1"}
	}
	return m
}

// deadLetterBack plays a consumer that fails every message of orders
// again: the broker dead-letters each back into orders.dlq, its
// x-dlq-redrive record kept.
func deadLetterBack(f *fakeBroker) {
	f.mu.Lock()
	ms := f.queues["orders"].ready
	f.queues["orders"].ready = nil
	f.mu.Unlock()
	for _, m := range ms {
		nm := m.Clone()
		d := dead(m.ID, "")
		for k, v := range d.Headers {
			nm.Headers[k] = v
		}
		nm.Death = d.Death
		f.put("orders.dlq", nm)
	}
}

// MaxRedrives leaves the messages redriven that many times in the DLQ
// (counted as redrive-limit), on classic and quorum queues, and moves the
// others with their count raised by one; a dry run reports the same.
func TestMaxRedrivesLeavesPoisonMessages(t *testing.T) {
	for _, kind := range []broker.QueueKind{broker.KindClassic, broker.KindQuorum} {
		t.Run(string(kind), func(t *testing.T) {
			f := rabbitFake(t, kind, 0)
			f.put("orders.dlq", redriven("fresh", 0), redriven("once", 1), redriven("twice", 2), redriven("often", 7))
			dry, err := Run(context.Background(), f, "orders.dlq", f, Options{MaxRedrives: 2, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if dry.Skipped[ReasonRedriveLimit] != 2 || dry.Destinations["exchange:ex:orders.new"] != 2 {
				t.Errorf("dry run: skipped %v destinations %v, want 2 redrive-limit and 2 to move", dry.Skipped, dry.Destinations)
			}
			s, err := Run(context.Background(), f, "orders.dlq", f, Options{MaxRedrives: 2})
			if err != nil {
				t.Fatal(err)
			}
			if s.Moved != 2 || s.Skipped[ReasonRedriveLimit] != 2 || s.TotalFailed() != 0 {
				t.Errorf("summary moved %d skipped %v failed %v; want 2 moved, 2 redrive-limit", s.Moved, s.Skipped, s.Failed)
			}
			left := map[string]bool{}
			for _, m := range f.ready("orders.dlq") {
				left[m.Properties.MessageID] = true
			}
			if len(left) != 2 || !left["twice"] || !left["often"] {
				t.Errorf("left in the DLQ: %v, want twice and often", left)
			}
			for _, m := range f.ready("orders") {
				want := map[string]int64{"fresh": 1, "once": 2}[m.Properties.MessageID]
				if got := previousRedrives(m); got != want {
					t.Errorf("%s: redrive count %d, want %d", m.Properties.MessageID, got, want)
				}
			}
		})
	}
}

// A poison message that fails after every redrive goes round N times and
// then stays, whatever the schedule; a filter counts first.
func TestMaxRedrivesStopsAPoisonLoop(t *testing.T) {
	f := rabbitFake(t, broker.KindQuorum, 0)
	f.put("orders.dlq", redriven("poison", 0), redriven("other", 5))
	onlyPoison := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) {
		return m.Properties.MessageID == "poison", nil
	})
	for run := 1; run <= 4; run++ {
		s, err := Run(context.Background(), f, "orders.dlq", f, Options{MaxRedrives: 3, Filter: onlyPoison})
		if err != nil {
			t.Fatal(err)
		}
		wantMoved, wantLimit := int64(1), int64(0)
		if run == 4 {
			wantMoved, wantLimit = 0, 1
		}
		if s.Moved != wantMoved || s.Skipped[ReasonRedriveLimit] != wantLimit || s.Skipped[ReasonFiltered] != 1 {
			t.Errorf("run %d: moved %d skipped %v; want moved %d, redrive-limit %d, filtered 1 (the other message, whatever its count)",
				run, s.Moved, s.Skipped, wantMoved, wantLimit)
		}
		deadLetterBack(f)
	}
	if n := len(f.ready("orders.dlq")); n != 2 {
		t.Errorf("%d messages in the DLQ, want both", n)
	}
}

// On an SQS FIFO queue a message held by the limit stops its group, as
// any message that stays does: the later messages of its group stay too
// (group-held), in order; the record is read from the SQS attribute.
func TestMaxRedrivesHoldsTheFIFOGroup(t *testing.T) {
	f := fifoFake(t, 9)
	f.mu.Lock()
	f.queues["jobs-dlq.fifo"].ready[3].Attributes = map[string]broker.Attribute{
		RedriveHeader: {DataType: "String", StringValue: `{"count":2,"source":"jobs-dlq.fifo"}`}}
	f.mu.Unlock()
	s, err := Run(context.Background(), f, "jobs-dlq.fifo", f, Options{MaxRedrives: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesByGroup(f.ready("jobs.fifo")); got["g0"] != "0" || got["g1"] != "1 4 7" || got["g2"] != "2 5 8" {
		t.Errorf("moved %v; want g0 to stop at 3", got)
	}
	if left := bodiesByGroup(f.ready("jobs-dlq.fifo"))["g0"]; left != "3 6" {
		t.Errorf("left of g0 = %q, want 3 6 in order", left)
	}
	if s.Skipped[ReasonRedriveLimit] != 1 || s.Skipped[ReasonGroupHeld] != 1 || s.Moved != 7 {
		t.Errorf("summary moved %d skipped %v", s.Moved, s.Skipped)
	}
}

// MaxRedrives cannot be handed to the broker: a server-side move never
// shows dlq the messages.
func TestMaxRedrivesRefusedServerSide(t *testing.T) {
	if err := ServerSideRefusal(Options{MaxRedrives: 3}); err == nil {
		t.Error("server-side move accepted MaxRedrives")
	}
}
