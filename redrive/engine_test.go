package redrive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func rabbitFake(t *testing.T, kind broker.QueueKind, n int) *fakeBroker {
	f := newFake(t, broker.RabbitMQ)
	f.declare("orders.dlq", kind)
	f.declare("orders", broker.KindClassic)
	f.bind("ex", "orders.new", "orders")
	for i := 0; i < n; i++ {
		f.put("orders.dlq", dead(fmt.Sprintf("m%03d", i), fmt.Sprintf(`{"n":%d,"retry":3}`, i)))
	}
	return f
}

func TestRunMovesEverythingToOriginWithFidelity(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 600)
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Window: 100, Concurrency: 3, Now: func() time.Time { return time.Unix(1800000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 600 || s.Examined != 600 || s.TotalFailed() != 0 || s.TotalSkipped() != 0 {
		t.Fatalf("moved %d, examined %d, failed %v, skipped %v; want 600, 600, none, none", s.Moved, s.Examined, s.Failed, s.Skipped)
	}
	if s.Destinations["exchange:ex:orders.new"] != 600 {
		t.Fatalf("destinations %v", s.Destinations)
	}
	if len(f.ready("orders.dlq")) != 0 || len(f.ready("orders")) != 600 {
		t.Fatalf("dlq %d, orders %d", len(f.ready("orders.dlq")), len(f.ready("orders")))
	}
	got := f.ready("orders")
	slices.SortFunc(got, func(a, b *broker.Message) int { return strings.Compare(a.ID, b.ID) })
	m, want := got[7], dead("m007", `{"n":7,"retry":3}`)
	if string(m.Body) != string(want.Body) || m.Properties != want.Properties {
		t.Errorf("fidelity: body %s, want %s; properties (-want +got):\n%s", m.Body, want.Body, testdiff.Diff(want.Properties, m.Properties))
	}
	for k := range m.Headers {
		if broker.IsDeathHeader(k) {
			t.Errorf("death header %s kept", k)
		}
	}
	if m.Headers["app"] != "shop" {
		t.Errorf("application header lost: %v", m.Headers)
	}
	rec, ok := m.Headers[RedriveHeader].(map[string]any)
	if !ok || rec["count"] != int64(1) || rec["source"] != "orders.dlq" || !rec["time"].(time.Time).Equal(time.Unix(1800000000, 0)) {
		t.Errorf("redrive header count %#v, source %#v, time %v; want int64(1), \"orders.dlq\", %v", rec["count"], rec["source"], rec["time"], time.Unix(1800000000, 0))
	}
	if f.calls["origin"] != 1 {
		t.Errorf("origin resolved %d times, want once (cached per death record)", f.calls["origin"])
	}
}

func TestRunKeepDeathHeadersAndCountsRedrives(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 0)
	m := dead("a", "x")
	m.Headers[RedriveHeader] = map[string]any{"count": int32(2), "source": "old"}
	f.put("orders.dlq", m)
	if _, err := Run(context.Background(), f, "orders.dlq", f, Options{KeepDeathHeaders: true, SetHeaders: map[string]string{"fixed": "yes"}}); err != nil {
		t.Fatal(err)
	}
	got := f.ready("orders")[0]
	if _, ok := got.Headers["x-death"]; !ok {
		t.Error("x-death stripped despite KeepDeathHeaders")
	}
	if got.Headers["fixed"] != "yes" {
		t.Error("set header missing")
	}
	if got.Headers[RedriveHeader].(map[string]any)["count"] != int64(3) {
		t.Errorf("count %v", got.Headers[RedriveHeader])
	}
}

// Failure headers of client frameworks are stripped by default, with the
// death headers; KeepFailureHeaders keeps them; other headers always stay.
func TestRunStripsFailureHeaders(t *testing.T) {
	for _, keep := range []bool{false, true} {
		f := rabbitFake(t, broker.KindClassic, 0)
		m := dead("a", "x")
		for _, k := range []string{"x-exception-message", "x-exception-stacktrace", "MT-Fault-Message", "NServiceBus.ExceptionInfo.ExceptionType"} {
			m.Headers[k] = "boom"
		}
		f.put("orders.dlq", m)
		if _, err := Run(context.Background(), f, "orders.dlq", f, Options{KeepFailureHeaders: keep}); err != nil {
			t.Fatal(err)
		}
		got := f.ready("orders")[0]
		var kept []string
		for k := range got.Headers {
			if broker.IsFailureHeader(k) || broker.IsDeathHeader(k) {
				kept = append(kept, k)
			}
		}
		slices.Sort(kept)
		want := ""
		if keep {
			want = "MT-Fault-Message NServiceBus.ExceptionInfo.ExceptionType x-exception-message x-exception-stacktrace"
		}
		if strings.Join(kept, " ") != want || got.Headers["app"] != "shop" {
			t.Errorf("keep=%v: failure/death headers left %q, want %q; app=%v", keep, kept, want, got.Headers["app"])
		}
	}
}

