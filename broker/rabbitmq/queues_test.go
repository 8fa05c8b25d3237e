package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestResolveDeadLetters(t *testing.T) {
	qs := []broker.Queue{
		{Name: "orders"}, {Name: "orders.dlq"}, {Name: "payments"}, {Name: "all.dead.1"}, {Name: "all.dead.2"},
		{Name: "shipments"}, {Name: "shipments.dlq"}, {Name: "invoices"}, {Name: "invoices.parking"}, {Name: "retry.dlq"},
	}
	dls := make([]deadLetter, len(qs))
	dls[0] = deadLetter{DeadLetterSet: true, DeadLetterExchange: "dlx", DeadLetterRoutingKey: "orders.dead", HasRoutingKey: true} // direct, explicit key
	dls[2] = deadLetter{DeadLetterSet: true, DeadLetterExchange: "fan"}                                                           // fanout: all bound
	dls[5] = deadLetter{DeadLetterSet: true, DeadLetterExchange: "", DeadLetterRoutingKey: "shipments.dlq", HasRoutingKey: true}  // default exchange
	dls[7] = deadLetter{DeadLetterSet: true, DeadLetterExchange: "topic-dlx"}                                                     // topic, keys from source bindings
	bindings := []mgmtBinding{
		{Source: "dlx", Destination: "orders.dlq", DestinationType: "queue", RoutingKey: "orders.dead"},
		{Source: "dlx", Destination: "retry.dlq", DestinationType: "queue", RoutingKey: "other"},
		{Source: "fan", Destination: "all.dead.1", DestinationType: "queue"},
		{Source: "fan", Destination: "hop", DestinationType: "exchange"},
		{Source: "hop", Destination: "all.dead.2", DestinationType: "queue"},
		{Source: "app", Destination: "invoices", DestinationType: "queue", RoutingKey: "invoice.created"},
		{Source: "", Destination: "invoices", DestinationType: "queue", RoutingKey: "invoices"},
		{Source: "topic-dlx", Destination: "invoices.parking", DestinationType: "queue", RoutingKey: "invoice.#"},
		{Source: "topic-dlx", Destination: "retry.dlq", DestinationType: "queue", RoutingKey: "payment.#"},
	}
	exchanges := []mgmtExchange{{"dlx", "direct"}, {"fan", "fanout"}, {"hop", "fanout"}, {"topic-dlx", "topic"}, {"app", "topic"}}
	resolveDeadLetters(qs, dls, bindings, exchanges)
	want := map[string]struct {
		dlqs, sources []string
		isDLQ         bool
	}{
		"orders":           {dlqs: []string{"orders.dlq"}},
		"orders.dlq":       {sources: []string{"orders"}, isDLQ: true},
		"payments":         {dlqs: []string{"all.dead.1", "all.dead.2"}},
		"all.dead.1":       {sources: []string{"payments"}, isDLQ: true},
		"all.dead.2":       {sources: []string{"payments"}, isDLQ: true},
		"shipments":        {dlqs: []string{"shipments.dlq"}},
		"shipments.dlq":    {sources: []string{"shipments"}, isDLQ: true},
		"invoices":         {dlqs: []string{"invoices.parking"}},
		"invoices.parking": {sources: []string{"invoices"}, isDLQ: true},
		"retry.dlq":        {isDLQ: true}, // by its name only
	}
	for _, q := range qs {
		w := want[q.Name]
		if !reflect.DeepEqual(q.DeadLetterQueues, w.dlqs) || !reflect.DeepEqual(q.DeadLetterSources, w.sources) || q.IsDLQ != w.isDLQ {
			t.Errorf("%s: dlqs %v sources %v isDLQ %v; want %v %v %v", q.Name, q.DeadLetterQueues, q.DeadLetterSources, q.IsDLQ, w.dlqs, w.sources, w.isDLQ)
		}
	}
}

