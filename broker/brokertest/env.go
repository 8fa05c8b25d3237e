// Package brokertest finds the real servers that `make test` starts (see
// scripts/brokers) and gives tests unique names to work in.
//
// Integration tests call RabbitMQ(t) or SQS(t) first. Without the servers'
// environment they skip, so `go test ./...` runs the unit tests anywhere;
// with DLQ_TEST_REQUIRE_BROKERS=1 (as `make test` sets) a missing server is a
// failure instead.
package brokertest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
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

func reachable(t testing.TB, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("bad test URL: %v", err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		if os.Getenv("DLQ_TEST_REQUIRE_BROKERS") == "1" {
			t.Fatalf("test server %s is down: run `scripts/brokers up`", u.Host)
		}
		t.Skipf("test server %s is down: run `scripts/brokers up`", u.Host)
	}
	c.Close()
}

// RabbitMQ returns the test RabbitMQ server or skips the test.
func RabbitMQ(t testing.TB) RabbitEnv {
	t.Helper()
	v := need(t, "DLQ_TEST_AMQP_URL", "DLQ_TEST_MGMT_URL", "DLQ_TEST_PASSWORD")
	reachable(t, v[0])
	return RabbitEnv{AMQPURL: v[0], MgmtURL: v[1], Password: v[2], Script: os.Getenv("DLQ_TEST_BROKERS_SCRIPT")}
}

// SQS returns the test SQS emulators or skips the test.
func SQS(t testing.TB) SQSEnv {
	t.Helper()
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
	var b [4]byte
	_, _ = rand.Read(b[:])
	tn := unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
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
// and block (scripts/brokers with DLQ_BROKERS_INSTANCE=fault).
type FaultEnv struct {
	Rabbit RabbitEnv
	SQS    SQSEnv
}

// Fault returns the fault-test servers or skips the test.
func Fault(t testing.TB) FaultEnv {
	t.Helper()
	v := need(t, "DLQ_FAULT_AMQP_URL", "DLQ_FAULT_MGMT_URL", "DLQ_FAULT_PASSWORD", "DLQ_FAULT_SQS_ENDPOINT", "DLQ_FAULT_SQS2_ENDPOINT")
	reachable(t, v[0])
	reachable(t, v[3])
	for k, def := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"} {
		if os.Getenv(k) == "" {
			t.Setenv(k, def)
		}
	}
	script := os.Getenv("DLQ_FAULT_BROKERS_SCRIPT")
	return FaultEnv{
		Rabbit: RabbitEnv{AMQPURL: v[0], MgmtURL: v[1], Password: v[2], Script: script},
		SQS:    SQSEnv{Endpoint: v[3], MoveEndpoint: v[4], Script: script, Dir: os.Getenv("DLQ_FAULT_BROKERS_DIR")},
	}
}

// Brokers runs scripts/brokers with args (up, restart-rabbitmq, stop-sqs,
// rabbitmqctl …) on the fault instance and returns its combined output.
func (e FaultEnv) Brokers(t testing.TB, args ...string) string {
	t.Helper()
	c := exec.Command(e.Rabbit.Script, args...)
	c.Env = append(os.Environ(), "DLQ_BROKERS_INSTANCE=fault")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/brokers %s: %v\n%s", strings.Join(args, " "), err, out)
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
