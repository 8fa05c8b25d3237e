package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// canaryFake is a RabbitMQ fake with n dead letters in orders.dlq, each
// failed with "timeout after 30s", whose origin is the queue orders.
func canaryFake(t *testing.T, kind broker.QueueKind, n int) *fakeBroker {
	f := rabbitFake(t, kind, 0)
	for i := 0; i < n; i++ {
		m := dead(fmt.Sprintf("m%03d", i), fmt.Sprintf(`{"n":%d}`, i))
		m.Headers["x-exception-message"] = "timeout after 30s"
		f.put("orders.dlq", m)
	}
	return f
}

// unfixed dead-letters every message published to orders back to
// orders.dlq with reason, as a consumer whose bug is not fixed does.
func unfixed(reason string) func(string, *broker.Message) (string, string) {
	return func(q string, m *broker.Message) (string, string) {
		if q == "orders" {
			return "orders.dlq", reason
		}
		return "", ""
	}
}

func stepMoves(r CanaryReport) []int64 {
	var out []int64
	for _, s := range r.Steps {
		out = append(out, s.Moved)
	}
	return out
}

func TestCanaryMovesEverythingInGrowingSteps(t *testing.T) {
	for _, kind := range []broker.QueueKind{broker.KindClassic, broker.KindQuorum} {
		t.Run(string(kind), func(t *testing.T) {
			f := canaryFake(t, kind, 100)
			var counted []int
			r, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{
				OnStep: func(r CanaryReport) { counted = append(counted, len(r.Steps)) }})
			if err != nil {
				t.Fatal(err)
			}
			if d := testdiff.Diff([]int64{1, 5, 10, 25, 59}, stepMoves(r)); d != "" {
				t.Errorf("moved per step (-want +got):\n%s", d)
			}
			if r.Stopped != nil || r.Moved != 100 || r.Left != 0 || r.Summary.Moved != 100 || r.NextStep != -1 {
				t.Errorf("stopped %v, moved %d (summary %d), left %d, next %d; want nil, 100, 0, -1", r.Stopped, r.Moved, r.Summary.Moved, r.Left, r.NextStep)
			}
			if len(f.ready("orders.dlq")) != 0 || len(f.ready("orders")) != 100 {
				t.Errorf("dlq %d, orders %d; want 0, 100", len(f.ready("orders.dlq")), len(f.ready("orders")))
			}
			if d := testdiff.Diff([]int{1, 2, 3, 4, 5}, counted); d != "" {
				t.Errorf("steps counted (-want +got):\n%s", d)
			}
			runs := map[string]bool{}
			for _, m := range f.ready("orders") {
				runs[MarkRun(m)] = true
			}
			if len(runs) != 5 || !runs[r.RunIDs[0]] || !runs[r.RunIDs[4]] {
				t.Errorf("messages marked by runs %v, want the 5 steps' %v", runs, r.RunIDs)
			}
		})
	}
}

