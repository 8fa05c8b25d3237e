package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/redrive"
)

func TestRedriveFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   string
		output string
		err    string
		want   func(t *testing.T, o *redriveOptions)
	}{
		{name: "defaults", args: "q", want: func(t *testing.T, o *redriveOptions) {
			if o.To != "origin" || o.Rate != 0 || o.DryRun {
				t.Errorf("to %q, rate %v, dry run %t; want origin, 0, false", o.To, o.Rate, o.DryRun)
			}
		}},
		{name: "everything", args: "q --to exchange:orders:a.b --filter .id --id a,b --id c --limit 5 --older-than 1h --transform .body.x=1 --set-header k=v=w --rate 120/m --ramp 10s --concurrency 3 --window 100 --keep-death-headers",
			want: func(t *testing.T, o *redriveOptions) {
				if o.Rate != 2 || o.headers["k"] != "v=w" || len(o.Select.IDs) != 3 || o.transform == nil || o.Select.filter == nil {
					t.Errorf("rate %v, header k %q, %d ids, transform set %t, filter set %t; want 2, v=w, 3, true, true", o.Rate, o.headers["k"], len(o.Select.IDs), o.transform != nil, o.Select.filter != nil)
				}
			}},
		{name: "bad filter", args: "q --filter .[", err: "`--filter`"},
		{name: "bad transform", args: "q --transform '.a ='", err: "`--transform`"},
		{name: "bad set-header", args: "q --set-header novalue", err: "KEY=VALUE"},
		{name: "death header", args: "q --set-header x-death=1", err: "set by the broker"},
		{name: "bad rate", args: "q --rate fast", err: "not a rate"},
		{name: "ramp without rate", args: "q --ramp 10s", err: "`--ramp` needs `--rate`"},
		{name: "bad destination", args: "q --to somewhere", err: "is not a destination"},
		{name: "negative limit", args: "q --limit -1", err: "`--limit`"},
		{name: "empty window", args: "q --newer-than 1h --older-than 2h", err: "selects nothing"},
		{name: "server-side filter", args: "q --server-side --filter .", err: "cannot be used with `--server-side`"},
		{name: "server-side rate", args: "q --server-side --rate 600", err: "at most 500"},
		{name: "server-side resume", args: "q --server-side --resume", err: "`--resume`"},
		{name: "server-side no redrive header", args: "q --server-side --no-redrive-header", err: "`--no-redrive-header` do not apply"},
		{name: "no redrive header", args: "q --no-redrive-header", want: func(t *testing.T, o *redriveOptions) {
			var ro redrive.Options
			o.libOptions(&ro)
			if !ro.NoRedriveHeader || o.plan()["no-redrive-header"] != "true" {
				t.Errorf("--no-redrive-header not passed on: NoRedriveHeader %t, plan %q", ro.NoRedriveHeader, o.plan()["no-redrive-header"])
			}
		}},
		{name: "output csv", args: "q", output: "csv", err: "unknown `--output`"},
		{name: "max redrives", args: "q --max-redrives 3 --filter .id", want: func(t *testing.T, o *redriveOptions) {
			var ro redrive.Options
			o.libOptions(&ro)
			if ro.MaxRedrives != 3 || ro.Filter == nil || o.plan()["max-redrives"] != "3" {
				t.Errorf("--max-redrives not passed on: %d %v", ro.MaxRedrives, o.plan())
			}
		}},
		{name: "max redrives 0", args: "q --max-redrives 0", err: "`--max-redrives 0`: give at least 1"},
		{name: "max redrives negative", args: "q --max-redrives -2", err: "give at least 1"},
		{name: "max redrives without the record", args: "q --max-redrives 2 --no-redrive-header", err: "drop `--no-redrive-header`"},
		{name: "server-side max redrives", args: "q --server-side --max-redrives 2", err: "`--max-redrives` cannot be used with `--server-side`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := &Factory{IO: ios, Options: &GlobalOptions{Output: tt.output}, Now: time.Now}
			var got *redriveOptions
			cmd := newCmdRedrive(f, func(o *redriveOptions) error { got = o; return nil })
			cmd.SetArgs(splitArgs(tt.args))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.ExecuteContext(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("run function never called")
			}
			tt.want(t, got)
		})
	}
}

// splitArgs splits on spaces, keeping '…' together.
func splitArgs(s string) []string {
	var out []string
	for i, part := range strings.Split(s, "'") {
		if i%2 == 1 {
			out = append(out, part)
			continue
		}
		out = append(out, strings.Fields(part)...)
	}
	return out
}

