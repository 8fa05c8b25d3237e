package cmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testenv"
)

// TestMain makes every test of package cmd hermetic (internal/testenv): no
// config file, audit log, context, broker, editor or terminal setting of the
// person running the tests leaks in. The tmux tests get a tmux server of
// this test binary's own, stopped at the end.
//
// With DLQ_TEST_RUN_MAIN=1 the test binary is dlq itself (cmd.Main), so
// that tests can hand it to a shell or another process without a build.
func TestMain(m *testing.M) {
	if os.Getenv("DLQ_TEST_RUN_MAIN") == "1" {
		os.Exit(int(Main()))
	}
	dir, err := testenv.Setup()
	if err != nil {
		panic(err)
	}
	tmuxSocket = filepath.Join(dir, "tmux.sock")
	code := m.Run()
	stopTmuxServer()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runOpts shape one in-process run of dlq.
type runOpts struct {
	Stdin   string
	TTY     bool
	Timeout time.Duration // bounds the whole run; default 2 minutes
}

// runDLQ runs dlq in-process (cmd.Run) with args, without a terminal, and
// returns what it wrote to stdout and stderr and its exit code. Every output
// is checked for the test passwords.
func runDLQ(t testing.TB, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	return runDLQWith(t, runOpts{}, args...)
}

// runDLQWith is runDLQ with stdin, a pretend terminal, or another deadline.
func runDLQWith(t testing.TB, o runOpts, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	ios, in, out, errOut := Test()
	in.WriteString(o.Stdin)
	ios.SetTTY(o.TTY)
	code = Run(ctx, ios, args)
	stdout, stderr = out.String(), errOut.String()
	assertNoSecret(t, stdout, stderr)
	return stdout, stderr, code
}

// runBinary runs the built binary ($DLQ_TEST_BIN, set by `make test`) with
// args and a hermetic environment plus env ("K=V"); it skips without it.
func runBinary(t testing.TB, env []string, args ...string) (stdout, stderr string, code ExitCode, took time.Duration) {
	t.Helper()
	bin := os.Getenv("DLQ_TEST_BIN")
	if bin == "" {
		t.Skip("DLQ_TEST_BIN not set: `make test` builds bin/dlq and sets it")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("DLQ_TEST_BIN=%s: %v (run `make build`)", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	start := time.Now()
	err := c.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ExitCode(ee.ExitCode())
	default:
		t.Fatalf("run %s: %v", bin, err)
	}
	stdout, stderr = out.String(), errOut.String()
	assertNoSecret(t, stdout, stderr)
	return stdout, stderr, code, took
}

// testSecrets are the values no output may contain: the test servers'
// passwords and any real-looking AWS secret key.
func testSecrets() []string {
	var s []string
	for _, k := range []string{"DLQ_TEST_PASSWORD", "DLQ_FAULT_PASSWORD", "DLQ_TLS_PASSWORD", "DLQ_TLS_MGMT_PASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		if v := os.Getenv(k); len(v) >= 6 {
			s = append(s, v)
		}
	}
	return s
}

// assertNoSecret fails the test when any text contains a test password or
// secret key (also URL-escaped).
func assertNoSecret(t testing.TB, texts ...string) {
	t.Helper()
	for _, secret := range testSecrets() {
		for _, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("output contains a secret (%d characters); output:\n%s", len(secret), strings.ReplaceAll(text, secret, "<SECRET>"))
			}
		}
	}
}

// assertOneLine fails unless stderr is exactly one non-empty line.
func assertOneLine(t testing.TB, stderr string) {
	t.Helper()
	s := strings.TrimRight(stderr, "\n")
	if s == "" || strings.Contains(s, "\n") {
		t.Errorf("stderr should be one line, got %q", stderr)
	}
}

// rabbitArgs are the global flags for the test RabbitMQ (its URL carries
// the password); the test is skipped without the server.
func rabbitArgs(t testing.TB) []string {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	return []string{"--broker", env.AMQPURL, "--management-url", env.MgmtURL}
}

// sqsArgs are the global flags for the test SQS emulator (fauxqs).
func sqsArgs(t testing.TB) []string {
	t.Helper()
	env := brokertest.SQS(t)
	return []string{"--broker", "sqs://us-east-1", "--endpoint-url", env.Endpoint}
}

// writeConfig writes a config file for the test and returns its path, for
// `--config`.
func writeConfig(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
