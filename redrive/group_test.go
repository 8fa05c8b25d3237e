package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// fifoFake is an SQS fake with a FIFO DLQ of n messages in three groups
// (message i in group g(i%3), body "i") whose origin is jobs.fifo.
func fifoFake(t *testing.T, n int) *fakeBroker {
	f := newFake(t, broker.SQS)
	f.declare("jobs-dlq.fifo", broker.KindSQSFIFO)
	f.declare("jobs.fifo", broker.KindSQSFIFO)
	for i := 0; i < n; i++ {
		f.put("jobs-dlq.fifo", &broker.Message{Body: []byte(fmt.Sprint(i)),
			SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i), "MessageGroupId": fmt.Sprintf("g%d", i%3)}})
	}
	f.origin = func(m *broker.Message) (broker.Destination, error) {
		return broker.Destination{Kind: broker.ToQueue, Queue: "jobs.fifo"}, nil
	}
	return f
}

// bodies lists the bodies of ms per group, in queue order.
func bodiesByGroup(ms []*broker.Message) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		g := m.SystemAttributes["MessageGroupId"]
		if out[g] != "" {
			out[g] += " "
		}
		out[g] += string(m.Body)
	}
	return out
}

// A message of a FIFO group that cannot be moved (here: its transform
// fails) stops its group: no later message of the group moves, and the
// others do.
func TestFIFOGroupStopsAtAMessageThatCannotMove(t *testing.T) {
	f := fifoFake(t, 12)
	tr := func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		if string(m.Body) == "4" { // group g1
			return nil, errors.New("not json")
		}
		return m.Clone(), nil
	}
	s, err := Run(context.Background(), f, "jobs-dlq.fifo", f, Options{Transform: tr})
	if err != nil {
		t.Fatal(err)
	}
	got := bodiesByGroup(f.ready("jobs.fifo"))
	want := map[string]string{"g0": "0 3 6 9", "g1": "1", "g2": "2 5 8 11"}
	for g, w := range want {
		if got[g] != w {
			t.Errorf("moved %s = %q, want %q", g, got[g], w)
		}
	}
	if left := bodiesByGroup(f.ready("jobs-dlq.fifo"))["g1"]; left != "4 7 10" {
		t.Errorf("left in the DLQ of g1 = %q, want 4 7 10 in order", left)
	}
	if s.Moved != 9 || s.Failed[ReasonInvalidTransform] != 1 || s.Failed[ReasonGroupHeld] != 2 {
		t.Errorf("summary moved %d failed %v", s.Moved, s.Failed)
	}
}

// A destination failure stops the group for the rest of the run, in later
// windows too; the publisher (as the SQS adapter does) sends no later
// message of a group after one failed within its call.
func TestFIFOGroupStopsAtAPublishFailure(t *testing.T) {
	f := fifoFake(t, 30)
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		errs := make([]error, len(outs))
		stopped := map[string]bool{}
		for i, o := range outs {
			switch {
			case stopped[o.GroupID]:
				errs[i] = errors.New("not sent, to keep the order of its group")
			case string(o.Message.Body) == "4":
				errs[i] = errors.New("throttled")
				stopped[o.GroupID] = true
			}
		}
		return errs, nil
	}
	s, err := Run(context.Background(), f, "jobs-dlq.fifo", f, Options{Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesByGroup(f.ready("jobs.fifo"))["g1"]; got != "1" {
		t.Errorf("moved of g1 = %q, want only 1 (4 failed)", got)
	}
	if left := bodiesByGroup(f.ready("jobs-dlq.fifo"))["g1"]; left != "4 7 10 13 16 19 22 25 28" {
		t.Errorf("left of g1 = %q", left)
	}
	if s.Moved != 21 || s.Failed[ReasonRejected] != 1 || s.Failed[ReasonGroupHeld] != 8 {
		t.Errorf("summary moved %d failed %v", s.Moved, s.Failed)
	}
	for _, n := range s.Notices {
		if strings.Contains(n, "order is broken") {
			t.Errorf("unexpected notice %q", n)
		}
	}
}

// A filter that leaves a message of a FIFO group stops the group (as SQS
// would when it delivers no more of a group while one is held), counted
// as skipped.
func TestFIFOFilterStopsTheGroup(t *testing.T) {
	f := fifoFake(t, 9)
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return string(m.Body) != "3", nil })
	s, err := Run(context.Background(), f, "jobs-dlq.fifo", f, Options{Filter: sel})
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesByGroup(f.ready("jobs.fifo"))["g0"]; got != "0" {
		t.Errorf("moved of g0 = %q", got)
	}
	if s.Skipped[ReasonFiltered] != 1 || s.Skipped[ReasonGroupHeld] != 1 || s.TotalFailed() != 0 || s.Moved != 7 {
		t.Errorf("skipped %v, failed %v, moved %d; want %s 1 and %s 1, none, 7", s.Skipped, s.Failed, s.Moved, ReasonFiltered, ReasonGroupHeld)
	}
}

// An SQS message with 10 attributes has no room for x-dlq-redrive: it is
// refused and counted, never moved without the record silently; with
// NoRedriveHeader it moves. --set-header that fills the last slot is
// refused the same way.
func TestSQSAttributeLimit(t *testing.T) {
	mk := func(nattrs int) *fakeBroker {
		f := newFake(t, broker.SQS)
		f.declare("dlq", broker.KindSQSStandard)
		f.declare("src", broker.KindSQSStandard)
		attrs := map[string]broker.Attribute{}
		for i := 0; i < nattrs; i++ {
			attrs[fmt.Sprintf("a%d", i)] = broker.Attribute{DataType: "String", StringValue: "v"}
		}
		f.put("dlq", &broker.Message{System: broker.SQS, Body: []byte("x"), Attributes: attrs, SystemAttributes: map[string]string{"MessageId": "id-1"}})
		return f
	}
	to := broker.Destination{Kind: broker.ToQueue, Queue: "src"}
	for _, tc := range []struct {
		name   string
		nattrs int
		opts   Options
		moved  bool
	}{
		{"ten attributes", 10, Options{Dest: to}, false},
		{"ten attributes without the record", 10, Options{Dest: to, NoRedriveHeader: true}, true},
		{"nine attributes", 9, Options{Dest: to}, true},
		{"nine attributes and a new header", 9, Options{Dest: to, SetHeaders: map[string]string{"extra": "1"}}, false},
		{"nine attributes and a replaced header", 9, Options{Dest: to, SetHeaders: map[string]string{"a0": "w"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mk(tc.nattrs)
			s, err := Run(context.Background(), f, "dlq", f, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			moved := f.ready("src")
			if tc.moved {
				if len(moved) != 1 || s.Moved != 1 {
					t.Fatalf("not moved: %d published, moved %d; want 1, 1", len(moved), s.Moved)
				}
				if _, ok := moved[0].Attributes[RedriveHeader]; ok == tc.opts.NoRedriveHeader {
					t.Errorf("x-dlq-redrive present = %v with NoRedriveHeader %v", ok, tc.opts.NoRedriveHeader)
				}
				return
			}
			if len(moved) != 0 || s.Failed[ReasonAttributeLimit] != 1 || len(f.ready("dlq")) != 1 {
				t.Fatalf("moved %d, failed %v, dlq holds %d; want 0, %s 1, 1", len(moved), s.Failed, len(f.ready("dlq")), ReasonAttributeLimit)
			}
			if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "`no-redrive-header`") {
				t.Errorf("errors %v should name the fix", s.Errors)
			}
		})
	}
}