// moveFake is a broker with one DLQ and one origin queue that can be
// consumed, published to and peeked; it records what happened.
type moveFake struct {
	mu        sync.Mutex
	dlq, dest []*broker.Message
	consumed  bool
	peeked    bool
	// peeks counts the reads (Peek calls); changed is what each says it
	// changed (PeekReport.Changed).
	peeks     int
	changed   string
	closed    bool
	unackable bool
	// noOrigin: no message has a recorded origin.
	noOrigin bool
	// published, when set, is called after each publish.
	published func()
	// outOfReach is what a peek reports it could not see.
	outOfReach int64
}

func (b *moveFake) System() broker.System { return broker.RabbitMQ }
func (b *moveFake) String() string        { return "amqp://ops@fake:5672/" }
func (b *moveFake) Close() error          { b.closed = true; return nil }

// Traits are those of a RabbitMQ quorum queue: rotation.
func (b *moveFake) Traits(broker.Queue) broker.Traits {
	return broker.Traits{Park: broker.ParkRotate, PeekAll: broker.PeekRotate}
}
func (b *moveFake) Origin(ctx context.Context, q string, m *broker.Message) (broker.Destination, error) {
	if b.noOrigin {
		return broker.Destination{}, nil
	}
	return broker.Destination{Kind: broker.ToQueue, Queue: "orders"}, nil
}
func (b *moveFake) Publish(ctx context.Context, outs []broker.Outgoing) ([]error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := make([]error, len(outs))
	for i, o := range outs {
		if o.Dest.Queue == "orders" {
			b.dest = append(b.dest, o.Message)
		} else {
			errs[i] = broker.Errorf(broker.ErrUnroutable, "publish", "no route")
		}
	}
	if b.published != nil {
		b.published()
	}
	return errs, nil
}
func (b *moveFake) Peek(ctx context.Context, q string, o broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	b.peeked = true
	b.peeks++
	for _, m := range b.dlq {
		if err := visit(m.Clone()); err != nil {
			break
		}
	}
	return broker.PeekReport{Read: int64(len(b.dlq)), Changed: b.changed, OutOfReach: b.outOfReach}, nil
}
func (b *moveFake) Consume(ctx context.Context, q string, o broker.ConsumeOptions) (broker.Subscription, error) {
	b.consumed = true
	return &moveFakeSub{b: b, taken: map[uint64]*broker.Message{}}, nil
}

type moveFakeSub struct {
	b     *moveFake
	tag   uint64
	taken map[uint64]*broker.Message
}

func (s *moveFakeSub) Next(ctx context.Context) (*broker.Delivery, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if len(s.b.dlq) == 0 {
		return nil, io.EOF
	}
	m := s.b.dlq[0]
	s.b.dlq = s.b.dlq[1:]
	s.tag++
	s.taken[s.tag] = m
	return &broker.Delivery{Message: m.Clone(), Receipt: broker.Receipt{Tag: s.tag}}, nil
}
func (s *moveFakeSub) Ack(ctx context.Context, rs ...broker.Receipt) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, r := range rs {
		delete(s.taken, r.Tag)
	}
	return nil
}
func (s *moveFakeSub) Release(ctx context.Context, rs ...broker.Receipt) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for _, r := range rs {
		s.b.dlq = append(s.b.dlq, s.taken[r.Tag])
		delete(s.taken, r.Tag)
	}
	return nil
}
func (s *moveFakeSub) Close() error { return s.Release(context.Background(), s.keys()...) }
func (s *moveFakeSub) keys() []broker.Receipt {
	var rs []broker.Receipt
	for k := range s.taken {
		rs = append(rs, broker.Receipt{Tag: k})
	}
	return rs
}

func moveFactory(t *testing.T, b *moveFake, tty bool) (*Factory, func() (string, string)) {
	ios, in, out, errOut := Test()
	ios.SetTTY(tty)
	in.WriteString("y\n")
	// Without a terminal a run passes --yes, as a script must.
	f := &Factory{IO: ios, Options: &GlobalOptions{AuditLog: filepath.Join(t.TempDir(), "audit.jsonl"), Yes: !tty}, Now: time.Now, Args: []string{"redrive"}}
	f.OpenQueue = func(ctx context.Context, ref string) (broker.Broker, string, error) { return b, ref, nil }
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) { return nil, ref, nil }
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	return f, func() (string, string) { return out.String(), errOut.String() }
}