// --exclude-id leaves the listed messages in the source, in a run and in a
// dry run alike.
func TestRunExcludeIDs(t *testing.T) {
	for _, dry := range []bool{true, false} {
		f := rabbitFake(t, broker.KindClassic, 0)
		f.put("orders.dlq", dead("a", "x"), dead("b", "x"), dead("c", "x"))
		s, err := Run(context.Background(), f, "orders.dlq", f, Options{DryRun: dry, ExcludeIDs: []string{"b"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sum(s.Destinations); got != 2 || s.Skipped[ReasonExcluded] != 1 {
			t.Errorf("dry=%v: %d to move, excluded %d; want 2 and 1", dry, got, s.Skipped[ReasonExcluded])
		}
		if !dry {
			var left []string
			for _, m := range f.ready("orders.dlq") {
				left = append(left, m.Properties.MessageID)
			}
			if strings.Join(left, " ") != "b" {
				t.Errorf("left in the dlq %q, want b", left)
			}
		}
	}
}

// DedupeBy moves the first message of each key and leaves the others.
func TestRunDedupeBy(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 0)
	f.put("orders.dlq", dead("a", `{"k":1}`), dead("b", `{"k":1}`), dead("c", `{"k":2}`))
	byBody := func(ctx context.Context, m *broker.Message) (string, error) { return string(m.Body), nil }
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{DedupeBy: byBody})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, m := range f.ready("orders.dlq") {
		left = append(left, m.Properties.MessageID)
	}
	if s.Moved != 2 || s.Skipped[ReasonDuplicate] != 1 || strings.Join(left, " ") != "b" {
		t.Errorf("moved %d, duplicates %d, left %q; want 2, 1, b", s.Moved, s.Skipped[ReasonDuplicate], left)
	}
}

func TestUnroutableStaysInDLQAndIsReported(t *testing.T) {
	f := rabbitFake(t, broker.KindQuorum, 0)
	lost := dead("nowhere", "x")
	lost.Death.RoutingKeys = []string{"unbound.key"}
	f.put("orders.dlq", dead("a", "1"), lost, dead("b", "2"))
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 2 || s.Failed[ReasonUnroutable] != 1 {
		t.Fatalf("moved %d, failed %v; want 2, %s 1", s.Moved, s.Failed, ReasonUnroutable)
	}
	left := f.ready("orders.dlq")
	if len(left) != 1 || left[0].ID != "nowhere" {
		t.Fatalf("left %v", f.readyIDs("orders.dlq"))
	}
	if left[0].DeliveryCount != 0 {
		t.Errorf("quorum delivery count raised to %d: a release was used instead of a rotation", left[0].DeliveryCount)
	}
	if _, ok := left[0].Headers["x-death"]; !ok {
		t.Error("the unroutable message lost its death record")
	}
}

// On a quorum queue a release raises x-delivery-count and moves the message
// to the back: non-matching messages are rotated instead (republished with
// confirms, then acknowledged), the run ends after one pass, and each
// non-matching message is in the queue exactly once, with delivery count 0.
func TestFilterOnQuorumRotatesWithoutRaisingDeliveryCount(t *testing.T) {
	f := rabbitFake(t, broker.KindQuorum, 50)
	even := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) {
		var n int
		fmt.Sscanf(m.ID, "m%03d", &n)
		return n%2 == 0, nil
	})
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Filter: even, Window: 7})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 25 || s.Skipped[ReasonFiltered] != 25 || s.Examined != 50 {
		t.Fatalf("moved %d, skipped %v, examined %d; want 25, %s 25, 50", s.Moved, s.Skipped, s.Examined, ReasonFiltered)
	}
	left := f.ready("orders.dlq")
	if len(left) != 25 {
		t.Fatalf("%d left in the DLQ: %v", len(left), f.readyIDs("orders.dlq"))
	}
	seen := map[string]bool{}
	for _, m := range left {
		if seen[m.ID] {
			t.Errorf("%s twice in the DLQ", m.ID)
		}
		seen[m.ID] = true
		if m.DeliveryCount != 0 || m.Headers["x-delivery-count"] != nil {
			t.Errorf("%s delivery count %d", m.ID, m.DeliveryCount)
		}
		if _, ok := m.Headers["x-death"]; !ok {
			t.Errorf("%s lost x-death in the rotation", m.ID)
		}
	}
	// Rotation keeps the cyclic order: the messages seen again when the run
	// wrapped round go to the back once more.
	ids := f.readyIDs("orders.dlq")
	i := slices.Index(ids, "m001")
	if cyc := append(slices.Clone(ids[i:]), ids[:i]...); !slices.IsSorted(cyc) {
		t.Errorf("rotation changed the order of the non-matching messages: %v", ids)
	}
	if s.Rotated < 25 {
		t.Errorf("rotated %d", s.Rotated)
	}
}