func TestQueuesIntegration(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	dlx := brokertest.Name(t, "dlx")
	src := brokertest.Name(t, "src")
	dlq := brokertest.Name(t, "dlq")
	pol := brokertest.Name(t, "pol")
	qq := brokertest.Name(t, "qq")
	st := brokertest.Name(t, "st")
	declareExchange(t, b, dlx, "direct")
	declareQueue(t, b, dlq, nil)
	bindQueue(t, b, dlq, "dead", dlx)
	declareQueue(t, b, src, amqp.Table{"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": "dead"})
	declareQueue(t, b, pol, nil)
	setPolicy(t, b, pol, pol, map[string]any{"dead-letter-exchange": dlx, "dead-letter-routing-key": "dead"})
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(3)})
	declareQueue(t, b, st, amqp.Table{"x-queue-type": "stream"})
	publishN(t, b, src, "m", 3, nil)

	// The management API applies policies and statistics asynchronously.
	var byName map[string]broker.Queue
	deadline := time.Now().Add(time.Minute)
	for {
		qs, err := b.Queues(ctx)
		if err != nil {
			t.Fatalf("Queues: %v", err)
		}
		byName = map[string]broker.Queue{}
		for _, q := range qs {
			byName[q.Name] = q
		}
		if byName[pol].Policy == pol && byName[src].Depth == 3 && byName[src].Consumers != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues never showed the policy and depth: %s policy %q; %s depth %d, consumers known %t", pol, byName[pol].Policy, src, byName[src].Depth, byName[src].Consumers != nil)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s := byName[src]
	if s.Kind != broker.KindClassic || s.DeadLetterTarget != dlx || s.DeadLetterRoutingKey != "dead" ||
		!reflect.DeepEqual(s.DeadLetterQueues, []string{dlq}) || !s.Durable || s.Vhost != "/" || s.System != broker.RabbitMQ {
		t.Errorf("source queue (-want +got):\n%s", testdiff.Diff(
			[]any{broker.KindClassic, dlx, "dead", []string{dlq}, true, "/", broker.RabbitMQ},
			[]any{s.Kind, s.DeadLetterTarget, s.DeadLetterRoutingKey, s.DeadLetterQueues, s.Durable, s.Vhost, s.System}))
	}
	if s.Arguments["x-dead-letter-exchange"] != dlx {
		t.Errorf("arguments %v", s.Arguments)
	}
	p := byName[pol]
	if p.DeadLetterTarget != dlx || !reflect.DeepEqual(p.DeadLetterQueues, []string{dlq}) {
		t.Errorf("policy-configured queue: dead-letter target %q, dead-letter queues %q; want %s, [%s]", p.DeadLetterTarget, p.DeadLetterQueues, dlx, dlq)
	}
	d := byName[dlq]
	if !d.IsDLQ || !reflect.DeepEqual(d.DeadLetterSources, []string{pol, src}) {
		t.Errorf("dead-letter queue: sources %v isDLQ %v, want [%s %s]", d.DeadLetterSources, d.IsDLQ, pol, src)
	}
	q := byName[qq]
	if q.Kind != broker.KindQuorum || q.DeliveryLimit != 3 {
		t.Errorf("quorum queue: kind %s limit %d", q.Kind, q.DeliveryLimit)
	}
	if byName[st].Kind != broker.KindStream {
		t.Errorf("stream kind %s", byName[st].Kind)
	}

	one, err := b.Queue(ctx, dlq)
	if err != nil {
		t.Fatalf("Queue: %v", err)
	}
	if !one.IsDLQ || !reflect.DeepEqual(one.DeadLetterSources, []string{pol, src}) {
		t.Errorf("Queue(%s): dlq %t, dead-letter sources %q; want true, [%s %s]", dlq, one.IsDLQ, one.DeadLetterSources, pol, src)
	}
	srcQ, err := b.Queue(ctx, src)
	if err != nil || srcQ.Depth != 3 {
		t.Errorf("Queue(%s): depth %d, %v", src, srcQ.Depth, err)
	}

	_, err = b.Queue(ctx, "dlqt-no-such-queue")
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "`dlqt-no-such-queue` not found on vhost `/`") ||
		!strings.Contains(err.Error(), "dlq queues") {
		t.Errorf("missing queue: %v", err)
	}
}

// TestQueuesExactDepth checks that the listing's depth is the queue's own
// count at once: a quorum queue's statistics still read 0 seconds after it
// filled (and the old count after it drained).
func TestQueuesExactDepth(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	qq := brokertest.Name(t, "qq")
	cl := brokertest.Name(t, "cl")
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum"})
	declareQueue(t, b, cl, nil)
	depths := func() (int64, int64) {
		t.Helper()
		qs, err := b.Queues(ctx)
		if err != nil {
			t.Fatalf("Queues: %v", err)
		}
		got := map[string]int64{}
		for _, q := range qs {
			got[q.Name] = q.Depth
		}
		return got[qq], got[cl]
	}
	publishN(t, b, qq, "q", 7, nil)
	publishN(t, b, cl, "c", 5, nil)
	if q, c := depths(); q != 7 || c != 5 {
		t.Errorf("depths right after publishing: quorum %d classic %d, want 7 and 5", q, c)
	}
	if one, err := b.Queue(ctx, qq); err != nil || one.Depth != 7 {
		t.Errorf("Queue(%s): depth %d, %v; want 7", qq, one.Depth, err)
	}
	drainIDs(t, b, qq)
	if q, _ := depths(); q != 0 {
		t.Errorf("quorum depth right after draining: %d, want 0", q)
	}
}