func fakeDead(n int) []*broker.Message {
	var ms []*broker.Message
	for i := range n {
		ms = append(ms, &broker.Message{ID: fmt.Sprintf("m%02d", i), System: broker.RabbitMQ, Body: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: map[string]any{"x-death": []any{}}, Properties: broker.Properties{MessageID: fmt.Sprintf("m%02d", i)}})
	}
	return ms
}

func TestRedriveRun(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(12)}
			f, outs := moveFactory(t, b, tty)
			o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", changed: func(string) bool { return false }}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(o.validate())
			must(redriveRun(context.Background(), o))
			stdout, _ := outs()
			if len(b.dest) != 12 || len(b.dlq) != 0 || !b.closed {
				t.Fatalf("dest %d dlq %d closed %v", len(b.dest), len(b.dlq), b.closed)
			}
			if !strings.Contains(stdout, "moved 12 of 12") || !strings.Contains(stdout, "queue:orders") {
				t.Errorf("stdout %q", stdout)
			}
			if _, ok := b.dest[0].Headers["x-death"]; ok {
				t.Error("x-death kept")
			}
			data, err := os.ReadFile(f.AuditPath())
			must(err)
			var rec AuditRecord
			must(json.Unmarshal(data, &rec))
			if rec.Action != "redrive" || rec.Outcome != "ok" || rec.Counts["moved"] != 12 || len(rec.IDs) != 12 || strings.Contains(string(data), "ops:") {
				t.Errorf("audit %s", data)
			}
		})
	}
}

// On a terminal a redrive shows its preview and asks; "no" exits 2 and
// leaves the queue as it was; --yes asks nothing; without a terminal and
// without --yes nothing moves.
func TestRedriveConfirmsOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tty    bool
		yes    bool
		answer string
		moved  int
		code   ExitCode
		asked  bool
	}{
		{"terminal, no", true, false, "n\n", 0, ExitCancelled, true},
		{"terminal, yes", true, false, "y\n", 12, ExitOK, true},
		{"terminal, --yes", true, true, "", 12, ExitOK, false},
		{"no terminal, --yes", false, true, "", 12, ExitOK, false},
		{"no terminal, no --yes", false, false, "", 0, ExitError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(12)}
			f, outs := moveFactory(t, b, tc.tty)
			f.IO.In = strings.NewReader(tc.answer)
			f.Options.Yes = tc.yes
			o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", changed: func(string) bool { return false }}
			if err := o.validate(); err != nil {
				t.Fatal(err)
			}
			err := redriveRun(context.Background(), o)
			_, stderr := outs()
			if code := exitCodeFor(err); code != tc.code {
				t.Fatalf("exit %d, want %d (%v); stderr:\n%s", code, tc.code, err, stderr)
			}
			if len(b.dest) != tc.moved || len(b.dlq) != 12-tc.moved {
				t.Fatalf("moved %d, dlq %d; want %d moved", len(b.dest), len(b.dlq), tc.moved)
			}
			asked := strings.Contains(stderr, "move these 12 messages? [y/N]")
			if asked != tc.asked {
				t.Fatalf("asked %v, want %v; stderr:\n%s", asked, tc.asked, stderr)
			}
			if asked && (!strings.Contains(stderr, "redrive will move 12 of 12 messages in `orders.dlq`") ||
				!strings.Contains(stderr, "queue:orders") || !strings.Contains(stderr, "sample: m00 m01 m02 m03 m04 …")) {
				t.Errorf("preview missing; stderr:\n%s", stderr)
			}
			if tc.code == ExitCancelled && b.consumed {
				t.Error("consumed after a no")
			}
		})
	}
}

func TestRedriveRunPartialAndJSON(t *testing.T) {
	b := &moveFake{dlq: fakeDead(4)}
	f, outs := moveFactory(t, b, false)
	f.Options.Output = "json"
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "queue:nowhere", format: OutputJSON, changed: func(string) bool { return false }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	err := redriveRun(context.Background(), o)
	if exitCodeFor(err) != ExitError {
		t.Fatalf("nothing moved: exit %d (%v)", exitCodeFor(err), err)
	}
	stdout, _ := outs()
	var s redrive.Summary
	if jerr := json.Unmarshal([]byte(stdout), &s); jerr != nil {
		t.Fatalf("%v: %s", jerr, stdout)
	}
	if s.Failed[redrive.ReasonUnroutable] != 4 || len(b.dlq) != 4 {
		t.Fatalf("failed %v, dlq holds %d; want %s 4, 4", s.Failed, len(b.dlq), redrive.ReasonUnroutable)
	}
}

