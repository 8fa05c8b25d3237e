package redrive_test

// Fault tests: the built dlq binary redrives real queues while the test
// kills it (SIGKILL at random moments), closes its connections, restarts the
// servers under it, and blocks its publishers. Afterwards every message must
// be in the source or the destination (counted by unique ID), duplicates
// must stay within the messages in flight, and a re-run (or --resume) must
// finish the move.
//
// They run against the separate fault servers (brokertest.Fault), which
// they may restart and block; the concurrent-process test, which disturbs
// no server, runs on the main ones. The random kill moments come from a
// seed printed in the log; DLQ_FAULT_SEED=N repeats a run.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/redrive"
)

// Exit codes of dlq (see `dlq help exit-codes`).
const (
	exitOK      = 0
	exitPartial = 3
)

// The redrive shape the fault tests use: the in-flight bound of `dlq help
// redrive-safety` is window × (concurrency + 1).
const (
	faultWindow      = 100
	faultConcurrency = 2
	inFlightBound    = faultWindow * (faultConcurrency + 1)
)

// ---------------------------------------------------------------------------
// The dlq binary

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
// on. The fault tests' RabbitMQ URLs ask for a 60 s heartbeat, so that the
// broker does not drop a frozen dlq's connection on its own.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil && !p.exited() {
		t.Fatalf("SIGSTOP dlq: %v", err)
	}
}

func (p *proc) cont() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// summary decodes the --output json summary.
func (p *proc) summary(t *testing.T) redrive.Summary {
	t.Helper()
	var s redrive.Summary
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
		out[i] = redactSecrets(a)
	}
	return out
}

func secrets() []string {
	var s []string
	for _, k := range []string{"DLQ_TEST_PASSWORD", "DLQ_FAULT_PASSWORD"} {
		if v := os.Getenv(k); len(v) >= 6 {
			s = append(s, v)
		}
	}
	return s
}

func redactSecrets(s string) string {
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
				t.Errorf("dlq output contains the broker password:\n%s", redactSecrets(text))
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

// ---------------------------------------------------------------------------
// Backends: create queues, fill them with messages carrying unique IDs (the
// body is the ID), count and drain them with the brokers' own clients, so a
// bug in dlq's adapters cannot hide a loss.

type backend interface {
	// Name is the label of the tally ("rabbitmq-classic", "sqs").
	Name() string
	// Args are dlq's broker flags.
	Args() []string
	// Queue creates a queue for the test and deletes it at cleanup.
	Queue(t *testing.T, prefix string) string
	Fill(t *testing.T, q string, ids []string)
	// Count is how many messages the queue holds, in flight included.
	Count(t *testing.T, q string) int
	// Settled reports whether no consumer holds messages of the queue
	// any more (a killed consumer's messages are back).
	Settled(t *testing.T, q string) bool
	// Prefetch is the most deliveries dlq holds unacknowledged at once:
	// after a kill, at most these can be at the destination and back in
	// the source.
	Prefetch() int
	// Drain removes every message and returns how often each ID was seen.
	Drain(t *testing.T, q string) map[string]int
	// Server names the server and its version for the tally
	// ("rabbitmq=4.0.5", "sqs=fauxqs").
	Server() string
	// Wire is what the proxy between dlq and the server saw.
	Wire() *wireLedger
}

type rabbitBackend struct {
	name, kind string // kind: classic or quorum
	url, mgmt  string
	// urls are every node's URL, url's first: the test's own connections
	// go to the first that answers (a cluster test kills nodes).
	urls    []string
	version string
	// dlqURLs are the URLs dlq is given: through the wire proxies, with a
	// heartbeat long enough to outlast a SIGSTOP.
	dlqURLs []string
	wire    *wireLedger

	pollMu sync.Mutex
	poll   *amqp.Channel // a channel kept open for counting
	pollC  *amqp.Connection
}

func newRabbit(t *testing.T, env brokertest.RabbitEnv, kind string) *rabbitBackend {
	t.Helper()
	r := &rabbitBackend{name: "rabbitmq-" + kind, kind: kind, url: env.AMQPURL, urls: []string{env.AMQPURL}, mgmt: env.MgmtURL, wire: newWireLedger()}
	r.version = rabbitVersion(t, env.MgmtURL, env.AMQPURL)
	r.dlqURLs = []string{proxiedURL(t, env.AMQPURL, r.wire)}
	t.Cleanup(r.closePoll)
	return r
}

// proxiedURL is url with its host replaced by a wire proxy in front of it
// that records into ledger, and a 60 s heartbeat.
func proxiedURL(t *testing.T, rawURL string, ledger *wireLedger) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	w := newAMQPWire(t, u.Host, ledger)
	u.Host = w.Addr()
	q := u.Query()
	q.Set("heartbeat", "60")
	u.RawQuery = q.Encode()
	return u.String()
}

