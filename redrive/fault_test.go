package redrive_test

// The fault scenarios of brokertest.Faults on RabbitMQ and SQS: the
// harnesses that make, fill, count and drain their queues with the servers'
// own clients, and the tests that run the scenarios on the separate fault
// servers (brokertest.Fault), which they may restart and block. The
// concurrent-process scenario, which disturbs no server, runs on the main
// ones.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
)

// ---------------------------------------------------------------------------
// Harnesses: create queues, fill them with messages carrying unique IDs (the
// body is the ID), count and drain them with the brokers' own clients, so a
// bug in dlq's adapters cannot hide a loss.

var (
	_ brokertest.ConnectionCloser = rabbitCloser{}
	_ brokertest.Blocker          = rabbitBlocker{}
	_ brokertest.Restarter        = rabbitRestarter{}
	_ brokertest.Restarter        = sqsRestarter{}
	_ brokertest.Stopper          = sqsStopper{}
)

// rabbitBackend is a harness of one queue kind on one RabbitMQ node (or a
// cluster, newCluster) with a wire proxy in front of it.
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
	wire    *brokertest.WireLedger

	pollMu sync.Mutex
	poll   *amqp.Channel // a channel kept open for counting
	pollC  *amqp.Connection
}

func newRabbit(t testing.TB, env brokertest.RabbitEnv, kind string) *rabbitBackend {
	t.Helper()
	r := &rabbitBackend{name: "rabbitmq-" + kind, kind: kind, url: env.AMQPURL, urls: []string{env.AMQPURL}, mgmt: env.MgmtURL, wire: brokertest.NewWireLedger()}
	r.version = rabbitVersion(t, env.MgmtURL, env.AMQPURL)
	r.dlqURLs = []string{proxiedURL(t, env.AMQPURL, r.wire)}
	t.Cleanup(r.closePoll)
	return r
}

// proxiedURL is url with its host replaced by a wire proxy in front of it
// that records into ledger, and a 60 s heartbeat.
func proxiedURL(t testing.TB, rawURL string, ledger *brokertest.WireLedger) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	w := brokertest.NewAMQPWire(t, u.Host, ledger)
	u.Host = w.Addr()
	q := u.Query()
	q.Set("heartbeat", "60")
	u.RawQuery = q.Encode()
	return u.String()
}

// rabbitVersion asks the management API for the broker's version.
func rabbitVersion(t testing.TB, mgmt, amqpURL string) string {
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
		t.Fatalf("rabbitmq version: %s", brokertest.Redact(err.Error()))
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

func (r *rabbitBackend) Name() string                 { return r.name }
func (r *rabbitBackend) Server() string               { return "rabbitmq=" + r.version }
func (r *rabbitBackend) Wire() *brokertest.WireLedger { return r.wire }
func (r *rabbitBackend) Args() []string {
	return []string{"--broker", strings.Join(r.dlqURLs, ","), "--management-url", r.mgmt}
}

// dial connects, retrying while the node restarts.
func (r *rabbitBackend) dial(t testing.TB) *amqp.Connection {
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
			t.Fatalf("connect to RabbitMQ: %s", brokertest.Redact(err.Error()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// with runs fn on a fresh channel (connections may be closed under the
// test by the faults it injects).
func (r *rabbitBackend) with(t testing.TB, fn func(ch *amqp.Channel) error) {
	t.Helper()
	conn := r.dial(t)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	if err := fn(ch); err != nil {
		t.Fatal(brokertest.Redact(err.Error()))
	}
}

func (r *rabbitBackend) Queue(t testing.TB, prefix string) string {
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
			t.Logf("delete queue %s: %s", name, brokertest.Redact(err.Error()))
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
		}
	})
	return name
}

func (r *rabbitBackend) Fill(t testing.TB, q string, ids []string) {
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
func (r *rabbitBackend) inspect(t testing.TB, q string) amqp.Queue {
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
			t.Fatalf("inspect %s: %s", q, brokertest.Redact(err.Error()))
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

func (r *rabbitBackend) depth(t testing.TB, q string) int { return r.inspect(t, q).Messages }

// Settled: the queue returns a consumer's unacknowledged messages when it
// drops the consumer.
func (r *rabbitBackend) Settled(t testing.TB, q string) bool { return r.inspect(t, q).Consumers == 0 }

// Prefetch: window × (concurrency + 1), and on classic queues the 1000
// messages the engine may hold to put back in place (the RabbitMQ
// HoldInPlace trait).
func (r *rabbitBackend) Prefetch() int {
	if r.kind == "classic" {
		return brokertest.FaultInFlight + 1000
	}
	return brokertest.FaultInFlight
}

// Count is the ready messages: a consumer's unacknowledged messages come
// back when its connection goes, and the tests count only after dlq exited.
func (r *rabbitBackend) Count(t testing.TB, q string) int { return r.depth(t, q) }

func (r *rabbitBackend) Drain(t testing.TB, q string) map[string]int {
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
	wire     *brokertest.SQSWire // dlq's way to the endpoint
	c        *sqs.Client
	urls     sync.Map // name → URL
}

func newSQS(t testing.TB, name, endpoint string) *sqsBackend {
	t.Helper()
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		// The emulator may be restarting, and the trials poll its counts
		// every millisecond: every attempt is retried, up to 10, without
		// the client's retry quota (which a burst of failed polls would
		// exhaust, failing the test on the harness's own read).
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 10
			so.RateLimiter = ratelimit.None
		})
	})
	return &sqsBackend{name: name, endpoint: endpoint, c: c, wire: brokertest.NewSQSWire(t, endpoint)}
}