func TestRedriveDryRunUsesPeek(t *testing.T) {
	b := &moveFake{dlq: fakeDead(3)}
	f, outs := moveFactory(t, b, false)
	f.Options.ReadOnly = true // a dry run is allowed in read-only mode
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", DryRun: true, Transform: ".body.n = 0", changed: func(string) bool { return false }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if err := redriveRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if b.consumed || !b.peeked || len(b.dlq) != 3 {
		t.Fatalf("consumed %v peeked %v", b.consumed, b.peeked)
	}
	stdout, _ := outs()
	if !strings.Contains(stdout, "would move 3") || !strings.Contains(stdout, `+     "n": 0`) {
		t.Errorf("%s", stdout)
	}
}

// TestRedriveDryRunOutOfReach: a dry run that could not see every message
// (an SQS FIFO queue shows only each group's head) says how many it missed,
// in JSON and in words, and does not count them as examined.
func TestRedriveDryRunOutOfReach(t *testing.T) {
	for _, format := range []string{"", OutputJSON} {
		t.Run("output="+format, func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(2), outOfReach: 5}
			f, outs := moveFactory(t, b, false)
			f.Options.Output = format
			o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", DryRun: true, format: format, changed: func(string) bool { return false }}
			if err := o.validate(); err != nil {
				t.Fatal(err)
			}
			if err := redriveRun(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			stdout, _ := outs()
			if format == OutputJSON {
				var s redrive.Summary
				if err := json.Unmarshal([]byte(stdout), &s); err != nil {
					t.Fatalf("%v: %s", err, stdout)
				}
				if s.Examined != 2 || s.OutOfReach != 5 {
					t.Errorf("examined %d, out_of_reach %d; want 2, 5\n%s", s.Examined, s.OutOfReach, stdout)
				}
				return
			}
			want := "would move 2 of 2 messages examined in `orders.dlq`\n5 more in held message groups could not be read, so are in no count above; the real run reaches them as their groups move on\n"
			if !strings.Contains(stdout, want) {
				t.Errorf("dry run does not give the shortfall:\n%s", testdiff.Text(want, stdout))
			}
		})
	}
}

func TestMutationsRefusedReadOnly(t *testing.T) {
	for _, args := range [][]string{
		{"redrive", "q"},
		{"discard", "q", "--id", "x", "--no-archive", "--yes"},
		{"purge", "q", "--no-archive", "--yes"},
		{"redrive", "cancel", "q"},
	} {
		_, stderr, code := runDLQ(t, append([]string{"--read-only", "--broker", "amqp://u@127.0.0.1:1/"}, args...)...)
		if code != ExitDenied || !strings.Contains(stderr, "read-only") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

func TestDiscardNeedsYesAndArchiveChoice(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"discard", "q", "--id", "a"}, "or `--no-archive`"},
		{[]string{"discard", "q", "--no-archive"}, "needs a selection"},
		{[]string{"discard", "q", "--id", "a", "--no-archive", "--archive-to", "file:///tmp/x"}, "exclude each other"},
		{[]string{"purge", "q", "--archive-to", "/tmp/x"}, "not an archive"},
	} {
		_, stderr, code := runDLQ(t, tc.args...)
		if code != ExitError || !strings.Contains(stderr, tc.err) {
			t.Errorf("%v: exit %d %q", tc.args, code, stderr)
		}
	}
	b := &moveFake{dlq: fakeDead(3)}
	f, _ := moveFactory(t, b, false)
	f.Options.Yes = false
	o := &discardOptions{f: f, Queue: "q", Select: selectFlags{IDs: []string{"m01"}}, Archive: archiveFlags{NoArchive: true}}
	if err := discardRun(context.Background(), o); err == nil || !strings.Contains(err.Error(), "pass `--yes` to run it without a terminal") {
		t.Fatalf("no tty, no --yes: %v", err)
	}
	if b.consumed {
		t.Fatal("consumed before confirmation")
	}
	f, _ = moveFactory(t, b, true) // answers "y"
	o.f = f
	if err := discardRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(b.dlq) != 2 || len(b.dest) != 0 {
		t.Fatalf("dlq %d dest %d", len(b.dlq), len(b.dest))
	}
}

