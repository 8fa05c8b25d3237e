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
	wires []*amqpWire
}

func newCluster(t *testing.T, env brokertest.ClusterEnv) *clusterBackend {
	t.Helper()
	c := &clusterBackend{env: env}
	r := &rabbitBackend{name: "rabbitmq-cluster-quorum", kind: "quorum", url: env.AMQPURLs[0], urls: env.AMQPURLs,
		mgmt: strings.Join(env.MgmtURLs, ","), version: env.Version, wire: newWireLedger()}
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
		w := newAMQPWire(t, nu.Host, r.wire)
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
func (c *clusterBackend) connectedNode(t *testing.T) int {
	t.Helper()
	for i, w := range c.wires {
		if w.open.Load() > 0 {
			return i + 1
		}
	}
	t.Fatal("dlq has no connection to any node")
	return 0
}

// leader is the node (1-based) that leads quorum queue q.
func (c *clusterBackend) leader(t *testing.T, q string) int {
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

func TestFaultCluster(t *testing.T) {
	t.Parallel()
	env := brokertest.Cluster(t)
	const n = 20000
	t.Run("kill-connected-node", func(t *testing.T) {
		c := newCluster(t, env)
		disruptRun(t, c, n, "100000", disruption{
			name: "cluster-kill-connected-node",
			inject: func(t *testing.T, _ *proc) {
				node := c.connectedNode(t)
				t.Logf("killing node %d (%s), which dlq is connected to", node, env.Nodes[node-1])
				t.Cleanup(func() { env.StartNode(t, node) })
				env.KillNode(t, node)
			},
			rerun: []string{"--resume"},
		})
	})
	t.Run("stop-leader", func(t *testing.T) {
		c := newCluster(t, env)
		// The test declares its queues through node 2, so the source's
		// leader is not the node dlq connects to first: this fault is the
		// leader's alone.
		c.url, c.urls = env.AMQPURLs[1], append(env.AMQPURLs[1:], env.AMQPURLs[0])
		var srcLeader int
		disruptRun(t, c, n, "100000", disruption{
			name: "cluster-stop-leader",
			before: func(t *testing.T, src string) {
				srcLeader = c.leader(t, src)
			},
			inject: func(t *testing.T, _ *proc) {
				t.Logf("stopping node %d (%s), the source queue's leader; dlq is connected to node %d", srcLeader, env.Nodes[srcLeader-1], c.connectedNode(t))
				t.Cleanup(func() { env.StartNode(t, srcLeader) })
				env.StopNode(t, srcLeader)
			},
			rerun: []string{"--resume"},
		})
	})
}

// Held is how many messages of q are delivered and not yet acknowledged,
// as the management API of a running node counts them (consumers on a
// killed node stay listed after their messages came back).
func (c *clusterBackend) Held(t *testing.T, q string) int {
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