func TestToQueueQuorumLimitsAndMembers(t *testing.T) {
	b := &Broker{vhost: "/"}
	n := func(s string) *int64 { v, _ := strconv.ParseInt(s, 10, 64); return &v }
	tests := []struct {
		name            string
		m               mgmtQueue
		major           int
		limit, drops    int64
		isDefault       bool
		leader          string
		members, online []string
	}{
		{name: "3.x quorum without limit", m: mgmtQueue{Type: "quorum"}, major: 3},
		{name: "4.x quorum without limit or dlx drops after 20", m: mgmtQueue{Type: "quorum"}, major: 4, limit: 20, drops: 20, isDefault: true},
		{name: "4.x quorum with a dlx", m: mgmtQueue{Type: "quorum", Arguments: map[string]any{"x-dead-letter-exchange": "dlx"}}, major: 4, limit: 20, isDefault: true},
		{name: "4.x quorum with a dlx by policy", m: mgmtQueue{Type: "quorum", EffectivePolicyDefinition: map[string]any{"dead-letter-exchange": ""}}, major: 4, limit: 20, isDefault: true},
		{name: "4.x limit turned off", m: mgmtQueue{Type: "quorum", Arguments: map[string]any{"x-delivery-limit": int64(-1)}}, major: 4},
		{name: "explicit limit without dlx", m: mgmtQueue{Type: "quorum", Arguments: map[string]any{"x-delivery-limit": int64(5)}}, major: 3, limit: 5, drops: 5},
		{name: "unknown version", m: mgmtQueue{Type: "quorum"}, major: 0},
		{name: "classic on 4.x", m: mgmtQueue{Type: "classic", Messages: n("1")}, major: 4},
		{name: "members", m: mgmtQueue{Type: "quorum", Leader: "r2@h", Members: []string{"r3@h", "r1@h", "r2@h"}, Online: []string{"r2@h", "r1@h"}},
			major: 3, leader: "r2@h", members: []string{"r1@h", "r2@h", "r3@h"}, online: []string{"r1@h", "r2@h"}},
		{name: "no member online", m: mgmtQueue{Type: "quorum", Leader: "r2@h", Members: []string{"r1@h"}, Online: nil},
			major: 3, leader: "r2@h", members: []string{"r1@h"}, online: []string{}},
	}
	for _, tt := range tests {
		q, _ := b.toQueue(&tt.m, tt.major)
		if q.DeliveryLimit != tt.limit || q.DropsAfter != tt.drops || q.DeliveryLimitDefault != tt.isDefault {
			t.Errorf("%s: limit %d drops %d default %v; want %d %d %v", tt.name, q.DeliveryLimit, q.DropsAfter, q.DeliveryLimitDefault, tt.limit, tt.drops, tt.isDefault)
		}
		if q.Leader != tt.leader || !reflect.DeepEqual(q.Members, tt.members) || !reflect.DeepEqual(q.Online, tt.online) {
			t.Errorf("%s: leader %q members %q online %q", tt.name, q.Leader, q.Members, q.Online)
		}
	}
}

