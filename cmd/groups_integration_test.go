package cmd

// --group on every backend: RabbitMQ, SQS standard and FIFO (fauxqs), and
// archives. Twelve dead letters in three failure groups, one of them a
// merged template; peek, stats, export, redrive and discard select by
// group ID; an unknown ID is one line, exit 1, and changes nothing.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// groupBody is dead letter i of the scenario: i%3 picks its failure.
func groupBody(i int) string {
	var reason string
	switch i % 3 {
	case 0:
		reason = fmt.Sprintf("Customer cus_%d not found", 9900+i)
	case 1:
		reason = "Unknown event type " + []string{"OrderShipped", "OrderCancelled"}[i%2]
	default:
		reason = fmt.Sprintf("Read timed out after %dms", 5000+i)
	}
	return fmt.Sprintf(`{"n":%d,"error":%q}`, i, reason)
}

const groupMessages = 12

var (
	gCustomers = inspect.GroupID("Customer <id> not found")
	gEvents    = inspect.GroupID("Unknown event type <*>")
	gTimeouts  = inspect.GroupID("Read timed out after <time>")
)

// groupBackend is one backend under test.
type groupBackend struct {
	args  []string        // global flags
	ref   string          // the DLQ as dlq names it
	to    string          // --to for the redrive
	depth func() int      // messages left in the DLQ
	moved func() []string // bodies that arrived at --to
	// discard: the backend can remove messages (archives cannot).
	discard bool
}

func bodiesN(t *testing.T, bodies []string) []int {
	t.Helper()
	var ns []int
	for _, b := range bodies {
		var v struct{ N int }
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
		ns = append(ns, v.N)
	}
	slices.Sort(ns)
	return ns
}

func runGroupScenario(t *testing.T, b groupBackend) {
	run := func(args ...string) (string, string, ExitCode) {
		t.Helper()
		return runDLQ(t, append(append([]string(nil), b.args...), args...)...)
	}
	// stats: three groups with their IDs, the events merged.
	out, errOut, code := run("stats", b.ref, "-o", "json")
	if code != ExitOK {
		t.Fatalf("stats: exit %d: %s", code, errOut)
	}
	var res inspect.StatsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range res.Groups {
		got = append(got, fmt.Sprintf("%s %d %s", g.ID, g.Count, g.Template))
	}
	slices.Sort(got)
	want := []string{
		gCustomers + " 4 Customer <id> not found",
		gTimeouts + " 4 Read timed out after <time>",
		gEvents + " 4 Unknown event type <*>",
	}
	slices.Sort(want)
	if d := testdiff.Text(strings.Join(want, "\n"), strings.Join(got, "\n")); d != "" {
		t.Fatalf("stats groups:\n%s", d)
	}

	// An unknown group selects nothing: one line saying so and how to
	// list the groups (after what the reading pass changed, as for any
	// peek), exit 0 as for any empty selection, nothing moved.
	_, errOut, code = run("redrive", b.ref, "--group", "0123456789", "--yes", "--no-journal")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if last := lines[len(lines)-1]; code != ExitOK || !strings.HasPrefix(last, "no message of") || !strings.Contains(last, "dlq stats "+b.ref+" --group-by reason") {
		t.Fatalf("unknown group: exit %d, stderr %q", code, errOut)
	}
	if d := b.depth(); d != groupMessages {
		t.Fatalf("the DLQ holds %d after a refused redrive, want %d", d, groupMessages)
	}

	// peek --group: the merged group, with .group and .shape.
	out, errOut, code = run("peek", b.ref, "--group", gEvents, "-n", "0", "-o", "json")
	if code != ExitOK {
		t.Fatalf("peek: exit %d: %s", code, errOut)
	}
	var docs []map[string]any
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("peek json: %v\n%s", err, out)
	}
	var ns []int
	for _, d := range docs {
		ns = append(ns, int(d["body"].(map[string]any)["n"].(float64)))
		if !strings.HasPrefix(fmt.Sprint(d["shape"]), "Unknown event type ") || d["group"] != inspect.GroupID(fmt.Sprint(d["shape"])) {
			t.Errorf("peeked shape %v group %v", d["shape"], d["group"])
		}
	}
	slices.Sort(ns)
	if !slices.Equal(ns, []int{1, 4, 7, 10}) {
		t.Errorf("peek --group %s showed %v, want 1 4 7 10", gEvents, ns)
	}

	// export --group with --filter (AND).
	dump := filepath.Join(t.TempDir(), "customers.jsonl")
	_, errOut, code = run("export", b.ref, "--group", gCustomers, "--filter", ".body.n > 0", "--to", "file://"+dump)
	if code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	var exported []string
	for _, m := range brokertest.ReadArchive(t, dump) {
		exported = append(exported, string(m.Body))
	}
	if ns := bodiesN(t, exported); !slices.Equal(ns, []int{3, 6, 9}) {
		t.Errorf("export --group --filter wrote %v, want 3 6 9", ns)
	}

	// redrive --group: the events go; the audit record names the group.
	out, errOut, code = run("redrive", b.ref, "--group", gEvents, "--to", b.to, "--yes", "-o", "json", "--no-journal")
	if code != ExitOK {
		t.Fatalf("redrive: exit %d: %s %s", code, out, errOut)
	}
	if s := riSummary(t, out); s.Moved != 4 {
		t.Fatalf("redrive moved %d, want 4", s.Moved)
	}
	if ns := bodiesN(t, b.moved()); !slices.Equal(ns, []int{1, 4, 7, 10}) {
		t.Errorf("redrive --group moved %v, want 1 4 7 10", ns)
	}
	audit, _, _ := runDLQ(t, "audit", "-o", "json")
	if !strings.Contains(audit, gEvents) {
		t.Errorf("the audit log does not name group %s", gEvents)
	}
	if !b.discard {
		return
	}
	if d := b.depth(); d != groupMessages-4 {
		t.Fatalf("the DLQ holds %d after the redrive, want %d", d, groupMessages-4)
	}
	// discard --group --filter: only the late timeouts.
	out, errOut, code = run("discard", b.ref, "--group", gTimeouts, "--filter", ".body.n > 5", "--no-archive", "--yes", "-o", "json")
	if code != ExitOK {
		t.Fatalf("discard: exit %d: %s %s", code, out, errOut)
	}
	if s := riRemoval(t, out); s.Moved != 2 {
		t.Fatalf("discard discarded %d, want 2", s.Moved)
	}
	riPoll(t, 10*time.Second, "the DLQ to hold 6", func() bool { return b.depth() == groupMessages-6 })
}

