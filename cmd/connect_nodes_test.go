package cmd

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// Several addresses for one RabbitMQ broker: hosts in the URL, `nodes:` in a
// context, a list in --management-url.

func TestParseConfigNodes(t *testing.T) {
	c, err := parseConfig([]byte("contexts:\n  r:\n    broker: amqp://ops@h1:5672,h2:5672/shop\n    nodes: [h3:5672, 'h4']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Contexts["r"].Nodes; !slices.Equal(got, []string{"h3:5672", "h4"}) {
		t.Errorf("nodes = %q", got)
	}
	for in, want := range map[string]string{
		"contexts:\n  a: {broker: 'sqs://eu-west-1', nodes: [h2]}\n":         "`nodes` lists RabbitMQ nodes, but its broker is not amqp://",
		"contexts:\n  a: {broker: 'amqp://u:secret@h1,h2/'}\n":               "holds a password",
		"contexts:\n  a: {broker: 'amqp://u:secret@[::1]:5672,h2/'}\n":       "holds a password",
		"contexts:\n  a: {broker: 'amqp://u@h1/', nodes: 'h2'}\n":            "cannot unmarshal",
		"contexts:\n  a: {broker: 'amqp://u@h1/', node: [h2]}\n":             "field node not found",
		"contexts:\n  a: {broker: 'amqp://u@h1,h2/', management_url: 'x'}\n": "",
	} {
		_, err := parseConfig([]byte(in))
		if want == "" {
			if err != nil {
				t.Errorf("parseConfig(%q) = %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseConfig(%q) = %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestResolveBrokerNodes(t *testing.T) {
	f := testFactory(t, `contexts:
  cluster:
    broker: amqp://ops@h1:5672/shop
    nodes: [h2:5672, h3:5672]
    management_url: http://h1:15672,http://h2:15672,http://h3:15672
`)
	f.Options.Context = "cluster"
	s, err := f.resolveBroker()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Nodes, []string{"h2:5672", "h3:5672"}) || s.ManagementURL != "http://h1:15672,http://h2:15672,http://h3:15672" {
		t.Errorf("nodes %q, management URL %q; want [h2:5672 h3:5672], http://h1:15672,http://h2:15672,http://h3:15672", s.Nodes, s.ManagementURL)
	}
	f.Options.SetAdapter(broker.OptManagementURL, "http://lb:15672")
	if s, _ := f.resolveBroker(); s.ManagementURL != "http://lb:15672" || len(s.Nodes) != 2 {
		t.Errorf("--management-url must override the context's list: management URL %q, nodes %q; want http://lb:15672, two", s.ManagementURL, s.Nodes)
	}
}

func TestPasswordHostList(t *testing.T) {
	f := testFactory(t, "")
	t.Setenv("DLQ_PASSWORD", "from-env")
	for ref, want := range map[string]string{
		"amqp://u:inurl@h1:5672,h2:5673/":       "",
		"amqp://u:inurl@[::1]:5672,[::2]:5673/": "",
		"amqp://u@h1:5672,h2:5673/":             "from-env",
		"amqp://u@[::1]:5672,h2/":               "from-env",
	} {
		got, err := f.password(brokerSpec{Ref: ref})
		if err != nil || got != want {
			t.Errorf("password(%s) = %q, %v; want %q", broker.Redact(ref), got, err, want)
		}
	}
}

// deadPort is a local port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

// TestAcceptanceQueuesNodes: `dlq queues` through a list of nodes whose
// first is down, given in the URL and by a context's `nodes:`.
func TestAcceptanceQueuesNodes(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	live, err := url.Parse(env.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	dead, deadMgmt := "127.0.0.1:"+deadPort(t), "http://127.0.0.1:"+deadPort(t)
	multi := *live
	multi.Host = dead + "," + live.Host
	stdout, stderr, code := runDLQ(t, "queues", "--broker", multi.String(), "--management-url", deadMgmt+","+env.MgmtURL, "-o", "json")
	if code != ExitOK {
		t.Fatalf("hosts in the URL: exit %d: %s", code, stderr)
	}
	decodeQueues(t, stdout)

	t.Setenv("DLQ_NODES_TEST_PW", env.Password)
	cfg := writeConfig(t, fmt.Sprintf(`contexts:
  cluster:
    broker: amqp://%s@%s/
    nodes: [%s]
    management_url: %s,%s
    password_env: DLQ_NODES_TEST_PW
`, live.User.Username(), dead, live.Host, deadMgmt, env.MgmtURL))
	stdout, stderr, code = runDLQ(t, "queues", "--config", cfg, "--context", "cluster", "-o", "json")
	if code != ExitOK {
		t.Fatalf("nodes in a context: exit %d: %s", code, stderr)
	}
	decodeQueues(t, stdout)

	// No node answers: one line naming each node, exit 1, no password.
	other := "127.0.0.1:" + deadPort(t)
	multi.Host = dead + "," + other
	_, stderr, code = runDLQ(t, "queues", "--broker", multi.String())
	assertOneLine(t, stderr)
	if code != ExitError || !strings.Contains(stderr, dead) || !strings.Contains(stderr, other) || !strings.Contains(stderr, "no node answered") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