// TestQueuesQuorumMembership: quorum queues list their members, leader and
// online members; on RabbitMQ 4.x a quorum queue without a delivery limit
// has the default of 20, and without a dead-letter target it drops.
func TestQueuesQuorumMembership(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	major := b.serverMajor(ctx)
	dlx := brokertest.Name(t, "dlx")
	plain := brokertest.Name(t, "plain")
	withDLX := brokertest.Name(t, "withdlx")
	limited := brokertest.Name(t, "limited")
	byPolicy := brokertest.Name(t, "bypolicy")
	declareExchange(t, b, dlx, "fanout")
	declareQueue(t, b, plain, amqp.Table{"x-queue-type": "quorum"})
	declareQueue(t, b, withDLX, amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": dlx})
	declareQueue(t, b, limited, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(5)})
	declareQueue(t, b, byPolicy, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(5)})
	setPolicy(t, b, byPolicy, byPolicy, map[string]any{"delivery-limit": 3, "dead-letter-exchange": dlx})
	var byName map[string]broker.Queue
	deadline := time.Now().Add(time.Minute)
	for {
		qs, err := b.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName = map[string]broker.Queue{}
		for _, q := range qs {
			byName[q.Name] = q
		}
		if byName[byPolicy].Policy == byPolicy && byName[plain].Leader != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy and leader never showed: %s policy %q, %s leader %q", byPolicy, byName[byPolicy].Policy, plain, byName[plain].Leader)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p := byName[plain]
	if len(p.Members) == 0 || !slices.Contains(p.Members, p.Leader) || !reflect.DeepEqual(p.Online, p.Members) {
		t.Errorf("membership of %s: leader %q members %q online %q", plain, p.Leader, p.Members, p.Online)
	}
	if major >= 4 {
		if p.DeliveryLimit != 20 || !p.DeliveryLimitDefault || p.DropsAfter != 20 {
			t.Errorf("RabbitMQ %d: quorum queue without limit or dlx: limit %d default %v drops %d; want 20, true, 20", major, p.DeliveryLimit, p.DeliveryLimitDefault, p.DropsAfter)
		}
		if q := byName[withDLX]; q.DeliveryLimit != 20 || q.DropsAfter != 0 {
			t.Errorf("quorum queue with a dlx: limit %d drops %d", q.DeliveryLimit, q.DropsAfter)
		}
	} else if p.DeliveryLimit != 0 || p.DropsAfter != 0 || p.DeliveryLimitDefault {
		t.Errorf("RabbitMQ %d: quorum queue without limit: limit %d, drops %d, default %t; want 0, 0, false", major, p.DeliveryLimit, p.DropsAfter, p.DeliveryLimitDefault)
	}
	if q := byName[limited]; q.DeliveryLimit != 5 || q.DropsAfter != 5 || q.DeliveryLimitDefault {
		t.Errorf("quorum queue with a limit and no dlx: limit %d drops %d", q.DeliveryLimit, q.DropsAfter)
	}
	if q := byName[byPolicy]; q.DeliveryLimit != 3 || q.DropsAfter != 0 {
		t.Errorf("argument 5 and policy 3: limit %d (want the lower, 3), drops %d", q.DeliveryLimit, q.DropsAfter)
	}
	if one, err := b.Queue(ctx, plain); err != nil || one.Leader != p.Leader || one.DropsAfter != p.DropsAfter {
		t.Errorf("Queue(%s): leader %q, drops %d, %v; want %q, %d as listed", plain, one.Leader, one.DropsAfter, err, p.Leader, p.DropsAfter)
	}
	if major >= 4 {
		off := brokertest.Name(t, "off")
		declareQueue(t, b, off, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(-1)})
		if q, err := b.Queue(ctx, off); err != nil || q.DeliveryLimit != 0 || q.DropsAfter != 0 {
			t.Errorf("x-delivery-limit -1: limit %d, drops %d, %v; want 0, 0", q.DeliveryLimit, q.DropsAfter, err)
		}
	}
}