// On a classic queue up to HoldInPlace (1000) non-matching messages are
// held and released together at the end: back in their places, order kept.
func TestFilterOnClassicKeepsOrder(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 40)
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.ID >= "m020", nil })
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Filter: sel, Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 20 || s.Returned != 20 || s.Rotated != 0 {
		t.Fatalf("moved %d, returned %d, rotated %d; want 20, 20, 0", s.Moved, s.Returned, s.Rotated)
	}
	ids := f.readyIDs("orders.dlq")
	if len(ids) != 20 || !slices.IsSorted(ids) || ids[0] != "m000" {
		t.Fatalf("left %v", ids)
	}
}

func TestIDsAndLimit(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 30)
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{IDs: []string{"m003", "m010", "m020"}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 2 || !slices.Equal(s.IDs, []string{"m003", "m010"}) {
		t.Fatalf("moved %d, ids %q; want 2, [m003 m010]", s.Moved, s.IDs)
	}
	if n := len(f.ready("orders.dlq")); n != 28 {
		t.Fatalf("%d left", n)
	}
	if ids := f.readyIDs("orders.dlq"); !slices.IsSorted(ids) {
		t.Errorf("order changed: %v", ids)
	}
}

func TestAgeSelection(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 0)
	now := time.Unix(1800000000, 0)
	old, young := dead("old", "1"), dead("young", "2")
	old.Death.First = now.Add(-48 * time.Hour)
	young.Death.First = now.Add(-time.Hour)
	f.put("orders.dlq", old, young)
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{OlderThan: 24 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 1 || s.IDs[0] != "old" || s.Skipped[ReasonTooNew] != 1 {
		t.Fatalf("moved %d, ids %q, skipped %v; want 1, [old], %s 1", s.Moved, s.IDs, s.Skipped, ReasonTooNew)
	}
}

func TestAmbiguousOriginIsSkipped(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 3)
	f.origin = func(m *broker.Message) (broker.Destination, error) {
		return broker.Destination{}, broker.Errorf(broker.ErrConflict, "origin", "two sources: a, b")
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 0 || s.Failed[ReasonAmbiguousOrigin] != 3 || len(f.ready("orders.dlq")) != 3 {
		t.Fatalf("moved %d, failed %v, orders.dlq holds %d; want 0, %s 3, 3", s.Moved, s.Failed, len(f.ready("orders.dlq")), ReasonAmbiguousOrigin)
	}
}

func TestWholePublishFailureAcksNothing(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 20)
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		if outs[0].Dest.Kind == broker.ToExchange {
			return nil, errors.New("connection reset")
		}
		return nil, nil
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Window: 5, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err %v", err)
	}
	if s.Moved != 0 || f.acked != 0 {
		t.Fatalf("moved %d acked %d", s.Moved, f.acked)
	}
	if n := len(f.ready("orders.dlq")); n != 20 {
		t.Fatalf("%d left, want 20", n)
	}
}

func TestPartialBatchFailure(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 10)
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		errs := make([]error, len(outs))
		for i, o := range outs {
			if o.Message.Properties.MessageID == "m004" {
				errs[i] = errors.New("message too large")
			}
		}
		return errs, nil
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 9 || s.Failed[ReasonRejected] != 1 || len(s.Errors) != 1 {
		t.Fatalf("moved %d, failed %v, errors %q; want 9, %s 1, one error", s.Moved, s.Failed, s.Errors, ReasonRejected)
	}
	if ids := f.readyIDs("orders.dlq"); !slices.Equal(ids, []string{"m004"}) {
		t.Fatalf("left %v", ids)
	}
}

func TestTransformRefusedPerMessage(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 4)
	tr := func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		if m.ID == "m002" {
			return nil, errors.New("bad")
		}
		nm := m.Clone()
		nm.Body = []byte(`{"fixed":true}`)
		return nm, nil
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Transform: tr})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 3 || s.Failed[ReasonInvalidTransform] != 1 {
		t.Fatalf("moved %d, failed %v; want 3, %s 1", s.Moved, s.Failed, ReasonInvalidTransform)
	}
	for _, m := range f.ready("orders") {
		if string(m.Body) != `{"fixed":true}` {
			t.Errorf("body %s", m.Body)
		}
	}
	if ids := f.readyIDs("orders.dlq"); !slices.Equal(ids, []string{"m002"}) {
		t.Fatalf("left %v", ids)
	}
}

