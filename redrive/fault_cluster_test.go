package redrive_test

// Fault tests on a three-node RabbitMQ cluster (brokertest.Cluster): dlq is
// given every node, redrives a quorum DLQ replicated on all three, and loses
// a node mid-run — the one it is connected to (SIGKILL), or the source
// queue's leader (a clean stop). Nothing may be lost, duplicates stay within
// what was in flight, and --resume (or a plain re-run) finishes the move.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// clusterBackend is a quorum backend on every node of the cluster, with a
// wire proxy in front of each node.
type clusterBackend struct {
	*rabbitBackend
	env   brokertest.ClusterEnv
	wires []*brokertest.AMQPWire
}

func newCluster(t testing.TB, env brokertest.ClusterEnv) *clusterBackend {
	t.Helper()
	c := &clusterBackend{env: env}
	r := &rabbitBackend{name: "rabbitmq-cluster-quorum", kind: "quorum", url: env.AMQPURLs[0], urls: env.AMQPURLs,
		mgmt: strings.Join(env.MgmtURLs, ","), version: env.Version, wire: brokertest.NewWireLedger()}
	if r.version == "" {
		r.version = rabbitVersion(t, env.MgmtURLs[0], env.AMQPURLs[0])
	}
	// One URL listing every node's proxy: amqp://user:pass@p1,p2,p3/?heartbeat=60.
	u, err := url.Parse(env.AMQPURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, raw := range env.AMQPURLs {
		nu, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		w := brokertest.NewAMQPWire(t, nu.Host, r.wire)
		c.wires = append(c.wires, w)
		hosts = append(hosts, w.Addr())
	}
	u.Host = strings.Join(hosts, ",")
	q := u.Query()
	q.Set("heartbeat", "60")
	u.RawQuery = q.Encode()
	r.dlqURLs = []string{u.String()}
	t.Cleanup(r.closePoll)
	c.rabbitBackend = r
	return c
}

// connectedNode is the node (1-based) dlq's connections go to.
func (c *clusterBackend) connectedNode(t testing.TB) int {
	t.Helper()
	for i, w := range c.wires {
		if w.Open() > 0 {
			return i + 1
		}
	}
	t.Fatal("dlq has no connection to any node")
	return 0
}

// leader is the node (1-based) that leads quorum queue q.
func (c *clusterBackend) leader(t testing.TB, q string) int {
	t.Helper()
	for _, m := range c.env.MgmtURLs {
		req, _ := http.NewRequest("GET", strings.TrimRight(m, "/")+"/api/queues/%2F/"+url.PathEscape(q), nil)
		u, _ := url.Parse(c.env.AMQPURLs[0])
		req.SetBasicAuth(u.User.Username(), c.env.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var qi struct {
			Leader string `json:"leader"`
		}
		err = json.NewDecoder(resp.Body).Decode(&qi)
		resp.Body.Close()
		if i := slices.Index(c.env.Nodes, qi.Leader); err == nil && i >= 0 {
			return i + 1
		}
	}
	t.Fatalf("no node names a leader of %s", q)
	return 0
}

// clusterKiller kills the node dlq is connected to, which also leads the
// source queue (the test declares its queues through node 1, the first
// node dlq tries).
type clusterKiller struct{ *clusterBackend }

func (c clusterKiller) KillConnectedNode(t testing.TB) {
	node := c.connectedNode(t)
	t.Logf("killing node %d (%s), which dlq is connected to", node, c.env.Nodes[node-1])
	t.Cleanup(func() { c.env.StartNode(t, node) })
	c.env.KillNode(t, node)
}

// clusterLeaderStopper stops the source queue's leader. The test declares
// its queues through node 2, so the source's leader is not the node dlq
// connects to first: this fault is the leader's alone.
type clusterLeaderStopper struct{ *clusterBackend }

func newClusterLeaderStopper(t testing.TB, env brokertest.ClusterEnv) clusterLeaderStopper {
	c := newCluster(t, env)
	c.url, c.urls = env.AMQPURLs[1], append(env.AMQPURLs[1:], env.AMQPURLs[0])
	return clusterLeaderStopper{c}
}

func (c clusterLeaderStopper) Leader(t testing.TB, q string) (stop func(testing.TB)) {
	leader := c.leader(t, q)
	return func(t testing.TB) {
		t.Logf("stopping node %d (%s), the source queue's leader; dlq is connected to node %d", leader, c.env.Nodes[leader-1], c.connectedNode(t))
		t.Cleanup(func() { c.env.StartNode(t, leader) })
		c.env.StopNode(t, leader)
	}
}

func (c *clusterBackend) TallyName(scenario string) string { return "cluster-" + scenario }

func TestFaultCluster(t *testing.T) {
	t.Parallel()
	env := brokertest.Cluster(t)
	o := brokertest.FaultOptions{Messages: 20000, Rate: "100000",
		Skip: map[string]string{"sigkill": "the kill trials run on the single-node fault servers; the cluster's scenarios lose a node"}}
	t.Run("kill-connected-node", func(t *testing.T) {
		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness { return clusterKiller{newCluster(t, env)} }, o)
	})
	t.Run("stop-leader", func(t *testing.T) {
		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness { return newClusterLeaderStopper(t, env) }, o)
	})
}

// Held is how many messages of q are delivered and not yet acknowledged,
// as the management API of a running node counts them (consumers on a
// killed node stay listed after their messages came back).
func (c *clusterBackend) Held(t testing.TB, q string) int {
	t.Helper()
	for _, m := range c.env.MgmtURLs {
		req, _ := http.NewRequest("GET", strings.TrimRight(m, "/")+"/api/queues/%2F/"+url.PathEscape(q), nil)
		u, _ := url.Parse(c.env.AMQPURLs[0])
		req.SetBasicAuth(u.User.Username(), c.env.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var qi struct {
			Unacked *int `json:"messages_unacknowledged"`
		}
		err = json.NewDecoder(resp.Body).Decode(&qi)
		resp.Body.Close()
		if err == nil && qi.Unacked != nil {
			return *qi.Unacked
		}
	}
	return -1
}
