// Package brokertest finds the real servers that `make test` starts (see
// scripts/brokers) and gives tests unique names to work in. Conformance
// checks an adapter against the rules of every capability it has (see
// docs/adapters.md).
//
// Integration tests call RabbitMQ(t) or SQS(t) first. Without the servers'
// environment they skip, so `go test ./...` runs the unit tests anywhere;
// with DLQ_TEST_REQUIRE_BROKERS=1 (as `make test` sets) a missing server is a
// failure instead.
//
// `make test` runs the integration tests three times: against RabbitMQ 3.10
// with the SQS emulators, then against RabbitMQ 4.0 alone
// (DLQ_TEST_RABBITMQ_ONLY=1, where SQS skips), then against 4.3 alone with
// the three-node 4.3 cluster (Cluster). The fault tests likewise run against
// the fault servers of each version (DLQ_FAULT_RABBITMQ_ONLY=1 on 4.x; the
// 4.3 pass has the cluster too).
package brokertest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RabbitEnv is the test RabbitMQ server.
type RabbitEnv struct {
	AMQPURL  string // amqp://user:password@127.0.0.1:5672/
	MgmtURL  string // http://127.0.0.1:15672
	Password string // the test password; no output may contain it
	// Script is scripts/brokers, for tests that restart the node or run
	// rabbitmqctl ("scripts/brokers rabbitmqctl close_all_connections x").
	Script string
	// Version is the server's version ("3.10.8", "4.0.5"), for tally lines
	// and for tests that know a version behaves differently.
	Version string
}

// SQSEnv is the test SQS emulators.
type SQSEnv struct {
	Endpoint string // fauxqs
	// MoveEndpoint is local-aws-sqs, which has message move tasks and
	// ListDeadLetterSourceQueues.
	MoveEndpoint string
	Script       string
	Dir          string // DLQ_TEST_BROKERS_DIR
}

func need(t testing.TB, vars ...string) []string {
	t.Helper()
	vals := make([]string, len(vars))
	for i, v := range vars {
		vals[i] = os.Getenv(v)
		if vals[i] == "" {
			if os.Getenv("DLQ_TEST_REQUIRE_BROKERS") == "1" {
				t.Fatalf("%s is not set: run the tests with `make test`, which starts the servers", v)
			}
			t.Skipf("%s not set: integration test needs the servers of `make test` (scripts/brokers up)", v)
		}
	}
	return vals
}

// answered holds the hosts that have answered once in this process. The
// fault tests restart their servers while sibling tests start, so a server
// that answered once is up for the test binary's purposes: a later check
// would only race a sibling's restart, and the test itself waits for it.
var answered sync.Map

func reachable(t testing.TB, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("bad test URL: %v", err)
	}
	if _, ok := answered.Load(u.Host); ok {
		return
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		if os.Getenv("DLQ_TEST_REQUIRE_BROKERS") == "1" {
			t.Fatalf("test server %s is down: run `scripts/brokers up`", u.Host)
		}
		t.Skipf("test server %s is down: run `scripts/brokers up`", u.Host)
	}
	c.Close()
	answered.Store(u.Host, true)
}

// RabbitMQ returns the test RabbitMQ server or skips the test.
func RabbitMQ(t testing.TB) RabbitEnv {
	t.Helper()
	v := need(t, "DLQ_TEST_AMQP_URL", "DLQ_TEST_MGMT_URL", "DLQ_TEST_PASSWORD")
	reachable(t, v[0])
	return RabbitEnv{AMQPURL: v[0], MgmtURL: v[1], Password: v[2], Script: os.Getenv("DLQ_TEST_BROKERS_SCRIPT"),
		Version: os.Getenv("DLQ_TEST_RABBITMQ_VERSION")}
}