func TestSQSFIFOKeepsGroupAndGetsNewDedupID(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("jobs-dlq.fifo", broker.KindSQSFIFO)
	f.declare("jobs.fifo", broker.KindSQSFIFO)
	for i := 0; i < 25; i++ {
		f.put("jobs-dlq.fifo", &broker.Message{Body: []byte(fmt.Sprint(i)),
			SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i), "MessageGroupId": fmt.Sprintf("g%d", i%3), "MessageDeduplicationId": "orig"},
			Attributes:       map[string]broker.Attribute{"tenant": {DataType: "String", StringValue: "acme"}, "blob": {DataType: "Binary", BinaryValue: []byte{0, 1}}}})
	}
	f.origin = func(m *broker.Message) (broker.Destination, error) {
		return broker.Destination{Kind: broker.ToQueue, Queue: "jobs.fifo"}, nil
	}
	s, err := Run(context.Background(), f, "jobs-dlq.fifo", f, Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 25 {
		t.Fatalf("moved %d, want 25", s.Moved)
	}
	dedup := map[string]bool{}
	lastInGroup := map[string]int{}
	for _, m := range f.ready("jobs.fifo") {
		g := m.SystemAttributes["MessageGroupId"]
		d := m.SystemAttributes["MessageDeduplicationId"]
		if g == "" || d == "" || d == "orig" || dedup[d] {
			t.Fatalf("group %q dedup %q", g, d)
		}
		dedup[d] = true
		var n int
		fmt.Sscan(string(m.Body), &n)
		if last, ok := lastInGroup[g]; ok && n < last {
			t.Errorf("group %s out of order: %d after %d", g, n, last)
		}
		lastInGroup[g] = n
		if m.Attributes["tenant"].StringValue != "acme" || string(m.Attributes["blob"].BinaryValue) != "\x00\x01" {
			t.Errorf("attributes %v", m.Attributes)
		}
		if !strings.Contains(m.Attributes[RedriveHeader].StringValue, `"count":1`) {
			t.Errorf("redrive attribute %v", m.Attributes[RedriveHeader])
		}
	}
}

// On SQS non-matching messages are held hidden and released once at the
// end: each is received exactly once by the run.
func TestSQSFilterHoldsAndReleasesOnce(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 30; i++ {
		f.put("dlq", &broker.Message{Body: []byte(fmt.Sprint(i)), SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i)}})
	}
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.Body[len(m.Body)-1] == '5', nil })
	s, err := Run(context.Background(), f, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}, Filter: sel})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 3 || s.Returned != 27 || f.calls["consume"] != 4 { // four competing readers (the default concurrency)
		t.Fatalf("moved %d, returned %d, consume calls %d; want 3, 27, 4", s.Moved, s.Returned, f.calls["consume"])
	}
	for _, m := range f.ready("dlq") {
		if m.DeliveryCount > 0 {
			t.Errorf("%s received twice", m.ID)
		}
	}
}

