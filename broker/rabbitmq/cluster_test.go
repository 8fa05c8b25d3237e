package rabbitmq

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// Tests against the three-node RabbitMQ cluster (brokertest.Cluster; 4.3
// in `make test`):
// quorum membership, and failover when the node in use dies.

// clusterConfig is a Config listing every node of the cluster: the hosts in
// one URL and the management URLs paired by position.
func clusterConfig(t *testing.T, env brokertest.ClusterEnv) Config {
	t.Helper()
	var hosts []string
	for _, raw := range env.AMQPURLs {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
	}
	multi := withURL(t, env.AMQPURLs[0], func(u *url.URL) { u.Host = strings.Join(hosts, ",") })
	return Config{URL: multi, ManagementURL: strings.Join(env.MgmtURLs, ","), Timeout: 10 * time.Second}
}

func openCluster(t *testing.T) (*Broker, brokertest.ClusterEnv) {
	t.Helper()
	env := brokertest.Cluster(t)
	b, err := Open(context.Background(), clusterConfig(t, env))
	if err != nil {
		t.Fatalf("open %s: %v", env, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, env
}

// waitQueue polls the listing until ok accepts the queue.
func waitQueue(t *testing.T, b *Broker, name string, within time.Duration, ok func(q broker.Queue) bool) broker.Queue {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		q, err := b.Queue(context.Background(), name)
		if err == nil && ok(q) {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s never became as expected: depth %d, leader %q, members %q, online %q, limit %d (%v)", name, q.Depth, q.Leader, q.Members, q.Online, q.DeliveryLimit, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestClusterQuorumMembership(t *testing.T) {
	b, env := openCluster(t)
	qq := brokertest.Name(t, "qq")
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum"})
	q := waitQueue(t, b, qq, 20*time.Second, func(q broker.Queue) bool { return len(q.Online) == len(env.Nodes) })
	if !slices.Equal(q.Members, env.Nodes) || !slices.Contains(q.Members, q.Leader) {
		t.Errorf("members %q leader %q, want the cluster's nodes %q", q.Members, q.Leader, env.Nodes)
	}
	if q.DeliveryLimit != 20 || !q.DeliveryLimitDefault || q.DropsAfter != 20 {
		t.Errorf("RabbitMQ %s quorum queue without limit or dlx: limit %d default %v drops %d", env.Version, q.DeliveryLimit, q.DeliveryLimitDefault, q.DropsAfter)
	}
	qs, err := b.Queues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range qs {
		if l.Name == qq && (l.Leader != q.Leader || len(l.Members) != 3) {
			t.Errorf("listing: leader %q, members %q; want %q, three", l.Leader, l.Members, q.Leader)
		}
	}
}

// TestClusterFailover kills the node dlq is connected to: the next call
// reconnects to another node, the management API follows it, the queue
// shows the member down, and a peek still reads every message.
func TestClusterFailover(t *testing.T) {
	b, env := openCluster(t)
	ctx := context.Background()
	qq := brokertest.Name(t, "qq")
	dlx := brokertest.Name(t, "dlx")
	declareExchange(t, b, dlx, "fanout")
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": dlx})
	publishN(t, b, qq, "m", 10, nil)
	waitQueue(t, b, qq, 20*time.Second, func(q broker.Queue) bool { return len(q.Online) == 3 && q.Depth == 10 })

	used := slices.Index(b.Nodes(), b.Node())
	if used < 0 {
		t.Fatalf("node in use %s is not among %q", b.Node(), b.Nodes())
	}
	killed := used + 1 // cluster nodes are numbered from 1
	lost := b.Node()
	t.Cleanup(func() { env.StartNode(t, killed) })
	env.KillNode(t, killed)
	t.Logf("killed node %d (%s, %s)", killed, env.Nodes[used], lost)

	qs, err := b.Queues(ctx)
	if err != nil {
		t.Fatalf("queues after the node in use died: %v", err)
	}
	if b.Node() == lost || b.ManagementURL() == strings.TrimSuffix(env.MgmtURLs[used], "/") {
		t.Errorf("still on node %s (%s)", b.Node(), b.ManagementURL())
	}
	if !slices.ContainsFunc(qs, func(q broker.Queue) bool { return q.Name == qq }) {
		t.Errorf("queue %s not listed after failover", qq)
	}
	q := waitQueue(t, b, qq, 30*time.Second, func(q broker.Queue) bool {
		return len(q.Online) == 2 && slices.Contains(q.Online, q.Leader)
	})
	if slices.Contains(q.Online, env.Nodes[used]) || !slices.Contains(q.Members, env.Nodes[used]) {
		t.Errorf("after killing %s: members %q online %q", env.Nodes[used], q.Members, q.Online)
	}
	var ids []string
	rep, err := b.Peek(ctx, qq, broker.PeekOptions{}, func(m *broker.Message) error {
		ids = append(ids, m.Properties.MessageID)
		return nil
	})
	if err != nil || !slices.Equal(ids, seq("m", 0, 10)) {
		t.Fatalf("peek through another node: %v (read %d), ids %v", err, rep.Read, ids)
	}
	if n := depth(t, b, qq); n != 10 {
		t.Errorf("depth after the peek %d, want 10", n)
	}

	// A new connection skips the dead node.
	cfg := clusterConfig(t, env)
	b2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open with node %d down: %v", killed, err)
	}
	defer b2.Close()
	if b2.Node() == lost {
		t.Errorf("connected to the dead node %s", lost)
	}
	if s := b2.String(); strings.Contains(s, env.Password) || strings.Count(s, ",") != 2 {
		t.Errorf("String() = %q", s)
	}
}
