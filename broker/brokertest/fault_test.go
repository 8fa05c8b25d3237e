package brokertest_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/redrive"
)

// memoryFaults is a brokertest.FaultHarness on the in-memory adapter, which
// records its wire (memory.wire) as a proxy would.
type memoryFaults struct{ m *memory }

var _ brokertest.FaultHarness = memoryFaults{}

func (h memoryFaults) Name() string                    { return "memory" }
func (h memoryFaults) Server() string                  { return "memory=test" }
func (h memoryFaults) Args() []string                  { return nil }
func (h memoryFaults) Queue(testing.TB, string) string { return h.m.make(nil) }
func (h memoryFaults) Settled(testing.TB, string) bool { return true }
func (h memoryFaults) Prefetch() int                   { return brokertest.FaultInFlight }
func (h memoryFaults) Wire() *brokertest.WireLedger    { return h.m.wire }

func (h memoryFaults) Fill(_ testing.TB, q string, ids []string) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	for _, id := range ids {
		h.m.tag++
		h.m.queues[q] = append(h.m.queues[q], &entry{body: id, tag: h.m.tag})
	}
}

func (h memoryFaults) Count(_ testing.TB, q string) int {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return len(h.m.queues[q])
}

func (h memoryFaults) Drain(_ testing.TB, q string) map[string]int {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	seen := map[string]int{}
	for _, e := range h.m.queues[q] {
		seen[e.body]++
	}
	h.m.queues[q] = []*entry{}
	return seen
}

// faultRecorder is a testing.TB that records failures and log lines
// instead of failing the test that checks them.
type faultRecorder struct {
	testing.TB
	mu           sync.Mutex
	fails, lines []string
}

func (r *faultRecorder) Helper() {}
func (r *faultRecorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}
func (r *faultRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails = append(r.fails, fmt.Sprintf(format, args...))
}
func (r *faultRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// No fault scenario runs without a real server: each drives the built dlq
// binary, a process of its own that reaches a broker only through a
// registered adapter over the network, where an in-memory adapter cannot
// be put under it. So the checks that end a scenario are shown to catch a
// loss here, on the in-memory adapter driven in this process by the same
// redrive engine: an adapter that reports a publish done that the
// destination never confirmed (flaw publish-unconfirmed) loses the last
// message of each batch, which the engine then acknowledges. The
// concurrent-processes check must count it lost in its tally line, see the
// acknowledgement before any confirm on the wire, and fail; the adapter
// without the flaw must pass.
func TestTheFaultChecksCatchALoss(t *testing.T) {
	const n = 20
	for _, tt := range []struct {
		flaw string
		// tally is the scenario's tally line, up to took=.
		tally string
		fails []string
	}{
		{"", "scenario=concurrent-processes memory=test backend=memory messages=20 processes=1 moved_each=20 lost=0 duplicates=0 left=0 removals_checked_on_wire=20", nil},
		{"publish-unconfirmed", "scenario=concurrent-processes memory=test backend=memory messages=20 processes=1 moved_each=20 lost=1 duplicates=0 left=0 removals_checked_on_wire=20", []string{
			"message c-00019 is in neither the source nor the destination",
			"on the wire: ack of c-00019 before any destination confirmed it",
			"lost 1, 0 left in the source",
		}},
	} {
		t.Run("flaw="+tt.flaw, func(t *testing.T) {
			m := newMemory(tt.flaw)
			m.wire = brokertest.NewWireLedger()
			h := memoryFaults{m}
			src, dst := h.Queue(t, "src"), h.Queue(t, "dst")
			want := make([]string, n)
			for i := range want {
				want[i] = fmt.Sprintf("c-%05d", i)
			}
			h.Fill(t, src, want)
			started := time.Now()
			sum, err := redrive.Run(context.Background(), m, src, m, redrive.Options{
				Dest: broker.Destination{Kind: broker.ToQueue, Queue: dst}, Window: n, Concurrency: 1})
			if err != nil {
				t.Fatalf("redrive: %v", err)
			}
			rec := &faultRecorder{TB: t}
			brokertest.ConcurrentCheck(rec, h, src, dst, want, 1, []int64{sum.Moved}, started)
			tally := ""
			for _, l := range rec.lines {
				if s, ok := strings.CutPrefix(l, "fault tally: "); ok {
					tally, _, _ = strings.Cut(s, " took=")
				}
			}
			if tally != tt.tally {
				t.Errorf("tally:\n got %s\nwant %s", tally, tt.tally)
			}
			for _, f := range tt.fails {
				if !slices.Contains(rec.fails, f) {
					t.Errorf("no failure %q; failures:\n%s", f, strings.Join(rec.fails, "\n"))
				}
			}
			if len(tt.fails) == 0 && len(rec.fails) > 0 {
				t.Errorf("the checks failed a run that lost nothing:\n%s", strings.Join(rec.fails, "\n"))
			}
		})
	}
}