// SQS may deliver a message again after it was deleted (and a restarted
// emulator may forget a delete). A run that is given a message it already
// moved deletes it again instead of sending it a second time, and says so.
func TestSQSMessageDeliveredAgainAfterItsDeleteIsNotSentTwice(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 50; i++ {
		f.put("dlq", &broker.Message{ID: fmt.Sprintf("id-%02d", i), Body: []byte(fmt.Sprint(i))})
	}
	again := map[string]bool{}
	f.deliverAgain = func(m *broker.Message) bool {
		if m.ID < "id-05" && !again[m.ID] {
			again[m.ID] = true
			return true
		}
		return false
	}
	var notices []string
	s, err := Run(context.Background(), f, "dlq", f, Options{
		Dest:   broker.Destination{Kind: broker.ToQueue, Queue: "src"},
		Notice: func(n string) { notices = append(notices, n) },
		// Small windows: the reader is still reading when the first
		// deletes come back.
		Window: 10, Concurrency: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range f.readyIDs("src") {
		seen[id]++
	}
	for i := 0; i < 50; i++ {
		if id := fmt.Sprintf("id-%02d", i); seen[id] != 1 {
			t.Errorf("%s is at the destination %d times, want once", id, seen[id])
		}
	}
	if left := f.readyIDs("dlq"); len(left) != 0 {
		t.Errorf("left in the source: %v", left)
	}
	if s.Moved != 50 || s.DeliveredAgain != 5 {
		t.Errorf("moved %d, delivered again %d; want 50 and 5", s.Moved, s.DeliveredAgain)
	}
	if !slices.ContainsFunc(notices, func(n string) bool { return strings.Contains(n, "delivered 5 already moved messages again") }) {
		t.Errorf("no notice of the messages delivered again: %q", notices)
	}
}

// A give-back that fails is counted and reported, not passed off as
// messages that stay in the source.
func TestFailedGiveBackIsReported(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 30; i++ {
		f.put("dlq", &broker.Message{Body: []byte(fmt.Sprint(i)), SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i)}})
	}
	f.releaseErr = errors.New("HTTP 500: internal error")
	var notices []string
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.Body[len(m.Body)-1] == '5', nil })
	s, err := Run(context.Background(), f, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}, Filter: sel,
		Notice: func(n string) { notices = append(notices, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 3 || s.Returned != 0 || s.NotReturned != 27 {
		t.Errorf("moved %d, returned %d, not returned %d; want 3, 0, 27", s.Moved, s.Returned, s.NotReturned)
	}
	var n int
	for _, x := range notices {
		if strings.Contains(x, "could not give") && strings.Contains(x, "HTTP 500") {
			var k int
			fmt.Sscanf(x, "could not give %d", &k)
			n += k
		}
	}
	if n != 27 {
		t.Errorf("notices name %d messages not given back, want 27:\n%s", n, strings.Join(notices, "\n"))
	}
}

func TestCancelSettlesInFlightAndStops(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 500)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		if calls.Add(1) >= 3 {
			cancel()
		}
		return nil, nil
	}
	s, err := Run(ctx, f, "orders.dlq", f, Options{Window: 50, Concurrency: 2})
	if !errors.Is(err, context.Canceled) || !s.Cancelled {
		t.Fatalf("err %v cancelled %v", err, s.Cancelled)
	}
	dlq, orig := len(f.ready("orders.dlq")), len(f.ready("orders"))
	if dlq+orig != 500 || int64(orig) != s.Moved || s.Moved >= 500 {
		t.Fatalf("dlq %d + orders %d, moved %d", dlq, orig, s.Moved)
	}
	if len(f.queues["orders.dlq"].unacked) != 0 {
		t.Fatalf("%d left unsettled", len(f.queues["orders.dlq"].unacked))
	}
}

func TestFlowBlockedPausesAndResumes(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 100)
	var mu sync.Mutex
	var notices []string
	released := make(chan struct{})
	blockedOnce := false
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		if !blockedOnce {
			blockedOnce = true
			f.setFlow(true)
			go func() { <-released; f.setFlow(false) }()
		}
		return nil, nil
	}
	var sawBlocked bool
	opts := Options{Window: 10, Concurrency: 1,
		Notice: func(s string) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, s)
			if strings.HasPrefix(s, "paused") {
				close(released)
			}
		},
		Progress: func(p Progress) { sawBlocked = sawBlocked || p.Blocked }}
	s, err := Run(context.Background(), f, "orders.dlq", f, opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if s.Moved != 100 || len(notices) != 2 || !strings.HasPrefix(notices[1], "resumed") {
		t.Fatalf("moved %d notices %q", s.Moved, notices)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := rabbitFake(t, broker.KindQuorum, 10)
	lost := dead("lost", "x")
	lost.Death.RoutingKeys = []string{"nobody"}
	f.put("orders.dlq", lost)
	f.origin = nil
	rc := routeChecker{f}
	tr := func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		nm := m.Clone()
		nm.Body = []byte(`{"retry":0}`)
		return nm, nil
	}
	s, err := Run(context.Background(), rc, "orders.dlq", rc, Options{DryRun: true, Transform: tr})
	if err != nil {
		t.Fatal(err)
	}
	if f.calls["consume"] != 0 || f.published != 0 || len(f.ready("orders.dlq")) != 11 {
		t.Fatalf("dry run changed something: %v", f.calls)
	}
	// The unroutable message is failed, as the real run counts it.
	if s.Destinations["exchange:ex:orders.new"] != 10 || s.Failed[ReasonUnroutable] != 1 {
		t.Fatalf("destinations %v, failed %v; want exchange:ex:orders.new 10, %s 1", s.Destinations, s.Failed, ReasonUnroutable)
	}
	if len(s.Diffs) != 3 || !strings.Contains(s.Diffs[0].Lines, "+     \"retry\": 0") || !strings.Contains(s.Diffs[0].Lines, "-     \"x-death\"") {
		t.Fatalf("%d diffs, want 3 whose first adds \"retry\": 0 and removes \"x-death\"; first:\n%s", len(s.Diffs), testdiff.Render(s.Diffs[:min(1, len(s.Diffs))]))
	}
}

