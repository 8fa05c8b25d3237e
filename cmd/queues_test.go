package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestNewCmdQueuesFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    queuesOptions
		wantErr string
	}{
		{args: nil, want: queuesOptions{Sort: "attention"}},
		{args: []string{"orders*", "--dlq-only", "--sort", "name"}, want: queuesOptions{Pattern: "orders*", DLQOnly: true, Sort: "name"}},
		{args: []string{"--sort", "size"}, wantErr: "unknown `--sort` \"size\""},
		{args: []string{"[x"}, wantErr: "malformed pattern"},
		{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		ios, _, _, _ := Test()
		f := NewFactory(ios, nil)
		var got *queuesOptions
		c := newCmdQueues(f, func(o *queuesOptions) error { got = o; return nil })
		c.SetArgs(tt.args)
		c.SetOut(ios.Out)
		c.SetErr(ios.ErrOut)
		err := c.Execute()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil {
			t.Fatalf("%v: %v (runF called: %v)", tt.args, err, got != nil)
		}
		if got.Pattern != tt.want.Pattern || got.DLQOnly != tt.want.DLQOnly || got.Sort != tt.want.Sort {
			t.Errorf("%v: pattern %q, dlq only %t, sort %q; want %q, %t, %q", tt.args, got.Pattern, got.DLQOnly, got.Sort, tt.want.Pattern, tt.want.DLQOnly, tt.want.Sort)
		}
	}
}

// fakeLister is a broker with queues; it fails the test when Queues was
// expected and never called.
type fakeLister struct {
	qs     []broker.Queue
	err    error
	calls  int
	closed bool
}

func (b *fakeLister) System() broker.System { return broker.RabbitMQ }
func (b *fakeLister) String() string        { return "amqp://ops@fake:5672/" }
func (b *fakeLister) Close() error          { b.closed = true; return nil }
func (b *fakeLister) Queues(ctx context.Context) ([]broker.Queue, error) {
	b.calls++
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("Queues called without a deadline")
	}
	return append([]broker.Queue(nil), b.qs...), b.err
}

func (b *fakeLister) verify(t *testing.T) {
	t.Helper()
	if b.calls != 1 || !b.closed {
		t.Errorf("Queues called %d times (want 1), closed %v", b.calls, b.closed)
	}
}

func i64(n int64) *int64 { return &n }

func fakeQueues() []broker.Queue {
	age := 90 * time.Minute
	capacity := 0.5
	return []broker.Queue{
		{Name: "a.work", Kind: broker.KindClassic, Depth: 500, InFlight: i64(3), Consumers: i64(2), ConsumerCapacity: &capacity, DeadLetterTarget: "a.dlx", DeadLetterQueues: []string{"a.dlq"},
			Role: broker.RoleWork, RoleSource: broker.RoleFromTopology},
		{Name: "a.dlq", Kind: broker.KindClassic, Depth: 7, InFlight: i64(0), Consumers: i64(0), IsDLQ: true, OldestAge: &age, DeadLetterSources: []string{"a.work"},
			Role: broker.RoleDLQ, RoleSource: broker.RoleFromTopology},
		{Name: "b.dlq", Kind: broker.KindQuorum, Depth: 0, IsDLQ: true, Role: broker.RoleDLQ, RoleSource: broker.RoleFromName},
		{Name: "z.dlq", Kind: broker.KindClassic, Depth: 40, IsDLQ: true, Role: broker.RoleDLQ, RoleSource: broker.RoleFromName},
	}
}

func runQueues(t *testing.T, b *fakeLister, tty bool, output string, opts queuesOptions) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := Test()
	ios.SetTTY(tty)
	ios.SetColor(tty)
	f := NewFactory(ios, nil)
	f.Options.Output = output
	f.OpenBroker = func(ctx context.Context) (broker.Broker, error) { return b, nil }
	opts.f = f
	if opts.Sort == "" {
		opts.Sort = sortAttention
	}
	err := queuesRun(context.Background(), &opts)
	return out.String(), errOut.String(), err
}