// rabbitVersion asks the management API for the broker's version.
func rabbitVersion(t *testing.T, mgmt, amqpURL string) string {
	t.Helper()
	u, err := url.Parse(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	req, _ := http.NewRequest("GET", strings.TrimRight(mgmt, "/")+"/api/overview", nil)
	req.SetBasicAuth(u.User.Username(), pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("rabbitmq version: %s", redactSecrets(err.Error()))
	}
	defer resp.Body.Close()
	var o struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || o.Version == "" {
		t.Fatalf("rabbitmq version: %v (HTTP %d)", err, resp.StatusCode)
	}
	return o.Version
}

func (r *rabbitBackend) Name() string      { return r.name }
func (r *rabbitBackend) Server() string    { return "rabbitmq=" + r.version }
func (r *rabbitBackend) Wire() *wireLedger { return r.wire }
func (r *rabbitBackend) Args() []string {
	return []string{"--broker", strings.Join(r.dlqURLs, ","), "--management-url", r.mgmt}
}

// dial connects, retrying while the node restarts.
func (r *rabbitBackend) dial(t *testing.T) *amqp.Connection {
	t.Helper()
	var conn *amqp.Connection
	var err error
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; ; i++ {
		conn, err = amqp.Dial(r.urls[i%len(r.urls)])
		if err == nil {
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("connect to RabbitMQ: %s", redactSecrets(err.Error()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// with runs fn on a fresh channel (connections may be closed under the
// test by the faults it injects).
func (r *rabbitBackend) with(t *testing.T, fn func(ch *amqp.Channel) error) {
	t.Helper()
	conn := r.dial(t)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	if err := fn(ch); err != nil {
		t.Fatal(redactSecrets(err.Error()))
	}
}

func (r *rabbitBackend) Queue(t *testing.T, prefix string) string {
	t.Helper()
	name := brokertest.Name(t, prefix)
	r.with(t, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": r.kind})
		return err
	})
	t.Cleanup(func() {
		conn, err := amqp.Dial(r.url)
		for i := 1; err != nil && i < len(r.urls); i++ {
			conn, err = amqp.Dial(r.urls[i])
		}
		if err != nil {
			t.Logf("delete queue %s: %s", name, redactSecrets(err.Error()))
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
		}
	})
	return name
}

func (r *rabbitBackend) Fill(t *testing.T, q string, ids []string) {
	t.Helper()
	r.with(t, func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var pending []*amqp.DeferredConfirmation
		check := func() error {
			for _, c := range pending {
				ok, err := c.WaitContext(ctx)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("fill: nack")
				}
			}
			pending = pending[:0]
			return nil
		}
		for i, id := range ids {
			c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", q, true, false, amqp.Publishing{
				MessageId: id, Body: []byte(id), DeliveryMode: amqp.Persistent, ContentType: "text/plain",
			})
			if err != nil {
				return err
			}
			pending = append(pending, c)
			if i%500 == 499 {
				if err := check(); err != nil {
					return err
				}
			}
		}
		return check()
	})
}

// inspect declares q passively on a channel kept open for it (the tests
// poll often), opening a new one when a fault closed the old.
func (r *rabbitBackend) inspect(t *testing.T, q string) amqp.Queue {
	t.Helper()
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	for attempt := 0; ; attempt++ {
		if r.poll == nil || r.poll.IsClosed() {
			r.closePollLocked()
			r.pollC = r.dial(t)
			ch, err := r.pollC.Channel()
			if err != nil {
				t.Fatalf("channel: %v", err)
			}
			r.poll = ch
		}
		qi, err := r.poll.QueueDeclarePassive(q, true, false, false, false, amqp.Table{"x-queue-type": r.kind})
		if err == nil {
			return qi
		}
		r.closePollLocked()
		if attempt == 50 {
			t.Fatalf("inspect %s: %s", q, redactSecrets(err.Error()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *rabbitBackend) closePoll() {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	r.closePollLocked()
}

func (r *rabbitBackend) closePollLocked() {
	if r.pollC != nil {
		_ = r.pollC.Close()
	}
	r.poll, r.pollC = nil, nil
}

func (r *rabbitBackend) depth(t *testing.T, q string) int { return r.inspect(t, q).Messages }

// Settled: the queue returns a consumer's unacknowledged messages when it
// drops the consumer.
func (r *rabbitBackend) Settled(t *testing.T, q string) bool { return r.inspect(t, q).Consumers == 0 }

// Prefetch: window × (concurrency + 1), and on classic queues the 1000
// messages the engine may hold to put back in place (the RabbitMQ
// HoldInPlace trait).
func (r *rabbitBackend) Prefetch() int {
	if r.kind == "classic" {
		return inFlightBound + 1000
	}
	return inFlightBound
}

// Count is the ready messages: a consumer's unacknowledged messages come
// back when its connection goes, and the tests count only after dlq exited.
func (r *rabbitBackend) Count(t *testing.T, q string) int { return r.depth(t, q) }

func (r *rabbitBackend) Drain(t *testing.T, q string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for {
		n := r.depth(t, q)
		if n == 0 {
			return seen
		}
		// No-ack: a message counts once it reached the test. (Acks sent one
		// by one just before a channel closes can be dropped by a quorum
		// queue on RabbitMQ 3.10, and their messages would be counted twice.)
		r.with(t, func(ch *amqp.Channel) error {
			ds, err := ch.Consume(q, "", true, false, false, false, nil)
			if err != nil {
				return err
			}
			timeout := time.After(time.Minute)
			for i := 0; i < n; i++ {
				select {
				case d, ok := <-ds:
					if !ok {
						return errors.New("drain: consumer closed")
					}
					seen[string(d.Body)]++
				case <-timeout:
					return fmt.Errorf("drain %s: %d of %d messages in a minute", q, i, n)
				}
			}
			return nil
		})
	}
}

type sqsBackend struct {
	name     string
	endpoint string
	wire     *sqsWire // dlq's way to the endpoint
	c        *sqs.Client
	urls     sync.Map // name → URL
}

func newSQS(t *testing.T, name, endpoint string) *sqsBackend {
	t.Helper()
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.RetryMaxAttempts = 10 // the emulator may be restarting
	})
	return &sqsBackend{name: name, endpoint: endpoint, c: c, wire: newSQSWire(t, endpoint)}
}

func (s *sqsBackend) Name() string      { return s.name }
func (s *sqsBackend) Server() string    { return "sqs=fauxqs" }
func (s *sqsBackend) Wire() *wireLedger { return s.wire.wireLedger }
func (s *sqsBackend) Args() []string {
	return []string{"--broker", "sqs://us-east-1", "--endpoint-url", s.wire.URL()}
}

func (s *sqsBackend) url(t *testing.T, q string) string {
	t.Helper()
	u, ok := s.urls.Load(q)
	if !ok {
		t.Fatalf("unknown queue %s", q)
	}
	return u.(string)
}

func (s *sqsBackend) Queue(t *testing.T, prefix string) string {
	t.Helper()
	name := brokertest.Name(t, prefix)
	out, err := s.c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	s.urls.Store(name, aws.ToString(out.QueueUrl))
	t.Cleanup(func() { _, _ = s.c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	return name
}

func (s *sqsBackend) Fill(t *testing.T, q string, ids []string) {
	t.Helper()
	url := s.url(t, q)
	ctx := context.Background()
	for i := 0; i < len(ids); i += 10 {
		batch := ids[i:min(i+10, len(ids))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
		for j, id := range batch {
			entries[j] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(id)}
		}
		out, err := s.c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			t.Fatalf("fill: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("fill: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
}

func (s *sqsBackend) attrs(t *testing.T, q string) (visible, hidden int) {
	t.Helper()
	out, err := s.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.url(t, q)),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		t.Fatalf("queue attributes: %v", err)
	}
	a := func(k sqstypes.QueueAttributeName) int {
		n, _ := strconv.Atoi(out.Attributes[string(k)])
		return n
	}
	return a(sqstypes.QueueAttributeNameApproximateNumberOfMessages) + a(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		a(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
}

// Settled: SQS counts hidden messages; nothing to wait for.
func (s *sqsBackend) Settled(t *testing.T, q string) bool { return true }

// Prefetch: window × (concurrency + 1); SQS hides what dlq holds.
func (s *sqsBackend) Prefetch() int { return inFlightBound }

func (s *sqsBackend) Count(t *testing.T, q string) int {
	t.Helper()
	v, h := s.attrs(t, q)
	return v + h
}

// Drain receives and deletes until the queue holds nothing, waiting for
// hidden messages to come back. Its receives hide messages for 10 s only:
// now and then fauxqs's answer to a receive is lost (the SDK warns "failed
// to discard remaining HTTP response body" and retries), and those
// messages stay hidden until the timeout ends.
func (s *sqsBackend) Drain(t *testing.T, q string) map[string]int {
	t.Helper()
	url := s.url(t, q)
	ctx := context.Background()
	seen := map[string]int{}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := s.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 10})
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if len(out.Messages) == 0 {
			v, h := s.attrs(t, q)
			if v+h == 0 {
				return seen
			}
			if time.Now().After(deadline) {
				t.Fatalf("drain %s: %d messages still hidden", q, h)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			seen[aws.ToString(m.Body)]++
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := s.c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatalf("drain: delete: %v", err)
		}
	}
}

// ---------------------------------------------------------------------------
// Checks

// outcome is what a trial left behind.
type outcome struct {
	lost, duplicates, leftInSource int
	// serverDuplicates are the duplicates of messages dlq sent only once
	// (counted on the wire, SQS): the server stored a send twice, or kept
	// a copy it should not have. They are the emulator's, not dlq's.
	serverDuplicates int
}

// dlqDuplicates are the duplicates dlq's own sends account for.
func (o outcome) dlqDuplicates() int { return o.duplicates - o.serverDuplicates }

// account drains the source and the destination and checks that every ID
// is in one of them exactly as the guarantees allow.
func account(t *testing.T, b backend, src, dst string, want []string) outcome {
	t.Helper()
	inSrc := b.Drain(t, src)
	inDst := b.Drain(t, dst)
	var o outcome
	for _, n := range inSrc {
		o.leftInSource += n
	}
	for _, id := range want {
		if inSrc[id]+inDst[id] == 0 {
			o.lost++
			if o.lost <= 5 {
				t.Errorf("message %s is in neither the source nor the destination", id)
			}
		}
		if n := inDst[id]; n > 1 {
			o.duplicates += n - 1
			if sent, ok := b.Wire().sends(dst, id); ok {
				o.serverDuplicates += max(0, (n-1)-max(0, sent-1))
			}
		}
	}
	wanted := make(map[string]bool, len(want))
	for _, id := range want {
		wanted[id] = true
	}
	for id := range inDst {
		if !wanted[id] {
			t.Errorf("the destination holds a message nobody sent: %q", id)
		}
	}
	return o
}

// redriveArgs are the arguments of one redrive from src to dst.
func redriveArgs(b backend, src, dst string, extra ...string) []string {
	args := append([]string{"redrive", src, "--to", "queue:" + dst, "--output", "json", "--yes",
		"--window", strconv.Itoa(faultWindow), "--concurrency", strconv.Itoa(faultConcurrency)}, b.Args()...)
	return append(args, extra...)
}

// ---------------------------------------------------------------------------
// 1. SIGKILL at random moments

type killTally struct {
	trials, early, lost, duplicates, resumed, inFlight, ackedOnSight int
	// maybeNotAcked are acknowledgements the resume report named as
	// possibly not received by the broker.
	maybeNotAcked int
	// beyondReport are duplicates the resume report did not account for
	// (in flight, or acknowledged in the run's last moments).
	beyondReport int
}

// killTrials kills dlq redrive at ten or more random moments of a redrive of
// n messages and checks each time that nothing was lost, that duplicates
// stay within what dlq holds unacknowledged, and that --resume finishes the
// move. The kills come one after the other; the finishing runs then go
// together (on SQS each waits for the messages its killed run had hidden,
// up to the visibility timeout).
//
// A kill moment is a point of progress, not of time: the trial kills dlq
// once the destination holds a random share of the messages (up to 90%),
// so that a slow or busy machine moves the moments with the run. One trial
// in five kills at a random instant of the first 300 ms instead, before or
// while the run starts its journal.
func killTrials(t *testing.T, b backend, n int) {
	rng := faultRand(t)
	started := time.Now()

	// A first, undisturbed run: nothing lost, nothing twice.
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("base", n)
	b.Fill(t, src, want)
	p := runDLQ(t, t.TempDir(), redriveArgs(b, src, dst)...)
	if p.code != exitOK {
		t.Fatalf("undisturbed redrive: exit %d\n%s", p.code, p.errOut.String())
	}
	if o := account(t, b, src, dst, want); o.lost != 0 || o.duplicates != 0 || o.leftInSource != 0 {
		t.Fatalf("undisturbed redrive: %+v", o)
	}
	t.Logf("%s: undisturbed redrive of %d messages took %s", b.Name(), n, p.took.Round(time.Millisecond))

	type trial struct {
		n        int
		src, dst string
		want     []string
		state    string
		at       string // the kill moment
		resumed  bool
		finish   *proc
	}
	var trials []*trial
	var tl killTally
	for attempt := 0; len(trials) < 10; attempt++ {
		if attempt >= 30 {
			t.Fatalf("only %d of 30 kills landed while dlq ran", len(trials))
		}
		tr := &trial{n: len(trials) + 1, state: t.TempDir(), src: b.Queue(t, "src"), dst: b.Queue(t, "dst"),
			want: ids(fmt.Sprintf("t%02d", attempt), n)}
		b.Fill(t, tr.src, tr.want)
		early := rng.IntN(5) == 0
		delay := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		target := 1 + rng.IntN(n*9/10)
		p := startDLQ(t, tr.state, redriveArgs(b, tr.src, tr.dst)...)
		if early {
			tr.at = "after " + delay.Round(time.Millisecond).String()
			select {
			case <-p.done:
			case <-time.After(delay):
			}
		} else {
			tr.at = fmt.Sprintf("at %d of %d moved", target, n)
			for !p.exited() && b.Count(t, tr.dst) < target {
				time.Sleep(time.Millisecond)
			}
		}
		if p.exited() {
			// The redrive finished before the kill moment came.
			if p.code != exitOK {
				t.Fatalf("attempt %d: exit %d\n%s", attempt, p.code, p.errOut.String())
			}
			tl.early++
			if o := account(t, b, tr.src, tr.dst, tr.want); o.lost != 0 || o.duplicates != 0 || o.leftInSource != 0 {
				t.Fatalf("attempt %d (finished before the kill): %+v", attempt, o)
			}
			continue
		}
		p.kill(t)
		trials = append(trials, tr)

		// Right after the kill every message is somewhere (SQS counts the
		// ones the dead process still hides; RabbitMQ returns them when it
		// drops the consumer).
		poll(t, 30*time.Second, "the killed consumer's messages back in the source", func() bool { return b.Settled(t, tr.src) })
		// The broker notices each of the dead process's connections on its
		// own, so on a busy machine a count can run behind for a moment. A
		// shortfall that lasts fails the test, but the trial still goes on
		// to its finishing run and the final count, which tell a message
		// counted late from one lost.
		var src, dst int
		deadline := time.Now().Add(30 * time.Second)
		for {
			if src, dst = b.Count(t, tr.src), b.Count(t, tr.dst); src+dst >= n || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if src+dst < n {
			t.Errorf("trial %d (kill %s): 30 s after the kill %d messages in the source and %d in the destination, %d in all, want at least %d",
				tr.n, tr.at, src, dst, src+dst, n)
		}
	}

	// Finish every trial: --resume when the run had started its journal, a
	// plain re-run when the kill came before it (or after its end line).
	for _, tr := range trials {
		args := redriveArgs(b, tr.src, tr.dst)
		if tr.resumed = interrupted(tr.state); tr.resumed {
			args = append(args, "--resume")
			tl.resumed++
		}
		tr.finish = startDLQ(t, tr.state, args...)
	}
	for _, tr := range trials {
		r := tr.finish
		if code := r.wait(t, 4*time.Minute); code != exitOK {
			t.Fatalf("trial %d (kill %s): finishing run exit %d\n%s", tr.n, tr.at, code, r.errOut.String())
		}
		sum := r.summary(t)
		inFlight, maybe := 0, 0
		if sum.Resumed != nil {
			inFlight, maybe = sum.Resumed.InFlight, sum.Resumed.MaybeNotAcked
			tl.inFlight += inFlight
			tl.maybeNotAcked += maybe
			tl.ackedOnSight += int(sum.Resumed.AckedOnSight)
		}
		o := account(t, b, tr.src, tr.dst, tr.want)
		tl.trials++
		tl.lost += o.lost
		tl.duplicates += o.duplicates
		beyond := max(0, o.duplicates-inFlight-maybe)
		tl.beyondReport += beyond
		t.Logf("trial %d: killed %s; resumed=%v in_flight=%d maybe_not_acked=%d acked_on_sight=%d finish_took=%s; lost=%d duplicates=%d left=%d",
			tr.n, tr.at, tr.resumed, inFlight, maybe, ackedOnSight(sum), r.took.Round(time.Millisecond), o.lost, o.duplicates, o.leftInSource)
		if tr.resumed && beyond > 0 {
			t.Errorf("trial %d: %d duplicates, but the resume report named only %d in flight and %d possibly not acknowledged", tr.n, o.duplicates, inFlight, maybe)
		}
		if o.lost != 0 || o.leftInSource != 0 {
			t.Errorf("trial %d: lost %d, %d left in the source after the finishing run\n%s", tr.n, o.lost, o.leftInSource, r.errOut.String())
		}
		if o.duplicates > b.Prefetch() {
			t.Errorf("trial %d: %d duplicates, more than the %d deliveries dlq holds unacknowledged at most", tr.n, o.duplicates, b.Prefetch())
		}
		if inFlight > inFlightBound {
			t.Errorf("trial %d: the journal had %d messages in flight, more than window × (concurrency+1) = %d", tr.n, inFlight, inFlightBound)
		}
	}
	wired := b.Wire().check(t)
	t.Logf("fault tally: scenario=sigkill %s backend=%s messages=%d trials=%d lost=%d duplicates=%d resumed=%d in_flight=%d maybe_not_acked=%d acked_on_sight=%d duplicates_beyond_report=%d finished_before_kill=%d removals_checked_on_wire=%d took=%s",
		b.Server(), b.Name(), n, tl.trials, tl.lost, tl.duplicates, tl.resumed, tl.inFlight, tl.maybeNotAcked, tl.ackedOnSight, tl.beyondReport, tl.early, wired, time.Since(started).Round(time.Second))
}

func ackedOnSight(s redrive.Summary) int64 {
	if s.Resumed == nil {
		return 0
	}
	return s.Resumed.AckedOnSight
}

// ---------------------------------------------------------------------------
// 2–3. Connections closed and servers restarted mid-run

// disruption is a fault injected while dlq redrives.
type disruption struct {
	name string
	// inject runs once the redrive has moved a fifth of the messages,
	// while dlq is frozen (SIGSTOP), so the fault is in place before dlq
	// can take another step however slow the machine is; it may block (a
	// restart returns once the server is back) and may let dlq go on
	// earlier with p.cont().
	inject func(t *testing.T, p *proc)
	// rerun are the extra arguments of the run that finishes the move.
	rerun []string
	// before, if set, runs once the source is filled, before dlq starts.
	before func(t *testing.T, src string)
}

// disruptRun redrives n messages at rate messages/s, injects d mid-run, and
// checks that dlq exits with 0 (it rode the fault out) or 3 (partly done),
// that nothing is lost, and that a re-run moves the rest.
func disruptRun(t *testing.T, b backend, n int, rate string, d disruption) {
	started := time.Now()
	state := t.TempDir()
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("d", n)
	b.Fill(t, src, want)
	if d.before != nil {
		d.before(t, src)
	}
	p := startDLQ(t, state, redriveArgs(b, src, dst, "--rate", rate)...)
	poll(t, 2*time.Minute, "a fifth of the messages moved", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended before the fault: exit %d\n%s", p.code, p.errOut.String())
		}
		return b.Count(t, dst) >= n/5
	})
	p.stop(t)
	atFault := b.Count(t, dst)
	if p.exited() || atFault >= n {
		p.cont()
		t.Fatalf("%s: dlq had moved %d of %d before the fault could be put in place", d.name, atFault, n)
	}
	d.inject(t, p)
	p.cont()
	// Still running once the fault is over: dlq rode it out (or is about
	// to fail on it); either way it struck mid-run.
	alive := !p.exited()
	code := p.wait(t, 3*time.Minute)
	if code != exitOK && code != exitPartial {
		t.Fatalf("%s: exit %d, want 0 or 3 (partly done)\n%s", d.name, code, p.errOut.String())
	}
	first := p.summary(t)
	if code == exitPartial && (first.Moved == 0 || first.Moved >= int64(n)) {
		t.Errorf("%s: exit 3 (partly done) after moving %d of %d", d.name, first.Moved, n)
	}
	t.Logf("%s: first run exit %d after moving %d of %d; stderr: %s", d.name, code, first.Moved, n, strings.TrimSpace(p.errOut.String()))

	args := redriveArgs(b, src, dst)
	how := "none"
	if first.Moved < int64(n) || code != exitOK {
		how = "plain"
		if interrupted(state) {
			args = append(args, d.rerun...)
			if len(d.rerun) > 0 {
				how = strings.TrimPrefix(strings.Join(d.rerun, " "), "--")
			}
		}
		// The re-run comes at once, as an operator's would, while a
		// quorum queue may still be electing a leader: dlq must wait for
		// it rather than read the queue as empty.
		r := runDLQ(t, state, args...)
		if r.code == exitPartial && r.summary(t).Hidden > 0 && strings.Contains(r.errOut.String(), "held unacknowledged") {
			// The re-run said that some messages are still held by the
			// interrupted run's connection (a node that died with it is
			// noticed only after about a minute), and that --resume moves
			// them once they are back: do as it says.
			t.Logf("%s: re-run exit 3: %s", d.name, strings.TrimSpace(r.errOut.String()))
			back := time.Now()
			poll(t, 5*time.Minute, "the held messages to come back", func() bool {
				if h, ok := b.(interface{ Held(*testing.T, string) int }); ok {
					return h.Held(t, src) == 0
				}
				return b.Settled(t, src)
			})
			t.Logf("%s: the held messages were back after %s", d.name, time.Since(back).Round(time.Second))
			how += ", " + how
			r = runDLQ(t, state, args...)
		}
		if r.code != exitOK {
			t.Fatalf("%s: re-run exit %d\n%s", d.name, r.code, r.errOut.String())
		}
	}
	o := account(t, b, src, dst, want)
	wired := b.Wire().check(t)
	t.Logf("fault tally: scenario=%s %s backend=%s messages=%d trials=1 lost=%d duplicates=%d server_duplicates=%d resent=%d at_fault=%d first_exit=%d first_moved=%d not_returned=%d alive_after_fault=%v rerun=%s removals_checked_on_wire=%d took=%s",
		d.name, b.Server(), b.Name(), n, o.lost, o.duplicates, o.serverDuplicates, first.Resent, atFault, code, first.Moved, first.NotReturned, alive, how, wired, time.Since(started).Round(time.Second))
	if o.lost != 0 || o.leftInSource != 0 {
		t.Errorf("%s: lost %d, %d left in the source after the re-run", d.name, o.lost, o.leftInSource)
	}
	if how == "none" && o.dlqDuplicates() > int(first.Resent) {
		// A run that rode the fault out and said nothing of duplicates
		// must have caused none beyond those it reports as sent again.
		// A duplicate of a message dlq sent once on the wire is the
		// server's (an emulator that stores a send twice over a restart).
		t.Errorf("%s: %d duplicates (%d of them the server's) after a clean exit that reported %d messages sent again", d.name, o.duplicates, o.serverDuplicates, first.Resent)
	}
	if o.dlqDuplicates() > b.Prefetch() {
		t.Errorf("%s: %d duplicates of dlq's sends, more than the %d deliveries dlq holds unacknowledged at most", d.name, o.dlqDuplicates(), b.Prefetch())
	}
}

// ---------------------------------------------------------------------------
// 4. connection.blocked

func blockedPausesAndResumes(t *testing.T, env brokertest.FaultEnv) {
	b := newRabbit(t, env.Rabbit, "classic")
	started := time.Now()
	const n = 3000
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("b", n)
	b.Fill(t, src, want)

	p := startDLQ(t, t.TempDir(), redriveArgs(b, src, dst, "--rate", "1000")...)
	poll(t, time.Minute, "a tenth of the messages moved", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended before the alarm: exit %d\n%s", p.code, p.errOut.String())
		}
		return b.Count(t, dst) >= n/10
	})
	// dlq is frozen while the alarm goes up, so it cannot finish first.
	p.stop(t)
	if moved := b.Count(t, dst); p.exited() || moved >= n {
		p.cont()
		t.Fatalf("dlq had moved %d of %d before the alarm could be raised", moved, n)
	}
	restore := env.MemoryAlarm(t)
	p.cont()
	poll(t, 2*time.Minute, "dlq's notice that it paused", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended under the memory alarm: exit %d\n%s", p.code, p.errOut.String())
		}
		return strings.Contains(p.errOut.String(), "paused")
	})
	// While blocked nothing more arrives at the destination.
	atPause := b.Count(t, dst)
	if p.exited() {
		t.Fatal("dlq ended while the broker blocked it")
	}
	restore()
	if code := p.wait(t, 2*time.Minute); code != exitOK {
		t.Fatalf("exit %d after the alarm cleared\n%s", code, p.errOut.String())
	}
	stderr := p.errOut.String()
	if !strings.Contains(stderr, "resumed") {
		t.Errorf("no notice that the run resumed:\n%s", stderr)
	}
	sum := p.summary(t)
	o := account(t, b, src, dst, want)
	wired := b.Wire().check(t)
	t.Logf("fault tally: scenario=connection-blocked %s backend=%s messages=%d trials=1 lost=%d duplicates=%d moved=%d at_pause=%d removals_checked_on_wire=%d took=%s",
		b.Server(), b.Name(), n, o.lost, o.duplicates, sum.Moved, atPause, wired, time.Since(started).Round(time.Second))
	if o.lost != 0 || o.leftInSource != 0 || o.duplicates != 0 || sum.Moved != n {
		t.Errorf("after the pause: moved %d, lost %d, %d left in the source, %d duplicates", sum.Moved, o.lost, o.leftInSource, o.duplicates)
	}
	if atPause >= n {
		t.Errorf("every message had moved before the pause showed: the alarm came too late to test anything")
	}
}