func (s *sqsBackend) Name() string                 { return s.name }
func (s *sqsBackend) Server() string               { return "sqs=fauxqs" }
func (s *sqsBackend) Wire() *brokertest.WireLedger { return s.wire.WireLedger }
func (s *sqsBackend) Args() []string {
	return []string{"--broker", "sqs://us-east-1", "--endpoint-url", s.wire.URL()}
}

func (s *sqsBackend) url(t testing.TB, q string) string {
	t.Helper()
	u, ok := s.urls.Load(q)
	if !ok {
		t.Fatalf("unknown queue %s", q)
	}
	return u.(string)
}

func (s *sqsBackend) Queue(t testing.TB, prefix string) string {
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

func (s *sqsBackend) Fill(t testing.TB, q string, ids []string) {
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

func (s *sqsBackend) attrs(t testing.TB, q string) (visible, hidden int) {
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

// Held is what SQS hides of q: messages received and not yet deleted, or
// whose receive's answer was lost.
func (s *sqsBackend) Held(t testing.TB, q string) int {
	t.Helper()
	_, h := s.attrs(t, q)
	return h
}

// Settled: SQS counts hidden messages; nothing to wait for.
func (s *sqsBackend) Settled(t testing.TB, q string) bool { return true }

// Prefetch: window × (concurrency + 1); SQS hides what dlq holds.
func (s *sqsBackend) Prefetch() int { return brokertest.FaultInFlight }

func (s *sqsBackend) Count(t testing.TB, q string) int {
	t.Helper()
	v, h := s.attrs(t, q)
	return v + h
}

// Drain receives and deletes until the queue holds nothing, waiting for
// hidden messages to come back. Its receives hide messages for 10 s only:
// now and then fauxqs's answer to a receive is lost (the SDK warns "failed
// to discard remaining HTTP response body" and retries), and those
// messages stay hidden until the timeout ends.
func (s *sqsBackend) Drain(t testing.TB, q string) map[string]int {
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

// Capabilities of the RabbitMQ fault servers, one harness type each, so that
// each fault strikes once per pass: connections closed on both queue kinds,
// the memory alarm on classic queues, a node restart on quorum queues (the
// kind whose re-run must wait for a leader election).

type rabbitCloser struct {
	*rabbitBackend
	env brokertest.FaultEnv
}

func (r rabbitCloser) CloseConnections(t testing.TB) {
	r.env.Brokers(t, "rabbitmqctl", "close_all_connections", "dlq fault test")
}

type rabbitBlocker struct{ rabbitCloser }

func (r rabbitBlocker) Block(t testing.TB) (unblock func()) { return r.env.MemoryAlarm(t) }

type rabbitRestarter struct{ rabbitCloser }

func (r rabbitRestarter) Restart(t testing.TB) { r.env.Brokers(t, "restart-rabbitmq") }

func (r rabbitRestarter) TallyName(scenario string) string {
	if scenario == "restart" {
		return "node-restart"
	}
	return scenario
}

// sqsRestarter and sqsStopper are SQS harnesses on the fault emulator,
// which they may restart, and stop and start; fauxqs keeps its queues and
// messages on disk across both.
type sqsRestarter struct {
	*sqsBackend
	env brokertest.FaultEnv
}

func (s sqsRestarter) Restart(t testing.TB) { s.env.Brokers(t, "restart-sqs") }

func (s sqsRestarter) TallyName(string) string { return "sqs-restart" }

// started, if set, is called each time Start has started the emulator.
type sqsStopper struct {
	*sqsBackend
	env     brokertest.FaultEnv
	started func()
}

func (s sqsStopper) Stop(t testing.TB) { s.env.Brokers(t, "stop-sqs") }

func (s sqsStopper) Start(t testing.TB) {
	s.env.Brokers(t, "start-sqs")
	if s.started != nil {
		s.started()
	}
}

func (s sqsStopper) TallyName(string) string { return "sqs-down" }

// ---------------------------------------------------------------------------
// The fault tests, per server set. The RabbitMQ and SQS ones run side by
// side (they disturb different servers); within each, one after the other
// (a restart would disturb the rest).

func TestFaultRabbitMQ(t *testing.T) {
	t.Parallel()
	env := brokertest.Fault(t)
	t.Run("classic", func(t *testing.T) {
		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness {
			return rabbitBlocker{rabbitCloser{newRabbit(t, env.Rabbit, "classic"), env}}
		}, brokertest.FaultOptions{KillMessages: 2000, Messages: 3000, Rate: "1000"})
	})
	t.Run("quorum", func(t *testing.T) {
		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness {
			return rabbitRestarter{rabbitCloser{newRabbit(t, env.Rabbit, "quorum"), env}}
		}, brokertest.FaultOptions{KillMessages: 2000, Messages: 3000, Rate: "1000"})
	})
}

func TestFaultSQS(t *testing.T) {
	t.Parallel()
	if os.Getenv("DLQ_FAULT_RABBITMQ_ONLY") == "1" {
		t.Skip("this pass has only RabbitMQ fault servers; the SQS fault tests run in the pass with the fauxqs fault server")
	}
	env := brokertest.Fault(t)
	persistent := func(t testing.TB) *sqsBackend { return newSQS(t, "sqs-fauxqs-persistent", env.SQS.Endpoint) }
	o := brokertest.FaultOptions{Messages: 2000, Rate: "400",
		Skip: map[string]string{"sigkill": "the kill trials restart nothing: they run in TestFaultSQS/hidden/sigkill, beside stop-start"}}
	t.Run("restart", func(t *testing.T) {
		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness { return sqsRestarter{persistent(t), env} }, o)
	})
	// The kill trials run beside stop-start once its emulator is back,
	// while its --resume waits for the messages the stopped emulator had
	// hidden: the two waits overlap.
	back := make(chan struct{})
	var backOnce sync.Once
	up := func() { backOnce.Do(func() { close(back) }) }
	t.Run("hidden", func(t *testing.T) {
		t.Run("stop-start", func(t *testing.T) {
			t.Parallel()
			defer up()
			brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness { return sqsStopper{persistent(t), env, up} }, o)
		})
		t.Run("sigkill", func(t *testing.T) {
			t.Parallel()
			<-back
			brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness {
				return newSQS(t, "sqs-fauxqs", env.SQS.Endpoint)
			}, brokertest.FaultOptions{KillMessages: 1500})
		})
	})
}

// Several processes at once, on the main servers: nothing is disturbed.
func TestFaultConcurrentProcesses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		h     func(t testing.TB) brokertest.FaultHarness
		n     int
		procs int
	}{
		{"rabbitmq-classic", func(t testing.TB) brokertest.FaultHarness { return newRabbit(t, brokertest.RabbitMQ(t), "classic") }, 3000, 3},
		{"rabbitmq-quorum", func(t testing.TB) brokertest.FaultHarness { return newRabbit(t, brokertest.RabbitMQ(t), "quorum") }, 3000, 3},
		{"sqs-fauxqs", func(t testing.TB) brokertest.FaultHarness { return newSQS(t, "sqs-fauxqs", brokertest.SQS(t).Endpoint) }, 1500, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			brokertest.Concurrency(t, c.h, brokertest.FaultOptions{Messages: c.n, Processes: c.procs})
		})
	}
}