func TestQueuesRunTable(t *testing.T) {
	b := &fakeLister{qs: fakeQueues()}
	out, _, err := runQueues(t, b, false, "", queuesOptions{})
	b.verify(t)
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME    KIND     DEPTH  IN FLIGHT  CONSUMERS  CAPACITY  OLDEST  ROLE  DEAD LETTERS TO  DEAD LETTERS FROM
z.dlq   classic     40          -          -         -  -       dlq*  -                -
a.dlq   classic      7          0          0         -  1h30m   dlq   -                a.work
a.work  classic    500          3          2       50%  -       work  a.dlq            -
b.dlq   quorum       0          -          -         -  -       dlq*  -                -
`
	if d := testdiff.Text(want, out); d != "" {
		t.Errorf("table differs (-want +got):\n%s", d)
	}
}

// TestQueuesRunRoles checks the roles in every output: the * of a role
// inferred from the name and its note on stderr, JSON's role, role_source
// and is_dlq, and the CSV's columns.
func TestQueuesRunRoles(t *testing.T) {
	qs := []broker.Queue{
		{Name: "orders", Kind: broker.KindClassic, Depth: 2, DeadLetterQueues: []string{"orders.retry"}, DeadLetterSources: []string{"orders.retry"}},
		{Name: "orders.retry", Kind: broker.KindClassic, MessageTTL: 30 * time.Second, DeadLetterQueues: []string{"orders"}, DeadLetterSources: []string{"orders"}},
		{Name: "orders.dead.q", Kind: broker.KindClassic, Depth: 3},
		{Name: "terror-events", Kind: broker.KindClassic},
	}
	broker.AssignRoles(qs, nil)
	clone := func() []broker.Queue { return append([]broker.Queue(nil), qs...) }

	out, errOut, err := runQueues(t, &fakeLister{qs: clone()}, false, "", queuesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME           KIND     DEPTH  ROLE   DEAD LETTERS TO  DEAD LETTERS FROM
orders.dead.q  classic      3  dlq*   -                -
orders         classic      2  work   orders.retry     orders.retry
orders.retry   classic      0  retry  orders           orders
terror-events  classic      0  work   -                -
`
	if d := testdiff.Text(want, out); d != "" {
		t.Errorf("table differs (-want +got):\n%s", d)
	}
	if errOut != nameMarkNote+"\n" {
		t.Errorf("stderr %q, want the note on *", errOut)
	}

	out, errOut, err = runQueues(t, &fakeLister{qs: clone()}, false, "json", queuesOptions{Sort: sortName})
	if err != nil || errOut != "" {
		t.Fatalf("json: %v, stderr %q", err, errOut)
	}
	var got []queueJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	type role struct {
		Name, Role, Source string
		IsDLQ              bool
		TTL                float64
	}
	var have []role
	for _, q := range got {
		r := role{q.Name, string(q.Role), q.RoleSource, q.IsDLQ, 0}
		if q.MessageTTLSeconds != nil {
			r.TTL = *q.MessageTTLSeconds
		}
		have = append(have, r)
	}
	wantRoles := []role{
		{"orders", "work", "topology", false, 0},
		{"orders.dead.q", "dlq", "name", true, 0},
		{"orders.retry", "retry", "topology", false, 30},
		{"terror-events", "work", "default", false, 0},
	}
	if d := testdiff.JSON(t, wantRoles, have); d != "" {
		t.Errorf("json roles differ (-want +got):\n%s", d)
	}

	out, _, err = runQueues(t, &fakeLister{qs: clone()}, false, "json", queuesOptions{DLQOnly: true})
	if err != nil || !strings.Contains(out, `"name": "orders.dead.q"`) || strings.Contains(out, `"name": "orders.retry"`) {
		t.Errorf("--dlq-only shows the dlq and parking roles only: %v\n%s", err, out)
	}

	out, _, err = runQueues(t, &fakeLister{qs: clone()}, false, "csv", queuesOptions{Sort: sortName})
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasSuffix(rows[0], ",role,role_source") || rows[2] != "orders.dead.q,classic,3,,,,,,yes,,,,,,,,,,dlq,name" || !strings.HasSuffix(rows[3], ",retry,topology") {
		t.Errorf("csv:\n%s", out)
	}
}