func TestAuditList(t *testing.T) {
	ios, _, out, _ := Test()
	f := &Factory{IO: ios, Options: &GlobalOptions{AuditLog: filepath.Join(t.TempDir(), "a.jsonl")}, Now: time.Now}
	old := AuditRecord{Time: time.Now().Add(-48 * time.Hour), Action: "purge", Source: "old", Outcome: "ok"}
	if err := f.Audit(old); err != nil {
		t.Fatal(err)
	}
	if err := f.Audit(AuditRecord{Action: "redrive", Source: "new", Outcome: "ok", Counts: map[string]int64{"moved": 3}}); err != nil {
		t.Fatal(err)
	}
	o := &auditOptions{f: f, format: OutputTable}
	var err error
	if o.since, err = parseSince("24h", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := auditRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "redrive") || strings.Contains(s, "old") || !strings.Contains(s, "moved=3") {
		t.Fatalf("%s", s)
	}
}

// End to end on the SQS emulator: dlq redrive moves a DLQ back to its source
// (found through the RedrivePolicy scan), then a second run has nothing to
// do.
func TestRedriveSQSEndToEnd(t *testing.T) {
	env := brokertest.SQS(t)
	ctx := context.Background()
	client := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(env.Endpoint), Credentials: aws.AnonymousCredentials{}}, dlqsqs.OwnRequestBodies)
	base := brokertest.Name(t, "e2e")
	mk := func(name string, attrs map[string]string) string {
		out, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		u := aws.ToString(out.QueueUrl)
		t.Cleanup(func() { client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
		return u
	}
	dlqURL := mk(base+"-dlq", nil)
	srcURL := mk(base+"-src", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:%s-dlq","maxReceiveCount":"3"}`, base)})
	for i := 0; i < 30; i++ {
		if _, err := client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := runDLQ(t, append(sqsArgs(t), "redrive", "--yes", base+"-dlq", "-o", "json", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var s redrive.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Moved != 30 {
		t.Fatalf("moved %d, want 30", s.Moved)
	}
	got := 0
	for got < 30 {
		out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil || len(out.Messages) == 0 {
			t.Fatalf("source has %d of 30 (%v)", got, err)
		}
		for _, m := range out.Messages {
			if _, ok := m.MessageAttributes[redrive.RedriveHeader]; !ok {
				t.Errorf("no %s attribute", redrive.RedriveHeader)
			}
		}
		got += len(out.Messages)
	}
	stdout, _, code = runDLQ(t, append(sqsArgs(t), "redrive", "--yes", base+"-dlq", "--no-journal")...)
	if code != ExitOK || !strings.Contains(stdout, "moved 0 of 0") {
		t.Fatalf("second run: exit %d %s", code, stdout)
	}
}

// Moves between brokers run on one processor while any of them lasts, and
// the setting comes back after the last; GOMAXPROCS in the environment
// wins.
func TestOneProcessorWhileMoving(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set")
	}
	before := runtime.GOMAXPROCS(0)
	if before == 1 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
		before = 2
	}
	a := oneProcessor(&moveFake{})
	b := oneProcessor(&moveFake{})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d during a move, want 1", n)
	}
	a()
	a()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d while a second move lasts, want 1", n)
	}
	b()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Fatalf("GOMAXPROCS %d after the moves, want %d back", n, before)
	}
	t.Setenv("GOMAXPROCS", "2")
	oneProcessor(&moveFake{})()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Fatalf("GOMAXPROCS %d with GOMAXPROCS set, want %d", n, before)
	}
}