// An exchange destination without a routing key routes each message with
// the keys of its death record, else the key it was delivered with.
func TestRunExchangeWithoutKeyUsesTheMessagesKeys(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 3)
	f.declare("audit", broker.KindClassic)
	f.bind("other", "orders.new", "orders")
	f.bind("other", "audit.key", "audit")
	plain := &broker.Message{Body: []byte("{}"), RoutingKey: "audit.key", Properties: broker.Properties{MessageID: "p1"}}
	f.put("orders.dlq", plain)
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Dest: broker.Destination{Kind: broker.ToExchange, Exchange: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 4 || s.Destinations["exchange:other:orders.new"] != 3 || s.Destinations["exchange:other:audit.key"] != 1 {
		t.Fatalf("moved %d destinations %v failed %v", s.Moved, s.Destinations, s.Failed)
	}
	if len(f.ready("orders")) != 3 || len(f.ready("audit")) != 1 {
		t.Fatalf("orders %d audit %d", len(f.ready("orders")), len(f.ready("audit")))
	}
}

// A fixed destination that routes nowhere is refused before a message is
// taken, with the reason and the fix; the source is untouched.
func TestRunRefusesADestinationThatRoutesNowhere(t *testing.T) {
	for _, d := range []broker.Destination{
		{Kind: broker.ToQueue, Queue: "no-such-queue"},
		{Kind: broker.ToExchange, Exchange: "ex", RoutingKeys: []string{"unbound"}},
		{Kind: broker.ToExchange, Exchange: "no-such-exchange"},
	} {
		f := rabbitFake(t, broker.KindQuorum, 5)
		rc := routeChecker{f}
		s, err := Run(context.Background(), rc, "orders.dlq", rc, Options{Dest: d})
		if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "`"+d.String()+"`") || !strings.Contains(err.Error(), "nothing was moved") {
			t.Errorf("%s: err %v", d, err)
		}
		if s.Examined != 0 || len(f.ready("orders.dlq")) != 5 || f.calls["consume"] != 0 {
			t.Errorf("%s: examined %d, dlq %d, consumes %d", d, s.Examined, len(f.ready("orders.dlq")), f.calls["consume"])
		}
	}
}

// A dry run to a destination that routes nowhere gives the real run's
// verdict (the same error), not a count of unroutable messages.
func TestDryRunRefusesADestinationThatRoutesNowhere(t *testing.T) {
	f := rabbitFake(t, broker.KindQuorum, 5)
	rc := routeChecker{f}
	d := broker.Destination{Kind: broker.ToQueue, Queue: "missing"}
	s, err := Run(context.Background(), rc, "orders.dlq", rc, Options{Dest: d, DryRun: true})
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "`queue:missing` does not exist") {
		t.Fatalf("dry run: err %v, destinations %v skipped %v", err, s.Destinations, s.Skipped)
	}
	if len(f.ready("orders.dlq")) != 5 {
		t.Fatalf("dlq has %d", len(f.ready("orders.dlq")))
	}
}

// Messages the destination confirmed only after a resend (Outgoing.Resent)
// are moved, and counted and named as possibly there twice.
func TestRunReportsResentMessages(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 6)
	f.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		for i := range outs {
			if outs[i].Message.Properties.MessageID == "m002" || outs[i].Message.Properties.MessageID == "m004" {
				outs[i].Resent = true
			}
		}
		return nil, nil
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.ResentIDs)
	if s.Moved != 6 || s.Resent != 2 || strings.Join(s.ResentIDs, " ") != "m002 m004" {
		t.Fatalf("moved %d resent %d %v", s.Moved, s.Resent, s.ResentIDs)
	}
}

// routeChecker adds RouteChecker to the fake.
type routeChecker struct{ *fakeBroker }

func (r routeChecker) Routable(ctx context.Context, d broker.Destination) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Kind == broker.ToExchange && len(d.RoutingKeys) == 0 {
		return len(r.routes[d.Exchange]) > 0, nil
	}
	for _, k := range d.RoutingKeys {
		if _, ok := r.routes[d.Exchange][k]; ok {
			return true, nil
		}
	}
	return false, nil
}