func TestQueuesRunTTYColour(t *testing.T) {
	b := &fakeLister{qs: fakeQueues()}
	out, _, err := runQueues(t, b, true, "", queuesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "\x1b[1mNAME") || !strings.HasPrefix(lines[1], "\x1b[31mz.dlq") || !strings.HasPrefix(lines[2], "\x1b[31ma.dlq") || strings.Contains(lines[3], "\x1b[31m") || strings.Contains(lines[4], "\x1b[31m") {
		t.Errorf("colours:\n%q", out)
	}
}

func TestQueuesRunSortsAndFilters(t *testing.T) {
	names := func(out string) []string {
		var qs []queueJSON
		if err := json.Unmarshal([]byte(out), &qs); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var n []string
		for _, q := range qs {
			n = append(n, q.Name)
		}
		return n
	}
	tests := []struct {
		opts queuesOptions
		want string
	}{
		{queuesOptions{}, "z.dlq a.dlq a.work b.dlq"},
		{queuesOptions{Sort: sortName}, "a.dlq a.work b.dlq z.dlq"},
		{queuesOptions{Sort: sortDepth}, "a.work z.dlq a.dlq b.dlq"},
		{queuesOptions{DLQOnly: true}, "z.dlq a.dlq b.dlq"},
		{queuesOptions{Pattern: "a.*"}, "a.dlq a.work"},
		{queuesOptions{Pattern: "dlq", Sort: sortName}, "a.dlq b.dlq z.dlq"},
	}
	for _, tt := range tests {
		out, _, err := runQueues(t, &fakeLister{qs: fakeQueues()}, false, "json", tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(out), " "); got != tt.want {
			t.Errorf("pattern %q, dlq only %t, sort %q: %s, want %s", tt.opts.Pattern, tt.opts.DLQOnly, tt.opts.Sort, got, tt.want)
		}
	}
	out, _, _ := runQueues(t, &fakeLister{qs: fakeQueues()}, false, "json", queuesOptions{Pattern: "a.dlq"})
	if !strings.Contains(out, `"oldest_age_seconds": 5400`) || !strings.Contains(out, `"in_flight": 0`) {
		t.Errorf("json fields:\n%s", out)
	}
}

func TestQueuesRunEmptyAndErrors(t *testing.T) {
	out, errOut, err := runQueues(t, &fakeLister{}, false, "", queuesOptions{DLQOnly: true})
	if err != nil || out != "" || errOut != "no dead-letter queues on amqp://ops@fake:5672/\n" {
		t.Errorf("empty: %v %q %q", err, out, errOut)
	}
	out, _, err = runQueues(t, &fakeLister{}, false, "json", queuesOptions{})
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty json: %q %v", out, err)
	}
	b := &fakeLister{err: broker.Errorf(broker.ErrAccessDenied, "list queues", "user lacks the monitoring tag")}
	_, _, err = runQueues(t, b, false, "", queuesOptions{})
	b.verify(t)
	if exitCodeFor(err) != ExitDenied {
		t.Errorf("access denied: exit %d (%v)", exitCodeFor(err), err)
	}
	_, _, err = runQueues(t, &fakeLister{}, false, "prom", queuesOptions{})
	if err == nil || !strings.Contains(err.Error(), "use one of table, json, csv") {
		t.Errorf("bad output: %v", err)
	}
}

func TestSpanAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m",
		3*time.Hour + 5*time.Minute: "3h05m", 50 * time.Hour: "2d02h",
	} {
		if got := spanAge(d); got != want {
			t.Errorf("spanAge(%v) = %q, want %q", d, got, want)
		}
	}
}