// A dry run's last word is true: when its read changed the queue (a
// rotation), it says what changed, and never "nothing was changed" beside
// it.
func TestRedriveDryRunSaysWhatItsReadChanged(t *testing.T) {
	for _, tc := range []struct {
		name, changed, first string
	}{
		{"read changed nothing", "", "dry run: nothing was changed"},
		{"read rotated", "rotated 3 messages to the back of the queue; order kept",
			"dry run: no message was moved, but reading the queue changed it: rotated 3 messages to the back of the queue; order kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(3), changed: tc.changed}
			f, outs := moveFactory(t, b, false)
			o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", DryRun: true, changed: func(string) bool { return false }}
			if err := o.validate(); err != nil {
				t.Fatal(err)
			}
			if err := redriveRun(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			stdout, stderr := outs()
			want := []string{tc.first, "would move 3 of 3 messages examined in `orders.dlq`", "         3  queue:orders"}
			if d := testdiff.Lines(want, strings.Split(strings.TrimSpace(stdout), "\n")); d != "" {
				t.Errorf("stdout:\n%s", d)
			}
			if tc.changed != "" && (strings.Contains(stdout+stderr, "nothing was changed") || strings.Count(stdout+stderr, tc.changed) != 1) {
				t.Errorf("the change said once, and never \"nothing was changed\"; stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}

// answerReader answers a question and notes what had happened when it was
// asked.
type answerReader struct {
	answer string
	asked  func()
	done   bool
}

func (r *answerReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	r.asked()
	return copy(p, r.answer), nil
}

// On a terminal a redrive reads its source once before it asks (the
// preview), says what that read does and did, and the run moves exactly
// the messages the preview showed: one that arrives meanwhile stays.
func TestRedriveOnTerminalReadsOnceAndMovesWhatItShowed(t *testing.T) {
	rotated := "rotated 6 messages to the back of the queue; order kept"
	b := &moveFake{dlq: fakeDead(6), changed: rotated}
	f, outs := moveFactory(t, b, true)
	peeksAsked := -1
	f.IO.In = &answerReader{answer: "y\n", asked: func() {
		peeksAsked = b.peeks
		// Arrives after the preview: it matches the filter, but was not
		// shown.
		late := fakeDead(7)[6]
		b.dlq = append(b.dlq, late)
	}}
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", Select: selectFlags{Filter: ".body.n % 2 == 0"}, changed: func(string) bool { return false }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if err := redriveRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	_, stderr := outs()
	if peeksAsked != 1 || b.peeks != 1 {
		t.Errorf("%d reads before the question, %d in all; want 1 and 1", peeksAsked, b.peeks)
	}
	var moved []string
	for _, m := range b.dest {
		moved = append(moved, m.ID)
	}
	if d := testdiff.Lines([]string{"m00", "m02", "m04"}, moved); d != "" {
		t.Errorf("moved:\n%s", d)
	}
	lines := strings.Split(stderr, "\n")
	want := []string{
		"dlq: reading `orders.dlq` to preview the redrive (rotating it: each message is republished to its back, see `dlq help peek-safety`)…",
		"redrive will move 3 of 6 messages in `orders.dlq`:",
		"         3  queue:orders",
		"  sample: m00 m02 m04",
		"left in `orders.dlq` 3:",
		"         3  filtered",
		"dlq: no message was moved yet, but reading `orders.dlq` changed it: " + rotated,
	}
	if len(lines) < len(want) {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if d := testdiff.Lines(want, lines[:len(want)]); d != "" {
		t.Errorf("stderr before the question:\n%s\nall of it:\n%s", d, stderr)
	}
	if strings.Contains(stderr, "nothing is changed") || strings.Contains(stderr, "nothing was changed") {
		t.Errorf("stderr says nothing changed beside a change:\n%s", stderr)
	}
}

// A --group that no message is in ends on one line that says what the
// read that looked for it changed, never "nothing was changed" beside it.
func TestRedriveUnknownGroupSaysWhatItsReadChanged(t *testing.T) {
	rotated := "rotated 6 messages to the back of the queue; order kept"
	b := &moveFake{dlq: fakeDead(6), changed: rotated}
	f, outs := moveFactory(t, b, true)
	o := &redriveOptions{f: f, Source: "orders.dlq", To: "origin", Select: selectFlags{Groups: groupFlag{IDs: []string{"0123456789"}}}, changed: func(string) bool { return false }}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if err := redriveRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	_, stderr := outs()
	want := []string{
		"dlq: reading `orders.dlq` once to find its failure groups and the messages they hold (rotating it: each message is republished to its back, see `dlq help peek-safety`)…",
		"no message of `orders.dlq` is in group 0123456789 (list its groups with `dlq stats orders.dlq --group-by reason`); no message was moved or removed, but reading the queue changed it: " + rotated,
	}
	if d := testdiff.Lines(want, strings.Split(strings.TrimSpace(stderr), "\n")); d != "" {
		t.Errorf("stderr:\n%s", d)
	}
	if b.peeks != 1 || b.consumed || len(b.dest) != 0 {
		t.Errorf("%d reads, consumed %t, moved %d; want 1 read and nothing moved", b.peeks, b.consumed, len(b.dest))
	}
}