// ---------------------------------------------------------------------------
// 5. Several processes at once (main servers: nothing is disturbed)

func TestFaultConcurrentProcesses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		b     func(t *testing.T) backend
		n     int
		procs int
	}{
		{"rabbitmq-classic", func(t *testing.T) backend { return newRabbit(t, brokertest.RabbitMQ(t), "classic") }, 3000, 3},
		{"rabbitmq-quorum", func(t *testing.T) backend { return newRabbit(t, brokertest.RabbitMQ(t), "quorum") }, 3000, 3},
		{"sqs-fauxqs", func(t *testing.T) backend { return newSQS(t, "sqs-fauxqs", brokertest.SQS(t).Endpoint) }, 1500, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b(t)
			started := time.Now()
			src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
			want := ids("c", c.n)
			b.Fill(t, src, want)
			procs := make([]*proc, c.procs)
			for i := range procs {
				procs[i] = startDLQ(t, t.TempDir(), redriveArgs(b, src, dst)...)
			}
			var moved []string
			var total int64
			for i, p := range procs {
				if code := p.wait(t, 3*time.Minute); code != exitOK {
					t.Errorf("process %d: exit %d\n%s", i, code, p.errOut.String())
					continue
				}
				s := p.summary(t)
				moved = append(moved, strconv.FormatInt(s.Moved, 10))
				total += s.Moved
			}
			o := account(t, b, src, dst, want)
			wired := b.Wire().check(t)
			t.Logf("fault tally: scenario=concurrent-processes %s backend=%s messages=%d processes=%d moved_each=%s lost=%d duplicates=%d left=%d removals_checked_on_wire=%d took=%s",
				b.Server(), b.Name(), c.n, c.procs, strings.Join(moved, "+"), o.lost, o.duplicates, o.leftInSource, wired, time.Since(started).Round(time.Second))
			if o.lost != 0 || o.leftInSource != 0 {
				t.Errorf("lost %d, %d left in the source", o.lost, o.leftInSource)
			}
			// Competing consumers with no failure: each message is taken by
			// one process and acknowledged once, so nothing moves twice.
			if o.duplicates != 0 || total != int64(c.n) {
				t.Errorf("%d duplicates; the processes reported %d moved in all, want %d", o.duplicates, total, c.n)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// The fault tests, per server set. The RabbitMQ and SQS ones run side by
// side (they disturb different servers); within each, one after the other
// (a restart would disturb the rest) — except that SQS waits for hidden
// messages together.

func TestFaultRabbitMQ(t *testing.T) {
	t.Parallel()
	env := brokertest.Fault(t)
	rabbit := func(t *testing.T, kind string) backend { return newRabbit(t, env.Rabbit, kind) }
	t.Run("sigkill-classic", func(t *testing.T) { killTrials(t, rabbit(t, "classic"), 2000) })
	t.Run("sigkill-quorum", func(t *testing.T) { killTrials(t, rabbit(t, "quorum"), 2000) })
	for _, kind := range []string{"classic", "quorum"} {
		t.Run("close-all-connections-"+kind, func(t *testing.T) {
			disruptRun(t, rabbit(t, kind), 3000, "1000", disruption{
				name:   "close-all-connections",
				inject: func(t *testing.T, _ *proc) { env.Brokers(t, "rabbitmqctl", "close_all_connections", "dlq fault test") },
			})
		})
	}
	t.Run("connection-blocked", func(t *testing.T) { blockedPausesAndResumes(t, env) })
	t.Run("node-restart", func(t *testing.T) {
		disruptRun(t, rabbit(t, "quorum"), 3000, "1000", disruption{
			name:   "node-restart",
			inject: func(t *testing.T, _ *proc) { env.Brokers(t, "restart-rabbitmq") },
			rerun:  []string{"--resume"},
		})
	})
}

func TestFaultSQS(t *testing.T) {
	t.Parallel()
	if os.Getenv("DLQ_FAULT_RABBITMQ_ONLY") == "1" {
		t.Skip("this pass has only RabbitMQ fault servers; the SQS fault tests run in the pass with the fauxqs fault server")
	}
	env := brokertest.Fault(t)
	b := newSQS(t, "sqs-fauxqs-persistent", env.SQS.Endpoint)
	t.Run("restart", func(t *testing.T) {
		// fauxqs restarts (both emulators of the fault set do) and keeps its
		// queues and messages on disk; dlq's requests retry through it.
		disruptRun(t, b, 2000, "400", disruption{
			name:   "sqs-restart",
			inject: func(t *testing.T, _ *proc) { env.Brokers(t, "restart-sqs") },
			rerun:  []string{"--resume"},
		})
	})
	back := make(chan struct{})
	var backOnce sync.Once
	up := func() { backOnce.Do(func() { close(back) }) }
	t.Run("hidden", func(t *testing.T) {
		t.Run("stop-start", func(t *testing.T) {
			t.Parallel()
			defer up()
			// The emulator stays down until dlq gave up; what it had taken
			// stays hidden, and --resume waits for it.
			disruptRun(t, b, 2000, "400", disruption{
				name: "sqs-down",
				inject: func(t *testing.T, p *proc) {
					defer up()
					t.Cleanup(func() { env.Brokers(t, "start-sqs") })
					env.Brokers(t, "stop-sqs")
					p.cont()
					select {
					case <-p.done:
					case <-time.After(2 * time.Minute):
						t.Errorf("dlq still runs two minutes after the emulator stopped")
					}
					env.Brokers(t, "start-sqs")
				},
				rerun: []string{"--resume"},
			})
		})
		t.Run("sigkill", func(t *testing.T) {
			t.Parallel()
			<-back
			// The hidden messages of the stop-start run are back first, so
			// that its --resume and these trials do not wait on each other.
			killTrials(t, newSQS(t, "sqs-fauxqs", env.SQS.Endpoint), 1500)
		})
	})
}
