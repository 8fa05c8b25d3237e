package cmd

// A management API of another broker than the AMQP connection's is refused
// before dlq lists or changes anything through it.

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// otherServer is the AMQP URL and management API of the other test server
// (test4 when the tests run against test, else test), a separate node with
// the same user and password; the test skips when it does not answer.
func otherServer(t *testing.T, env brokertest.RabbitEnv) (amqpURL, mgmtURL string) {
	t.Helper()
	other := "test4"
	if os.Getenv("DLQ_TEST_BROKERS_INSTANCE") == "test4" {
		other = "test"
	}
	if env.Script == "" {
		t.Skip("DLQ_TEST_BROKERS_SCRIPT is not set: no way to find the other test server")
	}
	c := exec.Command(env.Script, "env")
	c.Env = append(os.Environ(), "DLQ_BROKERS_INSTANCE="+other)
	out, err := c.Output()
	if err != nil {
		t.Skipf("DLQ_BROKERS_INSTANCE=%s scripts/brokers env: %v", other, err)
	}
	var a, u string
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "export DLQ_TEST_MGMT_URL="); ok {
			u = strings.Trim(v, `"'`)
		}
		if v, ok := strings.CutPrefix(l, "export DLQ_TEST_AMQP_URL="); ok {
			a = strings.Trim(v, `"'`)
		}
	}
	if u == "" || u == env.MgmtURL {
		t.Skipf("the %s server has no management URL of its own (%q)", other, u)
	}
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(u + "/api/overview")
	if err != nil {
		t.Skipf("the %s server's management API at %s does not answer: %v", other, u, err)
	}
	resp.Body.Close()
	return a, u
}

func TestQueuesRefusesAnotherClustersManagementAPI(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	otherAMQP, other := otherServer(t, env)
	stdout, stderr, code := runDLQ(t, "queues", "--broker", env.AMQPURL, "--management-url", other)
	if code != ExitError {
		t.Fatalf("exit %d, want %d: stdout %q, stderr %q", code, ExitError, stdout, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing listed", stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || !strings.Contains(stderr, "it belongs to cluster `") || !strings.Contains(stderr, "not to the broker dlq is connected to") || !strings.Contains(stderr, other) {
		t.Errorf("stderr %q, want one line naming both clusters and %s", stderr, other)
	}
	// Its own management API is accepted.
	if _, stderr, code := runDLQ(t, "queues", "--broker", env.AMQPURL, "--management-url", env.MgmtURL); code != ExitOK {
		t.Errorf("with its own management API: exit %d: %s", code, stderr)
	}

	// The management URL dlq guesses (port 15672 on the AMQP host) is
	// checked too: with the other server's AMQP port not the default, the
	// guess reaches a node that is not the one connected to.
	if u, err := url.Parse(otherAMQP); err != nil || u.Port() == "5672" || u.Port() == "" {
		return
	}
	stdout, stderr, code = runDLQ(t, "queues", "--broker", otherAMQP)
	if code != ExitError || stdout != "" || !strings.Contains(stderr, "dlq guessed ") || !strings.Contains(stderr, "this check is what makes that guess safe") {
		t.Errorf("guessed management API of another node: exit %d, stdout %q, stderr %q; want exit 1 and one line saying the guess was checked", code, stdout, stderr)
	}
}
