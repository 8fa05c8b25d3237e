package brokertest

// The dlq binary that the fault scenarios run, and what they read of it: its
// exit code, its --output json summary, the journal it leaves.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Exit codes of dlq (see `dlq help exit-codes`).
const (
	exitOK      = 0
	exitPartial = 3
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// dlqBin is $DLQ_TEST_BIN (built by `make test`), or dlq built once for this
// test binary.
func dlqBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DLQ_TEST_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("DLQ_TEST_BIN=%s: %v (run `make build`)", p, err)
		}
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dlq-fault-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "dlq")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/dlq-tools/dlq/cmd/dlq").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// syncBuffer is a bytes.Buffer that the child writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is one running dlq.
type proc struct {
	cmd         *exec.Cmd
	out, errOut syncBuffer
	start       time.Time
	done        chan struct{}
	code        int // after done: the exit code, -1 when killed by a signal
	took        time.Duration
}

// startDLQ runs dlq with args; state (journals, audit log) lives in
// stateDir, so that a later --resume in the same directory finds the
// journal.
func startDLQ(t *testing.T, stateDir string, args ...string) *proc {
	t.Helper()
	env := []string{"XDG_STATE_HOME=" + stateDir, "XDG_CONFIG_HOME=" + filepath.Join(stateDir, "config"), "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "XDG_STATE_HOME", "XDG_CONFIG_HOME", "DLQ_CONTEXT", "DLQ_BROKER", "DLQ_PASSWORD", "DLQ_AUDIT_LOG", "DLQ_DEBUG_LOG":
			continue
		}
		env = append(env, kv)
	}
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(dlqBin(t), args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start dlq: %v", err)
	}
	go func() {
		err := p.cmd.Wait()
		p.took = time.Since(p.start)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -2
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for dlq to exit (at most d) and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // goroutine dump on stderr
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		t.Fatalf("dlq %s did not finish within %s\nstderr:\n%s", strings.Join(redactArgs(p.cmd.Args[1:]), " "), d, p.errOut.String())
	}
	assertNoSecret(t, p.out.String(), p.errOut.String())
	return p.code
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop freezes dlq (SIGSTOP) so that a fault can be put in place while the
// run is provably in progress, however slow the machine; cont lets it go
// on. A harness's URLs should ask for a heartbeat long enough (RabbitMQ:
// 60 s) that the broker does not drop a frozen dlq's connection on its own.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := freeze(p.cmd.Process); err != nil && !p.exited() {
		t.Fatalf("SIGSTOP dlq: %v", err)
	}
}

func (p *proc) cont() { thaw(p.cmd.Process) }

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// summary is what the scenarios read of dlq redrive's --output json
// summary (runSummary; decoded here, as a user's script would, so that
// the suite depends on dlq's output and not on its code).
type runSummary struct {
	Moved       int64 `json:"moved"`
	NotReturned int64 `json:"not_returned"`
	Resent      int64 `json:"resent"`
	Hidden      int64 `json:"hidden"`
	Resumed     *struct {
		InFlight      int   `json:"in_flight"`
		MaybeNotAcked int   `json:"maybe_not_acked"`
		AckedOnSight  int64 `json:"acked_on_sight"`
	} `json:"resumed"`
}

// summary decodes the --output json summary.
func (p *proc) summary(t *testing.T) runSummary {
	t.Helper()
	var s runSummary
	if err := json.Unmarshal([]byte(p.out.String()), &s); err != nil {
		t.Fatalf("summary is not JSON: %v\nstdout:\n%s\nstderr:\n%s", err, p.out.String(), p.errOut.String())
	}
	return s
}

// run runs dlq to the end and returns the process.
func runDLQ(t *testing.T, stateDir string, args ...string) *proc {
	t.Helper()
	p := startDLQ(t, stateDir, args...)
	p.wait(t, 3*time.Minute)
	return p
}

func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Redact(a)
	}
	return out
}

func secrets() []string {
	var s []string
	for _, k := range []string{"DLQ_TEST_PASSWORD", "DLQ_FAULT_PASSWORD", "DLQ_CLUSTER_PASSWORD"} {
		if v := os.Getenv(k); len(v) >= 6 {
			s = append(s, v)
		}
	}
	return s
}

// Redact replaces the test servers' passwords in s (a URL, an error that
// quotes one) with <SECRET>.
func Redact(s string) string {
	for _, sec := range secrets() {
		s = strings.ReplaceAll(s, sec, "<SECRET>")
	}
	return s
}

func assertNoSecret(t *testing.T, texts ...string) {
	t.Helper()
	for _, sec := range secrets() {
		for _, text := range texts {
			if strings.Contains(text, sec) {
				t.Errorf("dlq output contains the broker password:\n%s", Redact(text))
			}
		}
	}
}

// interrupted reports whether a journal in stateDir has no end line: its
// run was killed before it finished.
func interrupted(stateDir string) bool {
	m, _ := filepath.Glob(filepath.Join(stateDir, "dlq", "journal", "*.journal"))
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if !strings.HasPrefix(lines[len(lines)-1], "E ") {
			return true
		}
	}
	return false
}

// faultRand is the test's random source, seeded from DLQ_FAULT_SEED or the
// clock; the seed is logged so a failing run can be repeated.
func faultRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DLQ_FAULT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DLQ_FAULT_SEED=%q: want an unsigned integer", s)
		}
		seed = n
	}
	t.Logf("fault seed %d (DLQ_FAULT_SEED=%d repeats these kill moments)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x646c71))
}

// ids are n unique message IDs for one trial.
func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// poll calls cond until it is true or d passes.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