func TestGroupsIntegrationRabbitMQ(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "groups")
	dlq := r.queue(base+".dlq", nil)
	dst := r.queue(base+".dst", nil)
	var ps []amqp.Publishing
	for i := range groupMessages {
		ps = append(ps, amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", MessageId: fmt.Sprint("m", i), Body: []byte(groupBody(i))})
	}
	r.publish("", dlq, ps...)
	r.waitDepth(dlq, groupMessages)
	runGroupScenario(t, groupBackend{args: r.args, ref: dlq, to: "queue:" + dst, discard: true,
		depth: func() int { return r.depth(dlq) },
		moved: func() []string { return riBodies(r.drain(dst)) },
	})
}

func sqsGroupBackend(t *testing.T, fifo bool) groupBackend {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "groups")
	suffix, attrs := "", map[string]string(nil)
	if fifo {
		suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
	}
	dlq := s.queue(base+"-dlq"+suffix, attrs)
	dst := s.queue(base+"-dst"+suffix, attrs)
	var es []sqstypes.SendMessageBatchRequestEntry
	for i := range groupMessages {
		e := sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(groupBody(i))}
		if fifo {
			// A group per message (per order, say): a peek without
			// removing anything sees only the head of each group.
			e.MessageGroupId, e.MessageDeduplicationId = aws.String(fmt.Sprint("g", i)), aws.String(fmt.Sprint("d", i))
		}
		es = append(es, e)
	}
	s.send(dlq, es...)
	return groupBackend{args: s.args, ref: base + "-dlq" + suffix, to: "queue:" + base + "-dst" + suffix, discard: true,
		depth: func() int { return s.count(dlq) },
		moved: func() []string {
			var out []string
			for _, m := range s.drain(dst) {
				out = append(out, aws.ToString(m.Body))
			}
			return out
		},
	}
}

func TestGroupsIntegrationSQS(t *testing.T) {
	runGroupScenario(t, sqsGroupBackend(t, false))
}

func TestGroupsIntegrationSQSFIFO(t *testing.T) {
	runGroupScenario(t, sqsGroupBackend(t, true))
}

// Archives need no server.
func TestGroupsArchive(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "dlq.jsonl")
	w, err := archive.NewWriter(src, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range groupMessages {
		m := &broker.Message{ID: fmt.Sprint("m", i), System: broker.RabbitMQ, Queue: "orders.dlq", Body: []byte(groupBody(i)),
			Properties: broker.Properties{ContentType: "application/json"}}
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "events.jsonl")
	runGroupScenario(t, groupBackend{ref: "file://" + src, to: "file://" + dst,
		depth: func() int { return len(brokertest.ReadArchive(t, src)) },
		moved: func() []string {
			var out []string
			for _, m := range brokertest.ReadArchive(t, dst) {
				out = append(out, string(m.Body))
			}
			return out
		},
	})
}