func TestCanaryStopsAfterTheFirstStepWhenTheMovedMessageComesBack(t *testing.T) {
	for _, kind := range []broker.QueueKind{broker.KindClassic, broker.KindQuorum} {
		t.Run(string(kind), func(t *testing.T) {
			f := canaryFake(t, kind, 40)
			f.consumer = unfixed("timeout after 30s")
			before := f.readyIDs("orders.dlq")
			r, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{})
			if !errors.Is(err, ErrCanaryStopped) {
				t.Fatalf("err %v, want ErrCanaryStopped", err)
			}
			if r.Stopped == nil || r.Stopped.Step != 1 || r.Stopped.Returned != 1 || r.Moved != 1 || r.Left != 39 || r.NextStep != 0 {
				t.Fatalf("stopped %+v, moved %d, left %d, next step %d; want step 1 with 1 back, 1, 39, 0", r.Stopped, r.Moved, r.Left, r.NextStep)
			}
			if d := testdiff.Diff([]int64{1}, stepMoves(r)); d != "" {
				t.Errorf("moved per step (-want +got):\n%s", d)
			}
			if len(r.Returns) != 1 || !r.Returns[0].Same || r.Returns[0].Reason != "timeout after 30s" || r.Returns[0].Queue != "orders.dlq" {
				t.Errorf("returns %+v, want one of the same group, reason \"timeout after 30s\", in orders.dlq", r.Returns)
			}
			after := f.readyIDs("orders.dlq")
			if len(f.ready("orders")) != 0 || len(after) != 40 {
				t.Fatalf("orders %d, dlq %d; want 0, 40", len(f.ready("orders")), len(after))
			}
			// Nothing beyond the step was taken: the 39 others are where they
			// were, in their order, and the one moved is back at the end.
			slices.Sort(before)
			got := slices.Clone(after)
			slices.Sort(got)
			if d := testdiff.Diff(before, got); d != "" {
				t.Errorf("dlq holds other messages (-want +got):\n%s", d)
			}
			if kind == broker.KindClassic {
				if d := testdiff.Diff(append(slices.Clone(before[1:]), before[0]), after); d != "" {
					t.Errorf("dlq order (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestCanaryTellsANewFailureGroupAndAllowsReturns(t *testing.T) {
	f := canaryFake(t, broker.KindClassic, 40)
	n := 0
	f.consumer = func(q string, m *broker.Message) (string, string) {
		if q != "orders" {
			return "", ""
		}
		n++
		if n <= 2 {
			return "orders.dlq", "NullPointerException in OrderHandler"
		}
		return "", ""
	}
	r, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{MaxReturns: 1})
	if !errors.Is(err, ErrCanaryStopped) {
		t.Fatalf("err %v, want ErrCanaryStopped", err)
	}
	// Step 1 sends one back (allowed), step 2 the second: 2 > 1.
	if r.Stopped == nil || r.Stopped.Step != 2 || r.Stopped.Returned != 2 || r.Moved != 6 || r.NextStep != 1 {
		t.Fatalf("stopped %+v, moved %d, next %d; want step 2 with 2 back, 6, 1", r.Stopped, r.Moved, r.NextStep)
	}
	if len(r.Returns) != 1 || r.Returns[0].Same || r.Returns[0].Count != 2 {
		t.Errorf("returns %+v, want 2 of a new group", r.Returns)
	}
}

func TestCanaryResumesWhereItStopped(t *testing.T) {
	f := canaryFake(t, broker.KindClassic, 40)
	f.consumer = unfixed("timeout after 30s")
	r, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{})
	if !errors.Is(err, ErrCanaryStopped) {
		t.Fatalf("err %v", err)
	}
	f.consumer = nil // the fix is deployed
	r2, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{Total: r.Selected, Start: r.NextStep, MovedBefore: r.Moved})
	if err != nil {
		t.Fatal(err)
	}
	// Again from step 1 (the one that stopped): the returned message moves
	// again with the others.
	if d := testdiff.Diff([]int64{1, 5, 4, 10, 20}, stepMoves(r2)); d != "" {
		t.Errorf("moved per step (-want +got):\n%s", d)
	}
	if len(f.ready("orders.dlq")) != 0 || len(f.ready("orders")) != 40 || r2.Moved != 41 {
		t.Errorf("dlq %d, orders %d, moved %d; want 0, 40, 41 (one twice)", len(f.ready("orders.dlq")), len(f.ready("orders")), r2.Moved)
	}
}

func TestCanaryStepsOnFIFOTakeWholeGroups(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("jobs-dlq.fifo", broker.KindSQSFIFO)
	f.declare("jobs.fifo", broker.KindSQSFIFO)
	for i := 0; i < 30; i++ {
		f.put("jobs-dlq.fifo", &broker.Message{Body: []byte(fmt.Sprint(i)),
			SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i), "MessageGroupId": fmt.Sprintf("g%d", i%6)}})
	}
	f.origin = func(m *broker.Message) (broker.Destination, error) {
		return broker.Destination{Kind: broker.ToQueue, Queue: "jobs.fifo"}, nil
	}
	r, err := Canary(context.Background(), f, "jobs-dlq.fifo", f, Options{}, CanaryOptions{Steps: []CanaryStep{{Count: 1}, {Count: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	// 6 groups of 5, delivered in turn: step 1 takes one group, step 2 the
	// groups of its first 2 messages, the rest the other three.
	if d := testdiff.Diff([]int64{5, 10, 15}, stepMoves(r)); d != "" {
		t.Errorf("moved per step (-want +got):\n%s", d)
	}
	last := map[string]int{}
	for _, m := range f.ready("jobs.fifo") {
		var n int
		fmt.Sscan(string(m.Body), &n)
		g := m.SystemAttributes["MessageGroupId"]
		if l, ok := last[g]; ok && n < l {
			t.Errorf("group %s out of order: %d after %d", g, n, l)
		}
		last[g] = n
	}
}

func TestCanaryDryRunPlansAndMovesNothing(t *testing.T) {
	f := canaryFake(t, broker.KindClassic, 200)
	r, err := Canary(context.Background(), f, "orders.dlq", f, Options{DryRun: true}, CanaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []CanaryPlanStep{{"1", 1}, {"5", 5}, {"10%", 20}, {"25%", 50}, {"rest", 0}}
	if d := testdiff.Diff(want, r.Plan); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	if f.published != 0 || len(f.ready("orders.dlq")) != 200 || r.Summary.Destinations["exchange:ex:orders.new"] != 200 {
		t.Errorf("published %d, dlq %d, would move %v", f.published, len(f.ready("orders.dlq")), r.Summary.Destinations)
	}
}

func TestParseCanarySteps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []CanaryStep
		err  bool
	}{
		{"1,5,10%,25%", DefaultCanarySteps, false},
		{"2, 50%, rest", []CanaryStep{{Count: 2}, {Percent: 50}}, false},
		{"0", nil, true},
		{"100%", nil, true},
		{"rest", nil, true},
		{"1,,2", nil, true},
		{"x", nil, true},
	} {
		got, err := ParseCanarySteps(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if d := testdiff.Diff(tc.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestMarkRun(t *testing.T) {
	for _, tc := range []struct {
		m    *broker.Message
		want string
	}{
		{&broker.Message{Headers: map[string]any{RedriveHeader: map[string]any{"id": "ab12-7"}}}, "ab12"},
		{&broker.Message{Attributes: map[string]broker.Attribute{RedriveHeader: {DataType: "String", StringValue: `{"count":1,"id":"cd34-12"}`}}}, "cd34"},
		{&broker.Message{Headers: map[string]any{RedriveHeader: `{"id":"ef-1"}`}}, "ef"},
		{&broker.Message{Headers: map[string]any{RedriveHeader: map[string]any{"count": int64(1)}}}, ""},
		{&broker.Message{}, ""},
	} {
		if got := MarkRun(tc.m); got != tc.want {
			t.Errorf("MarkRun(%v %v) = %q, want %q", tc.m.Headers, tc.m.Attributes, got, tc.want)
		}
	}
}

// routeFake describes queues (QueueInspector, QueueLister) and nothing else.
type routeFake struct {
	sys broker.System
	qs  map[string]broker.Queue
}

func (r *routeFake) System() broker.System { return r.sys }
func (r *routeFake) String() string        { return "route-fake" }
func (r *routeFake) Close() error          { return nil }
func (r *routeFake) Queue(ctx context.Context, name string) (broker.Queue, error) {
	q, ok := r.qs[name]
	if !ok {
		return q, broker.Errorf(broker.ErrNotFound, "queue", "%s", name)
	}
	return q, nil
}
func (r *routeFake) Queues(ctx context.Context) ([]broker.Queue, error) {
	var out []broker.Queue
	for _, q := range r.qs {
		out = append(out, q)
	}
	return out, nil
}

func TestRouteOfWaitAndWatchedQueues(t *testing.T) {
	sqs := &routeFake{sys: broker.SQS, qs: map[string]broker.Queue{
		"jobs-dlq": {System: broker.SQS, Name: "jobs-dlq", DeadLetterSources: []string{"jobs"}},
		"jobs": {System: broker.SQS, Name: "jobs", DeadLetterQueues: []string{"jobs-dlq"}, DeliveryLimit: 5,
			Arguments: map[string]any{"VisibilityTimeout": "45"}},
	}}
	r := RouteOf(context.Background(), sqs, "jobs-dlq", sqs, broker.Destination{Kind: broker.ToOrigin})
	if r.Wait != 225*time.Second || r.WaitFrom != "`jobs`'s visibility timeout 45s × maxReceiveCount 5" || len(r.Watch) != 1 {
		t.Errorf("SQS: wait %s (%s), watch %d; want 3m45s from jobs, 1", r.Wait, r.WaitFrom, len(r.Watch))
	}
	rabbit := &routeFake{sys: broker.RabbitMQ, qs: map[string]broker.Queue{
		"orders.dlq":    {System: broker.RabbitMQ, Name: "orders.dlq", DeadLetterSources: []string{"orders"}},
		"orders":        {System: broker.RabbitMQ, Name: "orders", DeadLetterQueues: []string{"orders.dlq", "orders.parking"}},
		"orders.retry1": {System: broker.RabbitMQ, Name: "orders.retry1", Role: broker.RoleRetry, MessageTTL: 10 * time.Second, DeadLetterQueues: []string{"orders"}},
		"orders.retry2": {System: broker.RabbitMQ, Name: "orders.retry2", Role: broker.RoleRetry, MessageTTL: time.Minute, DeadLetterQueues: []string{"orders"}},
		"other.retry":   {System: broker.RabbitMQ, Name: "other.retry", Role: broker.RoleRetry, MessageTTL: time.Hour, DeadLetterQueues: []string{"other"}},
	}}
	r = RouteOf(context.Background(), rabbit, "orders.dlq", rabbit, broker.Destination{Kind: broker.ToOrigin})
	var watched []string
	for _, w := range r.Watch {
		watched = append(watched, w.Queue)
	}
	if r.Wait != 70*time.Second || !strings.Contains(r.WaitFrom, "retry ladder of `orders`: its 2 delay queues' TTLs add up to 1m10s") ||
		!slices.Equal(watched, []string{"orders.dlq", "orders.parking"}) {
		t.Errorf("RabbitMQ: wait %s (%s), watched %v; want 1m10s from the ladder, orders.dlq and orders.parking", r.Wait, r.WaitFrom, watched)
	}
	delete(rabbit.qs, "orders.retry1")
	delete(rabbit.qs, "orders.retry2")
	if r = RouteOf(context.Background(), rabbit, "orders.dlq", rabbit, broker.Destination{Kind: broker.ToOrigin}); r.Wait != CanaryMinWait {
		t.Errorf("no ladder: wait %s, want the minimum %s", r.Wait, CanaryMinWait)
	}
}

// New failures that arrive while the canary waits, and messages an earlier
// redrive marked, are not counted as returns: only this run's mark is.
func TestCanaryDoesNotCountUnrelatedFailures(t *testing.T) {
	f := canaryFake(t, broker.KindClassic, 20)
	waits := 0
	r, err := Canary(context.Background(), f, "orders.dlq", f, Options{}, CanaryOptions{
		OnWait: func(step int, moved int64, d time.Duration) {
			waits++
			if step != 1 {
				return
			}
			fresh := dead("new-1", `{"n":100}`)
			other := dead("old-run", `{"n":101}`)
			other.Headers[RedriveHeader] = map[string]any{"count": int64(1), "id": "0123456789abcdef-4"}
			f.put("orders.dlq", fresh, other)
		}})
	if err != nil {
		t.Fatalf("%v (stopped %+v, returns %+v)", err, r.Stopped, r.Returns)
	}
	if r.Returned != 0 || r.Moved != 22 || waits != 5 {
		t.Errorf("returned %d, moved %d, waits %d; want 0, 22 (the newcomers move with the rest), 5", r.Returned, r.Moved, waits)
	}
}

func FuzzParseCanarySteps(f *testing.F) {
	for _, s := range []string{"1,5,10%,25%", "2, 50%, rest", "0", "100%", "1,,2", "1e3", "0.5%", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := ParseCanarySteps(s)
		if err != nil {
			return
		}
		var parts []string
		for _, st := range steps {
			if st.size(1_000_000) < 1 {
				t.Fatalf("%q: step %v moves %d of a million", s, st, st.size(1_000_000))
			}
			parts = append(parts, st.String())
		}
		again, err := ParseCanarySteps(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, steps) {
			t.Fatalf("%q: %v does not read back (%v, %v)", s, steps, again, err)
		}
	})
}