// TestQueueRolesLadder declares a TTL retry ladder as applications do, by
// policy and by arguments, with quorum and classic queues, next to a plain
// DLQ pair, and checks every queue's role.
func TestQueueRolesLadder(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	base := brokertest.Name(t, "ladder")
	work, retry, retry2, dead := base+".work", base+".retry", base+".retry.1m", base+".dead"
	wx, rx := base+".work.x", base+".retry.x"
	src, held, dlx := base+"-src", base+"-held", base+"-dlx"
	terror := base + "-terror-events"
	declareExchange(t, b, wx, "direct")
	declareExchange(t, b, rx, "direct")
	declareExchange(t, b, dlx, "fanout")

	// The work queue (quorum) dead-letters into the first tier by policy.
	declareQueue(t, b, work, amqp.Table{"x-queue-type": "quorum"})
	bindQueue(t, b, work, "work", wx)
	setPolicy(t, b, work, work, map[string]any{"dead-letter-exchange": rx, "dead-letter-routing-key": "retry"})
	// Tier 1: TTL and dead-letter exchange by arguments, back to work.
	declareQueue(t, b, retry, amqp.Table{"x-message-ttl": int32(30000), "x-dead-letter-exchange": wx, "x-dead-letter-routing-key": "work"})
	bindQueue(t, b, retry, "retry", rx)
	// Tier 2 (quorum): TTL and dead-letter exchange by policy; the
	// application publishes to it.
	declareQueue(t, b, retry2, amqp.Table{"x-queue-type": "quorum"})
	bindQueue(t, b, retry2, "retry2", rx)
	setPolicy(t, b, retry2, retry2, map[string]any{"message-ttl": 60000, "dead-letter-exchange": wx, "dead-letter-routing-key": "work"})
	// The dead queue the application publishes to itself.
	declareQueue(t, b, dead, nil)
	// A plain pair whose DLQ has no telling name, and a false positive.
	declareQueue(t, b, held, nil)
	bindQueue(t, b, held, "", dlx)
	declareQueue(t, b, src, amqp.Table{"x-dead-letter-exchange": dlx})
	declareQueue(t, b, terror, nil)

	want := map[string]string{
		work:   "work/topology dlq=false",
		retry:  "retry/topology dlq=false",
		retry2: "retry/topology dlq=false",
		dead:   "dlq/name dlq=true",
		src:    "work/topology dlq=false",
		held:   "dlq/topology dlq=true",
		terror: "work/default dlq=false",
	}
	roles := func(qs []broker.Queue) map[string]string {
		got := map[string]string{}
		for _, q := range qs {
			if _, ok := want[q.Name]; ok {
				got[q.Name] = fmt.Sprintf("%s/%s dlq=%v", q.Role, q.RoleSource, q.IsDLQ)
			}
		}
		return got
	}
	// The management API applies policies a moment after they are set.
	var got map[string]string
	var qs []broker.Queue
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		qs, err = b.Queues(ctx)
		if err != nil {
			t.Fatalf("Queues: %v", err)
		}
		got = roles(qs)
		if reflect.DeepEqual(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %s, want %s", strings.TrimPrefix(name, base), got[name], w)
		}
	}
	for _, q := range qs {
		switch q.Name {
		case retry:
			if q.MessageTTL != 30*time.Second {
				t.Errorf("tier 1 message TTL %v, want 30s", q.MessageTTL)
			}
		case retry2:
			if q.MessageTTL != time.Minute {
				t.Errorf("tier 2 message TTL (policy) %v, want 1m", q.MessageTTL)
			}
		}
	}
	// Describing one queue gives it the same role.
	one, err := b.Queue(ctx, retry)
	if err != nil || one.Role != broker.RoleRetry || one.IsDLQ {
		t.Errorf("Queue(%s): role %s is_dlq %v, %v", retry, one.Role, one.IsDLQ, err)
	}
}

// TestManagementAPIThatNeverKnowsAQueue: a management API that does not
// know a queue AMQP finds (a management URL of another cluster) fails
// after mgmtLag with an error that names the management URL and the
// setting to check, not "queue not found". Here a proxy in front of the
// real API hides the queue.
func TestManagementAPIThatNeverKnowsAQueue(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	defer func(d time.Duration) { mgmtLag = d }(mgmtLag)
	mgmtLag = 500 * time.Millisecond
	b, _ := openTest(t)
	hidden := brokertest.Name(t, "hidden")
	declareQueue(t, b, hidden, nil)

	target, err := url.Parse(env.MgmtURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/api/queues/") && strings.HasSuffix(r.URL.EscapedPath(), "/"+url.PathEscape(hidden)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"Object Not Found","reason":"Not Found"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	mgmt := withURL(t, srv.URL, func(u *url.URL) {
		if tu, _ := url.Parse(env.MgmtURL); tu.User != nil {
			u.User = tu.User
		}
	})
	pb, err := Open(context.Background(), Config{URL: env.AMQPURL, ManagementURL: mgmt, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	for name, call := range map[string]func() error{
		"Queue": func() error { _, err := pb.Queue(context.Background(), hidden); return err },
		"Peek": func() error {
			_, err := pb.Peek(context.Background(), hidden, broker.PeekOptions{Limit: 1}, func(*broker.Message) error { return nil })
			return err
		},
	} {
		err := call()
		if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "exists on the broker but its management API ("+srv.URL) ||
			!strings.Contains(err.Error(), "`management-url`") || strings.Contains(err.Error(), "check the queue name") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestToQueueOverflow: the overflow behaviour that applies when a queue's
// argument and its policy disagree is the argument's on a classic queue
// and the policy's on a quorum queue, as RabbitMQ resolves it.
func TestToQueueOverflow(t *testing.T) {
	b := &Broker{vhost: "/"}
	args := map[string]any{"x-max-length": int64(3), "x-overflow": "reject-publish"}
	pol := map[string]any{"overflow": "drop-head"}
	for _, tc := range []struct{ typ, want string }{{"classic", "reject-publish"}, {"quorum", "drop-head"}} {
		q, _ := b.toQueue(&mgmtQueue{Type: tc.typ, Arguments: args, EffectivePolicyDefinition: pol}, 4)
		if q.Overflow != tc.want || q.MaxLength == nil || *q.MaxLength != 3 {
			t.Errorf("%s queue: overflow %q max length %v, want %q and 3", tc.typ, q.Overflow, q.MaxLength, tc.want)
		}
	}
}