// rabbitOnly skips t when the servers of this pass are RabbitMQ alone
// (<prefix>_RABBITMQ_ONLY=1): the SQS tests ran in the other pass.
func rabbitOnly(t testing.TB, prefix string) {
	t.Helper()
	if os.Getenv(prefix+"_RABBITMQ_ONLY") == "1" {
		t.Skipf("%s_RABBITMQ_ONLY=1: this pass runs RabbitMQ %s alone; the SQS tests ran in the pass with RabbitMQ 3.10 and the SQS emulators",
			prefix, os.Getenv(prefix+"_RABBITMQ_VERSION"))
	}
}

// SQS returns the test SQS emulators or skips the test.
func SQS(t testing.TB) SQSEnv {
	t.Helper()
	rabbitOnly(t, "DLQ_TEST")
	v := need(t, "DLQ_TEST_SQS_ENDPOINT", "DLQ_TEST_SQS2_ENDPOINT")
	reachable(t, v[0])
	reachable(t, v[1])
	// The emulators accept any credentials; the SDK's chain still wants some.
	for k, def := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, def)
		}
	}
	return SQSEnv{Endpoint: v[0], MoveEndpoint: v[1], Script: os.Getenv("DLQ_TEST_BROKERS_SCRIPT"), Dir: os.Getenv("DLQ_TEST_BROKERS_DIR")}
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// Name returns a queue or exchange name unique to this test run, made from
// the test's name and prefix: "dlqt-<test>-<prefix>-<random>". It stays
// within SQS's 80 characters (leaving room for ".fifo").
func Name(t testing.TB, prefix string) string {
	t.Helper()
	return name(t.Name(), prefix)
}

func name(test, prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	tn := unsafeChars.ReplaceAllString(strings.ToLower(test), "-")
	if len(tn) > 40 {
		tn = tn[len(tn)-40:]
	}
	s := "dlqt-" + strings.Trim(tn, "-") + "-" + prefix + "-" + hex.EncodeToString(b[:])
	if len(s) > 74 {
		s = s[len(s)-74:]
	}
	return s
}

// FaultEnv is the separate set of servers that fault tests may kill, restart
// and block (scripts/brokers with DLQ_BROKERS_INSTANCE=fault, or fault4 for
// RabbitMQ 4.0, which has no SQS: then SQS is empty and HasSQS false).
type FaultEnv struct {
	Rabbit RabbitEnv
	SQS    SQSEnv
	// Instance is the scripts/brokers instance ("fault" or "fault4") that
	// Brokers acts on.
	Instance string
}

// Fault returns the fault-test servers or skips the test. In the RabbitMQ-only
// pass (DLQ_FAULT_RABBITMQ_ONLY=1) it returns no SQS; see HasSQS and NeedSQS.
func Fault(t testing.TB) FaultEnv {
	t.Helper()
	v := need(t, "DLQ_FAULT_AMQP_URL", "DLQ_FAULT_MGMT_URL", "DLQ_FAULT_PASSWORD")
	reachable(t, v[0])
	script := os.Getenv("DLQ_FAULT_BROKERS_SCRIPT")
	e := FaultEnv{
		Rabbit: RabbitEnv{AMQPURL: v[0], MgmtURL: v[1], Password: v[2], Script: script,
			Version: os.Getenv("DLQ_FAULT_RABBITMQ_VERSION")},
		Instance: os.Getenv("DLQ_FAULT_BROKERS_INSTANCE"),
	}
	if e.Instance == "" {
		e.Instance = "fault"
	}
	if os.Getenv("DLQ_FAULT_RABBITMQ_ONLY") == "1" {
		return e
	}
	s := need(t, "DLQ_FAULT_SQS_ENDPOINT", "DLQ_FAULT_SQS2_ENDPOINT")
	reachable(t, s[0])
	for k, def := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, def)
		}
	}
	e.SQS = SQSEnv{Endpoint: s[0], MoveEndpoint: s[1], Script: script, Dir: os.Getenv("DLQ_FAULT_BROKERS_DIR")}
	return e
}

