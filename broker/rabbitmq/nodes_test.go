package rabbitmq

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

func TestSplitHosts(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "amqp://u:p@h:5672/v", want: []string{"amqp://u:p@h:5672/v"}},
		{in: "amqp://u:p@h1:5672,h2:5673,h3:5674/vhost", want: []string{
			"amqp://u:p@h1:5672/vhost", "amqp://u:p@h2:5673/vhost", "amqp://u:p@h3:5674/vhost"}},
		{in: "amqps://ops@h1, h2/%2F?heartbeat=5", want: []string{"amqps://ops@h1/%2F?heartbeat=5", "amqps://ops@h2/%2F?heartbeat=5"}},
		{in: "amqp://h1,h2", want: []string{"amqp://h1", "amqp://h2"}},
		{in: "amqp://u:p%40ss@[::1]:5672,[::2]:5673/", want: []string{"amqp://u:p%40ss@[::1]:5672/", "amqp://u:p%40ss@[::2]:5673/"}},
		// An @ in the password (not escaped) stays in the user part.
		{in: "amqp://u:p@ss@h1,h2/v", want: []string{"amqp://u:p@ss@h1/v", "amqp://u:p@ss@h2/v"}},
		{in: "amqp://u:s3cret@h1,,h2/v", wantErr: "empty host"},
		{in: "amqp://u:s3cret@h1,/v", wantErr: "empty host"},
		{in: "not a url", want: []string{"not a url"}},
	}
	for _, tt := range tests {
		got, err := splitHosts(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("splitHosts(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error holds the password: %v", err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitHosts(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNewBrokerNodes(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		nodes     []string
		mgmt      []string
		redacted  string
		wantErr   string
		mgmtUsers []string
	}{
		{name: "one host", cfg: Config{URL: "amqp://u:s3cret@rabbit/shop"},
			nodes: []string{"rabbit:5672"}, mgmt: []string{"http://rabbit:15672"}, redacted: "amqp://u@rabbit:5672/shop"},
		{name: "hosts in the URL", cfg: Config{URL: "amqp://u:s3cret@h1:5672,h2:5673,h3/shop"},
			nodes:    []string{"h1:5672", "h2:5673", "h3:5672"},
			mgmt:     []string{"http://h1:15672", "http://h2:15672", "http://h3:15672"},
			redacted: "amqp://u@h1:5672,h2:5673,h3:5672/shop"},
		{name: "amqps defaults", cfg: Config{URL: "amqps://u:s3cret@h1,h2:5999/"},
			nodes: []string{"h1:5671", "h2:5999"}, mgmt: []string{"https://h1:15671", "https://h2:15671"},
			redacted: "amqps://u@h1:5671,h2:5999/"},
		{name: "nodes key", cfg: Config{URL: "amqp://u:s3cret@h1/shop", Nodes: []string{"h2:5673", " h3 ", "h1:5672"}},
			nodes:    []string{"h1:5672", "h2:5673", "h3:5672"},
			mgmt:     []string{"http://h1:15672", "http://h2:15672", "http://h3:15672"},
			redacted: "amqp://u@h1:5672,h2:5673,h3:5672/shop"},
		{name: "ipv6 node", cfg: Config{URL: "amqp://u:s3cret@h1/", Nodes: []string{"[::1]:5673"}},
			nodes: []string{"h1:5672", "[::1]:5673"}, mgmt: []string{"http://h1:15672", "http://[::1]:15672"},
			redacted: "amqp://u@h1:5672,[::1]:5673/"},
		{name: "one management URL for all", cfg: Config{URL: "amqp://u:s3cret@h1,h2/", ManagementURL: "http://lb:8080/"},
			nodes: []string{"h1:5672", "h2:5672"}, mgmt: []string{"http://lb:8080", "http://lb:8080"},
			redacted: "amqp://u@h1:5672,h2:5672/"},
		{name: "management URLs by position", cfg: Config{URL: "amqp://u:s3cret@h1:5672,h2:5673/",
			ManagementURL: "http://h1:15672, http://admin:pw@h2:15673/api/"},
			nodes: []string{"h1:5672", "h2:5673"}, mgmt: []string{"http://h1:15672", "http://h2:15673"},
			mgmtUsers: []string{"u", "admin"}, redacted: "amqp://u@h1:5672,h2:5673/"},
		{name: "too few management URLs", cfg: Config{URL: "amqp://u:s3cret@h1,h2,h3/", ManagementURL: "http://h1:15672,http://h2:15672"},
			wantErr: "`management-url` lists 2 URLs for 3 broker nodes"},
		{name: "empty management entry", cfg: Config{URL: "amqp://u:s3cret@h1,h2/", ManagementURL: "http://h1:15672,"},
			wantErr: "an empty entry"},
		{name: "bad port in the list", cfg: Config{URL: "amqp://u:s3cret@h1,h2:99999/"}, wantErr: "port \"99999\""},
		{name: "empty host", cfg: Config{URL: "amqp://u:s3cret@h1,,h2/"}, wantErr: "empty host"},
		{name: "node with a password", cfg: Config{URL: "amqp://u@h1/", Nodes: []string{"u:s3cret@h2"}}, wantErr: "node 1 of `nodes` holds a user or password"},
		{name: "node with a scheme", cfg: Config{URL: "amqp://u@h1/", Nodes: []string{"amqp://h2"}}, wantErr: "malformed node \"amqp://h2\""},
		{name: "node with a bad port", cfg: Config{URL: "amqp://u@h1/", Nodes: []string{"h2:x"}}, wantErr: "port \"x\""},
		{name: "bare ipv6 node", cfg: Config{URL: "amqp://u@h1/", Nodes: []string{"::1"}}, wantErr: "in brackets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := newBroker(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error holds the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Nodes(); !slices.Equal(got, tt.nodes) {
				t.Errorf("Nodes() = %q, want %q", got, tt.nodes)
			}
			var mgmt, users []string
			for _, n := range b.nodes {
				mgmt = append(mgmt, n.mgmt.String())
				users = append(users, n.mgmtUser)
				if !strings.Contains(n.uri, "s3cret") {
					t.Errorf("node %s dials without the password: %q", n.addr, n.redacted)
				}
				if strings.Contains(n.redacted, "s3cret") {
					t.Errorf("node %s prints the password: %q", n.addr, n.redacted)
				}
			}
			if !slices.Equal(mgmt, tt.mgmt) {
				t.Errorf("management URLs = %q, want %q", mgmt, tt.mgmt)
			}
			if tt.mgmtUsers != nil && !slices.Equal(users, tt.mgmtUsers) {
				t.Errorf("management users = %q, want %q", users, tt.mgmtUsers)
			}
			if b.String() != tt.redacted {
				t.Errorf("String() = %q, want %q", b.String(), tt.redacted)
			}
			if b.Node() != tt.nodes[0] || b.ManagementURL() != tt.mgmt[0] {
				t.Errorf("node in use %s (%s), want the first", b.Node(), b.ManagementURL())
			}
		})
	}
}

func TestNewBrokerNodesPasswordOverride(t *testing.T) {
	b, err := newBroker(Config{URL: "amqp://ops@h1,h2/", Nodes: []string{"h3"}, Password: "fr0m-env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range b.nodes {
		u, _ := url.Parse(n.uri)
		if p, _ := u.User.Password(); p != "fr0m-env" || u.User.Username() != "ops" {
			t.Errorf("node %s: user %q password set %v", n.addr, u.User.Username(), p == "fr0m-env")
		}
	}
}

// deadAddr is a local address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestOpenNodesFailover lists a dead node before the test server: Open
// connects through the live one, the management API follows it, and a lost
// connection is dialled again past the dead node.
func TestOpenNodesFailover(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	live, err := url.Parse(env.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	dead, deadMgmt := deadAddr(t), "http://"+deadAddr(t)
	multi := withURL(t, env.AMQPURL, func(u *url.URL) { u.Host = dead + "," + live.Host })
	b, err := Open(context.Background(), Config{URL: multi, ManagementURL: deadMgmt + "," + env.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open with a dead first node: %v", err)
	}
	defer b.Close()
	if b.Node() != live.Host || b.ManagementURL() != strings.TrimSuffix(env.MgmtURL, "/") {
		t.Fatalf("node in use %s (%s), want %s", b.Node(), b.ManagementURL(), live.Host)
	}
	if s := b.String(); strings.Contains(s, env.Password) || !strings.Contains(s, dead+","+live.Host) {
		t.Errorf("String() = %q", s)
	}
	if _, err := b.Queues(context.Background()); err != nil {
		t.Fatalf("queues: %v", err)
	}
	// Lose the connection: the next use tries the dead node, then the live
	// one again.
	b.mu.Lock()
	c := b.conn
	b.mu.Unlock()
	_ = c.Close()
	q := brokertest.Name(t, "q")
	declareQueue(t, b, q, nil)
	if b.Node() != live.Host {
		t.Errorf("after reconnecting the node in use is %s", b.Node())
	}
	if _, err := b.Queue(context.Background(), q); err != nil {
		t.Errorf("describe after reconnecting: %v", err)
	}
}

// TestMgmtOtherNode: when the management API of the node in use does not
// answer but its AMQP connection is fine, another node's API answers.
func TestMgmtOtherNode(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	live, _ := url.Parse(env.AMQPURL)
	// Two names for the same server: the first has a dead management URL.
	other := withURL(t, env.AMQPURL, func(u *url.URL) { u.Host = live.Host + ",localhost:" + live.Port() })
	b, err := Open(context.Background(), Config{URL: other, ManagementURL: "http://" + deadAddr(t) + "," + env.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Queues(context.Background()); err != nil {
		t.Fatalf("queues through the second node's management API: %v", err)
	}
	if b.Node() != live.Host {
		t.Errorf("the AMQP connection moved to %s", b.Node())
	}
}

func TestOpenNoNodeAnswers(t *testing.T) {
	d1, d2 := deadAddr(t), deadAddr(t)
	_, err := Open(context.Background(), Config{URL: "amqp://ops:s3cret-nodes@" + d1 + "," + d2 + "/", Timeout: 5 * time.Second})
	if err == nil {
		t.Fatal("open succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	if !errors.Is(err, broker.ErrUnreachable) || strings.Contains(msg, "s3cret-nodes") {
		t.Errorf("error %q: want ErrUnreachable without the password", msg)
	}
	for _, want := range []string{"no node answered (cannot reach " + d1 + " (connection refused); cannot reach " + d2 + " (connection refused))", "`nodes`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Count(msg, "\n") > 0 {
		t.Errorf("error is more than one line: %q", msg)
	}
}

// TestOpenNodesLoginRefused: a refused login ends the search at once; the
// error names the node.
func TestOpenNodesLoginRefused(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	live, _ := url.Parse(env.AMQPURL)
	bad := withURL(t, env.AMQPURL, func(u *url.URL) {
		u.User = url.UserPassword(u.User.Username(), "wr0ng-pw")
		u.Host = live.Host + "," + deadAddr(t)
	})
	_, err := Open(context.Background(), Config{URL: bad, Timeout: 10 * time.Second})
	if !errors.Is(err, broker.ErrAccessDenied) {
		t.Fatalf("err = %v, want ErrAccessDenied", err)
	}
	if strings.Contains(err.Error(), "wr0ng-pw") || !strings.Contains(err.Error(), live.Host) {
		t.Errorf("error %q: want the node named, not the password", err)
	}
}

func TestDialShareOfTimeout(t *testing.T) {
	// A node that accepts TCP and never answers must not use up the time of
	// the next: with three nodes each gets a third of what is left.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	d := deadAddr(t)
	start := time.Now()
	_, err = Open(context.Background(), Config{URL: "amqp://u:p@" + l.Addr().String() + "," + d + "/", Timeout: 3 * time.Second})
	took := time.Since(start)
	if err == nil {
		t.Fatal("open succeeded")
	}
	t.Log(err)
	if took > 2500*time.Millisecond || !strings.Contains(err.Error(), "; cannot reach "+d) {
		t.Errorf("took %s, err %v: want the silent node to get half of the 3s and the second node tried", took, err)
	}
	if !strings.Contains(err.Error(), "within 1.5") {
		t.Errorf("error does not give the silent node's share: %v", err)
	}
}
