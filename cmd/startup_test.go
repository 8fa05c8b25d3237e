package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInitIsCheap keeps dlq's own package initialisation small, so that
// `dlq --help` and `dlq version` start at once: regexps, schemas and other
// tables are built on first use (sync.OnceValue), not when dlq starts. It
// runs this test binary as dlq with GODEBUG=inittrace=1, which reports
// each package's init allocations (deterministic, unlike its time).
func TestInitIsCheap(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self, "version")
	c.Env = append(os.Environ(), "DLQ_TEST_RUN_MAIN=1", "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^init (github\.com/dlq-tools/dlq/\S+) @.*, (\d+) bytes, (\d+) allocs$`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		found++
		pkg := m[1]
		bytes, _ := strconv.Atoi(m[2])
		limit := 4 << 10
		if pkg == "github.com/dlq-tools/dlq/cmd" {
			limit = 16 << 10 // in this binary, cmd's init includes its tests' variables
		}
		if bytes > limit {
			t.Errorf("init of %s allocates %d bytes (%s allocs), more than %d: build it on first use (sync.OnceValue)", pkg, bytes, m[3], limit)
		}
	}
	if found < 5 {
		t.Fatalf("inittrace reported %d dlq packages:\n%s", found, out)
	}
}

// TestSignalCancels: SIGINT and SIGTERM cancel a running command (exit 2)
// even though the handler is installed in the background at start.
func TestSignalCancels(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, then say nothing: the command waits
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		c := exec.Command(self, "queues", "--broker", "amqp://u:p@"+silent.Addr().String()+"/", "--timeout", "1m")
		c.Env = append(os.Environ(), "DLQ_TEST_RUN_MAIN=1")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until dlq is connected, so that the signal finds it running.
		deadline := time.Now().Add(30 * time.Second)
		for !connected(t, c.Process.Pid, silent.Addr().String()) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		start := time.Now()
		if err := c.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != int(ExitCancelled) {
			t.Errorf("%v: %v, want exit %d\n%s", sig, err, ExitCancelled, stderr.String())
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%v: took %s to stop", sig, took)
		}
	}
}

// connected reports whether a TCP connection to addr is established, from
// /proc/net/tcp (Linux); elsewhere it waits a moment and says yes. Only the
// dlq under test connects to the test's listener.
func connected(t *testing.T, pid int, addr string) bool {
	t.Helper()
	if runtime.GOOS != "linux" {
		time.Sleep(time.Second)
		return true
	}
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	remote := fmt.Sprintf(":%04X", p)
	tcp, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(tcp), "\n") {
		// sl local_address rem_address st …; st 01 is ESTABLISHED
		if f := strings.Fields(line); len(f) > 3 && strings.HasSuffix(f[2], remote) && f[3] == "01" {
			return true
		}
	}
	return false
}