func TestJournalResumeAcksConfirmedWithoutRepublishing(t *testing.T) {
	dir := t.TempDir()
	key := JournalKey("fake", "orders.dlq")
	f := rabbitFake(t, broker.KindClassic, 10)
	// An interrupted run: m000..m002 confirmed, not acknowledged; m003
	// published, not confirmed; m004 fully done.
	j, err := CreateJournal(dir, JournalHeader{Key: key, Source: "orders.dlq", Destination: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.record('P', []string{"m000", "m001", "m002", "m003", "m004"}))
	must(t, j.record('C', []string{"m000", "m001", "m002", "m004"}))
	must(t, j.record('A', []string{"m004"}))
	// Simulate the kill: the file stays, its lock goes.
	unlockFile(j.f)
	j.f.Close()
	// The copies of m000..m002 are at the destination already.
	f.put("orders", dead("m000", "{}"), dead("m001", "{}"), dead("m002", "{}"))

	if paths, _ := Interrupted(dir, key); len(paths) != 1 {
		t.Fatalf("interrupted %v", paths)
	}
	rs, err := LoadInterrupted(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	rep := rs.report()
	if rep.ConfirmedNotAcked != 3 || rep.InFlight != 1 || rep.InFlightIDs[0] != "m003" {
		t.Fatalf("report: confirmed not acked %d, in flight %d %q; want 3, 1 [m003 …]", rep.ConfirmedNotAcked, rep.InFlight, rep.InFlightIDs)
	}
	j2, err := CreateJournal(dir, JournalHeader{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Run(context.Background(), f, "orders.dlq", f, Options{Resume: rs, Journal: j2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 10 || s.Resumed.AckedOnSight != 3 || len(f.ready("orders")) != 10 {
		t.Fatalf("moved %d, acked on sight %d, orders holds %d; want 10, 3, 10", s.Moved, s.Resumed.AckedOnSight, len(f.ready("orders")))
	}
	if paths, _ := Interrupted(dir, key); len(paths) != 0 {
		t.Fatalf("journals left interrupted: %v", paths)
	}
	if _, err := LoadInterrupted(dir, key); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("err %v", err)
	}
}

// The last acknowledgements of a killed run, up to the hold its B line
// names, are reported as possibly not received by the broker; older ones
// are not.
func TestJournalReportsAcksThatMayNotHaveArrived(t *testing.T) {
	dir := t.TempDir()
	key := JournalKey("fake", "orders.dlq")
	j, err := CreateJournal(dir, JournalHeader{Key: key, Source: "orders.dlq", Destination: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.begin(3))
	var all []string
	for i := 0; i < 10; i++ {
		all = append(all, fmt.Sprintf("m%03d", i))
	}
	must(t, j.record('P', all))
	must(t, j.record('C', all))
	for i := 0; i < 10; i += 2 {
		must(t, j.record('A', all[i:i+2]))
	}
	unlockFile(j.f)
	j.f.Close()
	rs, err := LoadInterrupted(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Release()
	rep := rs.report()
	if rep.MaybeNotAcked != 3 || strings.Join(rep.MaybeNotAckedIDs, " ") != "m007 m008 m009" || rep.ConfirmedNotAcked != 0 || rep.InFlight != 0 {
		t.Fatalf("report: maybe not acked %d %q, confirmed not acked %d, in flight %d; want 3 [m007 m008 m009], 0, 0", rep.MaybeNotAcked, rep.MaybeNotAckedIDs, rep.ConfirmedNotAcked, rep.InFlight)
	}
}

// A run that fails before it touches a message leaves no journal to resume;
// one that fails after leaves its journal.
func TestJournalOfARunThatNeverStartedIsRemoved(t *testing.T) {
	dir := t.TempDir()
	f := rabbitFake(t, broker.KindClassic, 3)
	j, err := CreateJournal(dir, JournalHeader{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), f, "no-such-queue", f, Options{Journal: j}); !errors.Is(err, broker.ErrNotFound) {
		t.Fatalf("err %v, want not found", err)
	}
	must(t, j.Close()) // as the command does
	if _, err := os.Stat(j.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("journal of a run that never started: %v", err)
	}
	if paths, _ := Interrupted(dir, "k"); len(paths) != 0 {
		t.Fatalf("offered as interrupted: %v", paths)
	}

	j2, err := CreateJournal(dir, JournalHeader{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, j2.record('P', []string{"m000"}))
	must(t, j2.end(Summary{}, errors.New("connection lost")))
	if paths, _ := Interrupted(dir, "k"); len(paths) != 1 {
		t.Fatalf("a run that failed after publishing left %v, want its journal", paths)
	}
}

func TestJournalOfARunningProcessIsNotInterrupted(t *testing.T) {
	dir := t.TempDir()
	j, err := CreateJournal(dir, JournalHeader{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if paths, _ := Interrupted(dir, "k"); len(paths) != 0 {
		t.Fatalf("a locked journal was taken as interrupted: %v", paths)
	}
	if _, err := filepath.Rel(dir, j.Path()); err != nil {
		t.Fatal(err)
	}
}

func TestDiscardArchivesBeforeAck(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 20)
	arch := newFake(t, broker.Archive)
	// Each archive write finds no message acknowledged beyond those the
	// earlier writes archived. (Windows may be shorter than Window: the
	// engine does not wait to fill one.)
	var archived int
	var early []string
	arch.publishHook = func(outs []broker.Outgoing) ([]error, error) {
		f.mu.Lock()
		acked := f.acked
		f.mu.Unlock()
		if acked > archived {
			early = append(early, fmt.Sprintf("%d acknowledged before a write, %d archived", acked, archived))
		}
		archived += len(outs)
		return nil, nil
	}
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.ID < "m010", nil })
	s, err := Discard(context.Background(), f, "orders.dlq", arch, broker.Destination{Kind: broker.ToFile, Path: "/tmp/a.jsonl"}, Options{Filter: sel, Window: 5, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 10 || s.Archived != 10 || len(f.ready("orders.dlq")) != 10 {
		t.Fatalf("moved %d, archived %d, orders.dlq holds %d; want 10, 10, 10", s.Moved, s.Archived, len(f.ready("orders.dlq")))
	}
	if len(early) > 0 {
		t.Fatalf("the archive must come first: %v", early)
	}
	a := arch.ready("file:/tmp/a.jsonl")
	if len(a) != 10 || a[0].Headers["x-death"] == nil || a[0].Headers[RedriveHeader] != nil {
		t.Fatalf("archive holds %d, want 10 with x-death and without %s; first has x-death %t, %s %v", len(a), RedriveHeader, a[0].Headers["x-death"] != nil, RedriveHeader, a[0].Headers[RedriveHeader])
	}
}

func TestPurgeWithoutArchiveUsesBrokerPurge(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 5)
	p := purger{f, 0}
	s, err := Purge(context.Background(), &p, "orders.dlq", nil, broker.Destination{}, Options{})
	if err != nil || s.Moved != 5 || p.n != 1 {
		t.Fatalf("moved %d, purge calls %d, err %v; want 5, 1, nil", s.Moved, p.n, err)
	}
}

type purger struct {
	*fakeBroker
	n int
}

func (p *purger) Purge(ctx context.Context, q string) (int64, error) {
	p.n++
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.queues[q].ready)
	p.queues[q].ready = nil
	return int64(n), nil
}

func TestEditPublishesOneAndRemovesOriginal(t *testing.T) {
	f := rabbitFake(t, broker.KindClassic, 5)
	ed := dead("m003", `{"fixed":1}`)
	ed.ID = "m003"
	s, err := Edit(context.Background(), f, "orders.dlq", f, ed, Options{})
	if err != nil || s.Moved != 1 {
		t.Fatalf("moved %d, err %v; want 1, nil", s.Moved, err)
	}
	if got := f.ready("orders"); len(got) != 1 || string(got[0].Body) != `{"fixed":1}` {
		t.Fatalf("orders holds %q, want one {\"fixed\":1}", testdiff.Pick(got, func(m *broker.Message) string { return string(m.Body) }))
	}
	if ids := f.readyIDs("orders.dlq"); !slices.Equal(ids, []string{"m000", "m001", "m002", "m004"}) {
		t.Fatalf("dlq %v", ids)
	}
	_, err = Edit(context.Background(), f, "orders.dlq", f, ed, Options{})
	if !errors.Is(err, broker.ErrNotFound) {
		t.Fatalf("second edit: %v", err)
	}
}

func TestLimiterRamp(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLimiter(100, 10*time.Second, func() time.Time { return now })
	var slept time.Duration
	l.sleep = func(ctx context.Context, d time.Duration) error { slept += d; now = now.Add(d); return nil }
	for i := 0; i < 50; i++ {
		if err := l.wait(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// At the start the rate is 10/s rising: 50 messages take several
	// seconds, far more than the 0.5 s at full rate.
	if slept < 2*time.Second || slept > 6*time.Second {
		t.Fatalf("slept %v", slept)
	}
	now = now.Add(20 * time.Second)
	slept = 0
	for i := 0; i < 100; i++ {
		_ = l.wait(context.Background(), 1)
	}
	if slept < 800*time.Millisecond || slept > 1200*time.Millisecond {
		t.Fatalf("full rate: 100 took %v", slept)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