// HasSQS reports whether the fault servers of this pass include the SQS
// emulators (the RabbitMQ 4.0 pass has none).
func (e FaultEnv) HasSQS() bool { return e.SQS.Endpoint != "" }

// NeedSQS skips t when the fault servers of this pass have no SQS emulators.
func (e FaultEnv) NeedSQS(t testing.TB) {
	t.Helper()
	if !e.HasSQS() {
		rabbitOnly(t, "DLQ_FAULT")
		t.Skip("the fault servers of this pass have no SQS emulators")
	}
}

// Brokers runs scripts/brokers with args (up, restart-rabbitmq, stop-sqs,
// rabbitmqctl …) on the fault instance and returns its combined output.
func (e FaultEnv) Brokers(t testing.TB, args ...string) string {
	t.Helper()
	return brokers(t, e.Rabbit.Script, e.Instance, args...)
}

func brokers(t testing.TB, script, instance string, args ...string) string {
	t.Helper()
	c := exec.Command(script, args...)
	c.Env = append(os.Environ(), "DLQ_BROKERS_INSTANCE="+instance)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("DLQ_BROKERS_INSTANCE=%s scripts/brokers %s: %v\n%s", instance, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// MemoryAlarm sets the fault RabbitMQ's memory watermark so low that it
// blocks every publishing connection (connection.blocked). The returned
// func clears the alarm; it also runs when the test ends, and only once.
func (e FaultEnv) MemoryAlarm(t testing.TB) (clear func()) {
	t.Helper()
	cleared := false
	clear = func() {
		if !cleared {
			cleared = true
			e.Brokers(t, "rabbitmqctl", "set_vm_memory_high_watermark", "0.4")
		}
	}
	t.Cleanup(clear)
	e.Brokers(t, "rabbitmqctl", "set_vm_memory_high_watermark", "0.0000001")
	return clear
}

// ClusterEnv is a three-node RabbitMQ cluster on loopback (scripts/brokers
// with DLQ_BROKERS_INSTANCE=cluster, 4.0, or cluster43, 4.3) that tests may
// kill, stop and start nodes of. Nodes are numbered 1 to 3; AMQPURLs[n-1] and
// MgmtURLs[n-1] belong to node n.
type ClusterEnv struct {
	AMQPURLs []string // amqp://user:password@127.0.0.1:PORT/, one a node
	MgmtURLs []string // http://127.0.0.1:PORT, one a node
	Password string
	Nodes    []string // Erlang node names: dlqcluster1@localhost, …
	Script   string
	Instance string // the scripts/brokers instance: cluster (4.0) or cluster43
	Version  string // "4.0.5"
}

// Cluster returns the test cluster or skips the test. `make test` gives the
// cluster (RabbitMQ 4.3) to its RabbitMQ 4.3 passes only; the other passes
// set DLQ_CLUSTER_SKIP to the reason the cluster tests skip there.
func Cluster(t testing.TB) ClusterEnv {
	t.Helper()
	if reason := os.Getenv("DLQ_CLUSTER_SKIP"); reason != "" && os.Getenv("DLQ_CLUSTER_AMQP_URLS") == "" {
		t.Skip(reason)
	}
	v := need(t, "DLQ_CLUSTER_AMQP_URLS", "DLQ_CLUSTER_MGMT_URLS", "DLQ_CLUSTER_PASSWORD", "DLQ_CLUSTER_NODES", "DLQ_CLUSTER_BROKERS_SCRIPT")
	e := ClusterEnv{
		AMQPURLs: strings.Split(v[0], ","),
		MgmtURLs: strings.Split(v[1], ","),
		Password: v[2],
		Nodes:    strings.Split(v[3], ","),
		Script:   v[4],
		Instance: os.Getenv("DLQ_CLUSTER_BROKERS_INSTANCE"),
		Version:  os.Getenv("DLQ_CLUSTER_RABBITMQ_VERSION"),
	}
	if e.Instance == "" {
		e.Instance = "cluster"
	}
	if len(e.AMQPURLs) != len(e.Nodes) || len(e.MgmtURLs) != len(e.Nodes) {
		t.Fatalf("DLQ_CLUSTER_*: %d AMQP URLs, %d management URLs and %d nodes", len(e.AMQPURLs), len(e.MgmtURLs), len(e.Nodes))
	}
	for _, u := range e.AMQPURLs {
		reachable(t, u)
	}
	return e
}

func (e ClusterEnv) node(t testing.TB, n int) string {
	t.Helper()
	if n < 1 || n > len(e.Nodes) {
		t.Fatalf("no cluster node %d: nodes are 1 to %d", n, len(e.Nodes))
	}
	return strconv.Itoa(n)
}

// Brokers runs scripts/brokers with args on the cluster instance and returns
// its combined output.
func (e ClusterEnv) Brokers(t testing.TB, args ...string) string {
	t.Helper()
	return brokers(t, e.Script, e.Instance, args...)
}

// KillNode kills node n's Erlang VM with SIGKILL and returns once it is gone.
func (e ClusterEnv) KillNode(t testing.TB, n int) {
	t.Helper()
	e.Brokers(t, "kill-node", e.node(t, n))
}

// StopNode stops node n gracefully (rabbitmqctl stop).
func (e ClusterEnv) StopNode(t testing.TB, n int) {
	t.Helper()
	e.Brokers(t, "stop-node", e.node(t, n))
}

// StartNode starts node n again and returns once it runs and is back in the
// cluster (it sees every other running node).
func (e ClusterEnv) StartNode(t testing.TB, n int) {
	t.Helper()
	e.Brokers(t, "start-node", e.node(t, n))
}

// Rabbitmqctl runs rabbitmqctl against node n and returns its output.
func (e ClusterEnv) Rabbitmqctl(t testing.TB, n int, args ...string) string {
	t.Helper()
	return e.Brokers(t, append([]string{"rabbitmqctl", e.node(t, n)}, args...)...)
}

// String names the cluster's nodes, for logs.
func (e ClusterEnv) String() string {
	return fmt.Sprintf("RabbitMQ %s cluster of %s", e.Version, strings.Join(e.Nodes, ", "))
}

// User adds a user of its own to the test server, with the tags (such as
// "monitoring", for the management API) and the permission patterns
// configure, write and read on vhost "/", and returns
// an AMQP URL that logs in as that user (with the test server's password).
// The user is deleted when the test ends.
func (e RabbitEnv) User(t testing.TB, prefix, tags, configure, write, read string) string {
	t.Helper()
	name := Name(t, prefix)
	admin, err := url.Parse(e.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	adminUser := admin.User.Username()
	adminPass, _ := admin.User.Password()
	do := func(method, path string, body any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, e.MgmtURL+"/api"+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(adminUser, adminPass)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 && !(method == http.MethodDelete && resp.StatusCode == http.StatusNotFound) {
			msg, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, msg)
		}
	}
	do(http.MethodPut, "/users/"+url.PathEscape(name), map[string]string{"password": e.Password, "tags": tags})
	t.Cleanup(func() { do(http.MethodDelete, "/users/"+url.PathEscape(name), nil) })
	do(http.MethodPut, "/permissions/%2F/"+url.PathEscape(name), map[string]string{"configure": configure, "write": write, "read": read})
	u := *admin
	u.User = url.UserPassword(name, e.Password)
	return u.String()
}

// RequeueFree reports whether the server (Version) does not count a
// requeue as a delivery of a quorum queue's message: RabbitMQ 4.3 and
// later, where only failed deliveries count towards the delivery limit.
func (e RabbitEnv) RequeueFree() bool {
	var major, minor int
	if _, err := fmt.Sscanf(e.Version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 4 || major == 4 && minor >= 3
}