// quorumQueues are a 4.x cluster's quorum queues: healthy, a member down
// and dropping, and without a leader.
func quorumQueues() []broker.Queue {
	all := []string{"rabbit@rmq-1.prod.example.com", "rabbit@rmq-2.prod.example.com", "rabbit@rmq-3.prod.example.com"}
	qs := []broker.Queue{
		{Name: "orders", Kind: broker.KindQuorum, Depth: 5, Leader: all[0], Members: all, Online: all, DeadLetterTarget: "dlx", DeadLetterQueues: []string{"orders.dlq"}, DeliveryLimit: 20, DeliveryLimitDefault: true},
		{Name: "payments", Kind: broker.KindQuorum, Depth: 2, Leader: all[1], Members: all, Online: all[:2], DeliveryLimit: 20, DeliveryLimitDefault: true, DropsAfter: 20},
		{Name: "stuck", Kind: broker.KindQuorum, Depth: 0, Leader: all[2], Members: all, Online: all[:1], DeliveryLimit: 5, DropsAfter: 5},
		{Name: "plain", Kind: broker.KindClassic, Depth: 1},
	}
	broker.AssignRoles(qs, nil)
	return qs
}

func TestQueuesRunMembersAndDrops(t *testing.T) {
	out, errOut, err := runQueues(t, &fakeLister{qs: quorumQueues()}, false, "", queuesOptions{Sort: sortName})
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME      KIND     DEPTH  ROLE  DEAD LETTERS TO  MEMBERS         NOTES
orders    quorum       5  work  orders.dlq       3/3 lead rmq-1
payments  quorum       2  work  -                2/3 lead rmq-2  down: rmq-3; DROPS after 20 deliveries (no dead-letter exchange, 4.x default limit)
plain     classic      1  work  -                -
stuck     quorum       0  work  -                1/3 no leader   down: rmq-2,rmq-3; no quorum: unavailable; DROPS after 5 deliveries (no dead-letter exchange)
`
	if out != want {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
	if !strings.HasPrefix(errOut, "warning: quorum queues `payments`, `stuck` have no dead-letter exchange and drop a message without a trace once it passes its delivery limit:") ||
		!strings.Contains(errOut, "delivery-limit -1") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr: %q", errOut)
	}

	out, _, err = runQueues(t, &fakeLister{qs: quorumQueues()}, true, "", queuesOptions{Sort: sortName})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if strings.Contains(lines[1], "\x1b[33m") || !strings.HasPrefix(lines[2], "\x1b[33mpayments") || !strings.HasPrefix(lines[4], "\x1b[33mstuck") {
		t.Errorf("queues with members down or drops are yellow:\n%q", out)
	}

	out, _, err = runQueues(t, &fakeLister{qs: quorumQueues()}, false, "json", queuesOptions{Sort: sortName})
	if err != nil {
		t.Fatal(err)
	}
	var qs []queueJSON
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		t.Fatal(err)
	}
	p := qs[1]
	if p.Leader != "rabbit@rmq-2.prod.example.com" || len(p.Members) != 3 || len(p.Online) != 2 || p.DropsAfter != 20 || !p.DeliveryLimitDefault || p.DeliveryLimit != 20 {
		t.Errorf("json (-want +got):\n%s", testdiff.Diff(
			[]any{"rabbit@rmq-2.prod.example.com", 3, 2, int64(20), true, int64(20)},
			[]any{p.Leader, len(p.Members), len(p.Online), p.DropsAfter, p.DeliveryLimitDefault, p.DeliveryLimit}))
	}
	if !strings.Contains(out, `"drops_after": 20`) || !strings.Contains(out, `"leader": "rabbit@rmq-2.prod.example.com"`) || strings.Contains(qs[2].Leader, "@") {
		t.Errorf("json fields:\n%s", out)
	}

	out, _, err = runQueues(t, &fakeLister{qs: quorumQueues()}, false, "csv", queuesOptions{Sort: sortName})
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasSuffix(rows[0], ",leader,members,online,delivery_limit,drops_after,role,role_source") ||
		!strings.HasSuffix(rows[2], ",rabbit@rmq-2.prod.example.com,rabbit@rmq-1.prod.example.com;rabbit@rmq-2.prod.example.com;rabbit@rmq-3.prod.example.com,rabbit@rmq-1.prod.example.com;rabbit@rmq-2.prod.example.com,20,20,work,default") {
		t.Errorf("csv:\n%s", out)
	}

	// Without a drop there is no warning.
	_, errOut, _ = runQueues(t, &fakeLister{qs: fakeQueues()}, false, "", queuesOptions{})
	if errOut != nameMarkNote+"\n" {
		t.Errorf("stderr without drops: %q", errOut)
	}
	one := quorumQueues()[1:2]
	_, errOut, _ = runQueues(t, &fakeLister{qs: one}, false, "json", queuesOptions{})
	if !strings.HasPrefix(errOut, "warning: quorum queue `payments` has no dead-letter exchange and drops a message without a trace once it passes RabbitMQ 4.x's default delivery limit of 20: give it") {
		t.Errorf("stderr for one queue: %q", errOut)
	}
}

func TestNodeNamer(t *testing.T) {
	q := func(members ...string) broker.Queue { return broker.Queue{Members: members, Leader: members[0]} }
	tests := []struct {
		qs   []broker.Queue
		name string
		want string
	}{
		{[]broker.Queue{q("n1@localhost", "n2@localhost")}, "n2@localhost", "n2"},
		{[]broker.Queue{q("rabbit@rmq-1.x.com", "rabbit@rmq-2.x.com")}, "rabbit@rmq-2.x.com", "rmq-2"},
		{[]broker.Queue{q("rabbit@a.one.com", "rabbit@a.two.com")}, "rabbit@a.two.com", "rabbit@a.two.com"},
		{[]broker.Queue{q("solo")}, "solo", "solo"},
	}
	for _, tt := range tests {
		if got := nodeNamer(tt.qs)(tt.name); got != tt.want {
			t.Errorf("short(%q) among %v = %q, want %q", tt.name, tt.qs[0].Members, got, tt.want)
		}
	}
}

// TestAcceptanceQueuesCluster: `dlq queues` against the three-node cluster,
// given as hosts in the URL and one management URL per node, shows a
// quorum queue's members and leader and flags the 4.x silent drop.
func TestAcceptanceQueuesCluster(t *testing.T) {
	env := brokertest.Cluster(t)
	var hosts []string
	for _, raw := range env.AMQPURLs {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
	}
	multi, _ := url.Parse(env.AMQPURLs[0])
	multi.Host = strings.Join(hosts, ",")
	conn, err := amqp.Dial(env.AMQPURLs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	qq := brokertest.Name(t, "qq")
	if _, err := ch.QueueDeclare(qq, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	defer ch.QueueDelete(qq, false, false, false)
	args := []string{"queues", "--broker", multi.String(), "--management-url", strings.Join(env.MgmtURLs, ","), qq}
	var stdout, stderr string
	var code ExitCode
	deadline := time.Now().Add(time.Minute)
	for {
		stdout, stderr, code = runDLQ(t, append(args, "-o", "json")...)
		qs := decodeQueues(t, stdout)
		if code == ExitOK && len(qs) == 1 && len(qs[0].Online) == 3 {
			q := qs[0]
			if len(q.Members) != 3 || !slices.Contains(q.Members, q.Leader) || q.DropsAfter != 20 || !q.DeliveryLimitDefault {
				t.Errorf("json: leader %q, members %q, drops after %d, limit default %t; want one of 3 members, 20, true", q.Leader, q.Members, q.DropsAfter, q.DeliveryLimitDefault)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exit %d, %s\n%s", code, stderr, stdout)
		}
		time.Sleep(250 * time.Millisecond)
	}
	stdout, stderr, code = runDLQ(t, args...)
	if code != ExitOK || !strings.Contains(stdout, "3/3 lead dlqcluster") || !strings.Contains(stdout, "DROPS after 20 deliveries (no dead-letter exchange, 4.x default limit)") {
		t.Errorf("table (exit %d):\n%s", code, stdout)
	}
	if !strings.HasPrefix(stderr, "warning: quorum queue `"+qq+"` has no dead-letter exchange") {
		t.Errorf("stderr: %q", stderr)
	}
}
