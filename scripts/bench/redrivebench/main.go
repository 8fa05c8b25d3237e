// Command redrivebench measures dlq redrive against the brokers' own ways of
// moving messages: a RabbitMQ dynamic shovel, and a bare SQS
// receive/send/delete loop. scripts/bench/redrive.sh runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/broker/sqs/sqsbench"
)

func main() {
	backend := flag.String("backend", "sqs", "rabbitmq or sqs")
	n := flag.Int("n", 20000, "messages")
	kind := flag.String("kind", "classic", "rabbitmq queue type: classic or quorum")
	conc := flag.Int("concurrency", 4, "workers (sqs)")
	bin := flag.String("dlq", "bin/dlq", "dlq binary")
	extra := flag.String("args", "", "more arguments for dlq redrive, space-separated (e.g. \"--window 500\")")
	runs := flag.Int("runs", 1, "repeat the pair this often and report the median ratio (the machine may be shared)")
	fillHow := flag.String("fill", "dead-lettered", "rabbitmq: how the source gets its messages: dead-lettered (rejected from a work queue, so each carries x-death, as in a real DLQ) or published (straight into it, no death headers)")
	label := flag.String("label", "", "added to each result's heading (e.g. how CPUs are shared)")
	waitFor := flag.Duration("wait", 10*time.Minute, "the longest any one wait may take (a fill, a mover, a shovel deleting itself) before the benchmark fails, saying what it waited for")
	flag.Parse()
	dlqArgs = strings.Fields(*extra)
	maxWait = *waitFor
	// SIGINT and SIGTERM (timeout(1)) end every wait, so that the shovels
	// and queues are still deleted on the way out.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []result
	for i := 0; i < *runs; i++ {
		var r result
		var err error
		switch *backend {
		case "sqs":
			r, err = benchSQS(ctx, *bin, *n, *conc)
		case "rabbitmq":
			r, err = benchRabbit(ctx, *bin, *n, *kind, *fillHow, i)
		default:
			err = fmt.Errorf("unknown backend %q", *backend)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "redrivebench:", err)
			stop()
			os.Exit(1)
		}
		if *label != "" {
			r.what += ", " + *label
		}
		if *runs > 1 {
			fmt.Printf("run %d: ", i+1)
			r.print()
		}
		results = append(results, r)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].ratio() < results[j].ratio() })
	med := results[len(results)/2]
	if *runs > 1 {
		fmt.Print("median: ")
	}
	med.print()
	if *runs > 1 && med.net > 0 {
		sort.Slice(results, func(i, j int) bool { return results[i].netRatio() < results[j].netRatio() })
		fmt.Printf("    median ratio against the shovel over TCP: %.2f×\n", results[len(results)/2].netRatio())
	}
	if *runs > 1 && med.local > 0 {
		sort.Slice(results, func(i, j int) bool { return results[i].localRatio() < results[j].localRatio() })
		fmt.Printf("    median ratio against the local shovel: %.2f×\n", results[len(results)/2].localRatio())
	}
}

// result is one set of timed moves of the same messages.
type result struct {
	what, baseName string
	n              int
	base, dlq      time.Duration
	// baseDone is when a shovel had also acknowledged everything at the
	// source and deleted itself, the point at which a dlq run has ended
	// (0 for the SQS loop, which is done when base is).
	baseDone time.Duration
	// net is a shovel over TCP (RabbitMQ only); base is then the shovel
	// inside the broker.
	net time.Duration
	// local is a shovel of protocol local (RabbitMQ 4.2 and later; 0
	// elsewhere), localDone as baseDone.
	local, localDone time.Duration
}

func (r result) ratio() float64 { return r.base.Seconds() / r.dlq.Seconds() }

func (r result) netRatio() float64 { return r.net.Seconds() / r.dlq.Seconds() }

func (r result) localRatio() float64 { return r.local.Seconds() / r.dlq.Seconds() }

func (r result) rate(d time.Duration) float64 { return float64(r.n) / d.Seconds() }

func (r result) print() {
	fmt.Printf("%s: dlq redrive %.0f msg/s\n", r.what, r.rate(r.dlq))
	if r.net == 0 {
		fmt.Printf("    %-28s %8.0f msg/s   dlq ratio %.2f×\n", r.baseName, r.rate(r.base), r.ratio())
		return
	}
	fmt.Printf("    %-28s %8.0f msg/s   dlq ratio %.2f×   (done, acknowledged: %.0f msg/s, %.2f×)\n",
		r.baseName+" amqp:// (in broker)", r.rate(r.base), r.ratio(), r.rate(r.baseDone), r.baseDone.Seconds()/r.dlq.Seconds())
	fmt.Printf("    %-28s %8.0f msg/s   dlq ratio %.2f×\n", r.baseName+" amqp://HOST (TCP)", r.rate(r.net), r.netRatio())
	if r.local > 0 {
		fmt.Printf("    %-28s %8.0f msg/s   dlq ratio %.2f×   (done, acknowledged: %.0f msg/s, %.2f×)\n",
			r.baseName+" local (in broker)", r.rate(r.local), r.localRatio(), r.rate(r.localDone), r.localDone.Seconds()/r.dlq.Seconds())
	}
}

// dlqArgs are added to every dlq redrive the benchmark runs.
var dlqArgs []string

// maxWait bounds every wait of the benchmark (-wait): one that takes
// longer fails, naming what it waited for, instead of hanging.
var maxWait = 10 * time.Minute

func runDLQ(ctx context.Context, bin string, args ...string) (time.Duration, error) {
	// Without a terminal a redrive needs --yes.
	args = append(append(args, "--yes"), dlqArgs...)
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	start := time.Now()
	c := exec.CommandContext(ctx, bin, args...)
	// Interrupted, dlq finishes its in-flight messages before it stops.
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 30 * time.Second
	c.Env = append(os.Environ(), "XDG_STATE_HOME="+os.TempDir()+"/dlq-bench-state")
	out, err := c.CombinedOutput()
	if os.Getenv("BENCH_VERBOSE") != "" {
		os.Stderr.Write(out)
	}
	if err != nil {
		why := err.Error()
		if ctx.Err() == context.DeadlineExceeded {
			why = fmt.Sprintf("still running after %s (-wait), interrupted: %v", maxWait, err)
		}
		// Never print the broker password that the URL carries.
		line := broker.Redact(strings.Join(args, " ") + ": " + why + "\n" + string(out))
		return 0, fmt.Errorf("dlq %s", line)
	}
	return time.Since(start), nil
}

// poll calls done every interval until it reports true, and fails after
// maxWait or when ctx ends, saying what it waited for and, from state, how
// far it got.
func poll(ctx context.Context, what string, interval time.Duration, done func() bool, state func() string) error {
	deadline := time.Now().Add(maxWait)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s (-wait) for %s: %s", maxWait, what, state())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s (%v): %s", what, context.Cause(ctx), state())
		case <-time.After(interval):
		}
	}
	return nil
}

// flushQuorumLogs has the local test broker (scripts/brokers) write its
// quorum queues' log out to segment files before a quorum queue is deleted.
// RabbitMQ 3.10's Raft library (ra 2.2) crashes its segment writer when a
// queue's directory is deleted while the writer flushes that queue's part
// of the log, which makes every quorum queue unavailable for a while
// (rabbitmq/ra#484, fixed in later versions): a benchmark deleting its
// queues after each run hit it. Elsewhere this does nothing.
func flushQuorumLogs() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scripts/brokers", "rabbitmqctl", "eval",
		"ra_log_wal:force_roll_over(ra_log_wal), ra_log_segment_writer:await(ra_log_segment_writer).").CombinedOutput()
	if err != nil && os.Getenv("BENCH_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "redrivebench: flushing the quorum log: %v: %s\n", err, out)
	}
}

// --- SQS ---------------------------------------------------------------

func benchSQS(ctx context.Context, bin string, n, conc int) (res result, err error) {
	ep := os.Getenv("DLQ_TEST_SQS_ENDPOINT")
	if ep == "" {
		return result{}, fmt.Errorf("DLQ_TEST_SQS_ENDPOINT not set: eval \"$(scripts/brokers env)\"")
	}
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep), Credentials: aws.AnonymousCredentials{}}, dlqsqs.OwnRequestBodies)
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	mk := func(name string) (string, error) {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.QueueUrl), nil
	}
	dlq, err := mk("bench-dlq-" + tag)
	if err != nil {
		return result{}, err
	}
	dst, err := mk("bench-dst-" + tag)
	if err != nil {
		return result{}, err
	}
	defer c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)})
	defer c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dst)})
	body := strings.Repeat("x", 1024)
	per := n / 10 / 8
	fill := func() error { return sqsbench.Fill(ctx, c, dlq, body, 8, per) }
	purge := func() { c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(dst)}) }
	total := per * 80
	if err := fill(); err != nil {
		return result{}, err
	}
	// doneAt measures a move the same way for both: from start until the
	// source holds nothing (visible or in flight) and the destination holds
	// every message, polled every 10ms. Neither side's final empty long
	// poll (which only tells it that it is done) is counted.
	count := func(u string, inFlight bool) int {
		names := []types.QueueAttributeName{"ApproximateNumberOfMessages"}
		if inFlight {
			names = append(names, "ApproximateNumberOfMessagesNotVisible")
		}
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: names})
		if err != nil {
			return -1
		}
		n := 0
		for _, v := range out.Attributes {
			k, _ := strconv.Atoi(v)
			n += k
		}
		return n
	}
	type doneTime struct {
		took time.Duration
		err  error
	}
	doneAt := func(start time.Time) <-chan doneTime {
		done := make(chan doneTime, 1)
		go func() {
			err := poll(ctx, fmt.Sprintf("the move of %d messages", total), 10*time.Millisecond,
				func() bool { return count(dlq, true) == 0 && count(dst, false) == total },
				func() string {
					return fmt.Sprintf("source holds %d (with those in flight), destination %d", count(dlq, true), count(dst, false))
				})
			done <- doneTime{time.Since(start), err}
		}()
		return done
	}
	// Bare loop: receive 10, send 10, delete 10, with conc workers.
	start := time.Now()
	bareDone := doneAt(start)
	moved := sqsbench.BareMove(ctx, c, dlq, dst, conc, int64(total))
	base := <-bareDone
	if base.err != nil {
		return result{}, fmt.Errorf("bare loop: %w", base.err)
	}
	if moved != int64(total) {
		return result{}, fmt.Errorf("bare loop moved %d of %d", moved, total)
	}
	purge()
	if err := fill(); err != nil {
		return result{}, err
	}
	dlqDone := doneAt(time.Now())
	if _, err := runDLQ(ctx, bin, "--broker", "sqs://us-east-1", "--endpoint-url", ep, "redrive", "bench-dlq-"+tag, "--to", "queue:bench-dst-"+tag,
		"--concurrency", strconv.Itoa(conc)); err != nil {
		return result{}, err
	}
	took := <-dlqDone
	if took.err != nil {
		return result{}, fmt.Errorf("dlq redrive: %w", took.err)
	}
	return result{what: fmt.Sprintf("sqs %d×1KiB c=%d", total, conc), n: total, base: base.took, dlq: took.took, baseName: "bare batch loop"}, nil
}

// --- RabbitMQ ------------------------------------------------------------

type mgmt struct{ base, user, pass string }

// mgmtClient bounds every management API request.
var mgmtClient = &http.Client{Timeout: 30 * time.Second}

func (m mgmt) do(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var b bytes.Buffer
	if in != nil {
		json.NewEncoder(&b).Encode(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.base+"/api"+path, &b)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(m.user, m.pass)
	req.Header.Set("Content-Type", "application/json")
	return mgmtClient.Do(req)
}

// get decodes the JSON document at path into out.
func (m mgmt) get(ctx context.Context, path string, out any) error {
	resp, err := m.do(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// version is the broker's RabbitMQ version as major, minor.
func (m mgmt) version(ctx context.Context) (major, minor int, err error) {
	var o struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := m.get(ctx, "/overview", &o); err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscanf(o.Version, "%d.%d", &major, &minor); err != nil {
		return 0, 0, fmt.Errorf("RabbitMQ version %q: %v", o.Version, err)
	}
	return major, minor, nil
}

// shovelState is what the management API says of a running shovel, for
// an error message: its state and, when it failed, why.
func (m mgmt) shovelState(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var ss []map[string]any
	if err := m.get(ctx, "/shovels/%2F", &ss); err != nil {
		return "shovel status unknown: " + err.Error()
	}
	for _, s := range ss {
		if s["name"] == name {
			return fmt.Sprintf("shovel %s is %v %v", name, s["state"], s["reason"])
		}
	}
	return "shovel " + name + " is not running"
}

// depth is the ready count from queue.declare passive: exact at once,
// unlike the management API's depth, which is sampled every
// collect_statistics_interval and would add up to that much to a measured
// time.
func depth(conn *amqp.Connection, q string) (int64, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	return int64(st.Messages), err
}

// settle is the pause after filling a queue, before a mover is timed.
const settle = 3 * time.Second

// The shovels a RabbitMQ set compares with dlq: a dynamic shovel of
// protocol amqp091 inside the broker (URIs amqp://) and over TCP (the
// broker's address), and on RabbitMQ 4.2 and later one of protocol local.
const (
	shovelInBroker = "amqp091 in broker"
	shovelTCP      = "amqp091 over TCP"
	shovelLocal    = "local"
)

// localShovelSince is the first RabbitMQ version with the local shovel
// protocol.
var localShovelSince = [2]int{4, 2}

func benchRabbit(ctx context.Context, bin string, n int, kind, fillHow string, first int) (res result, err error) {
	if fillHow != "dead-lettered" && fillHow != "published" {
		return result{}, fmt.Errorf("-fill %q: want dead-lettered or published", fillHow)
	}
	amqpURL := os.Getenv("DLQ_TEST_AMQP_URL")
	if amqpURL == "" {
		return result{}, fmt.Errorf("DLQ_TEST_AMQP_URL not set: eval \"$(scripts/brokers env)\"")
	}
	u, _ := url.Parse(amqpURL)
	pass, _ := u.User.Password()
	m := mgmt{os.Getenv("DLQ_TEST_MGMT_URL"), u.User.Username(), pass}
	major, minor, err := m.version(ctx)
	if err != nil {
		return result{}, fmt.Errorf("management API %s: %w", m.base, err)
	}
	hasLocal := major > localShovelSince[0] || major == localShovelSince[0] && minor >= localShovelSince[1]
	conn, err := amqp.DialConfig(amqpURL, amqp.Config{Dial: amqp.DefaultDial(30 * time.Second)})
	if err != nil {
		return result{}, fmt.Errorf("dial: %s", broker.Redact(err.Error()))
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return result{}, err
	}
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	// Each mover gets new queues: a quorum queue's log keeps growing over
	// refills, and compacting it in the background would slow whichever
	// mover runs then.
	var src, dst, into string
	args := amqp.Table{"x-queue-type": kind}
	remove := func() {
		if kind == "quorum" && src != "" {
			flushQuorumLogs()
		}
		for _, q := range []string{src, dst, into} {
			if q != "" {
				ch.QueueDelete(q, false, false, false)
			}
		}
	}
	defer remove()
	// Every shovel the set creates is deleted on the way out, whether it
	// finished or not (a failed or interrupted run leaves none behind),
	// and before the queues are: a running shovel declares its queues
	// again.
	var shovels []string
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, name := range shovels {
			if resp, err := m.do(dctx, "DELETE", "/parameters/shovel/%2F/"+name, nil); err == nil {
				resp.Body.Close()
			} else {
				fmt.Fprintf(os.Stderr, "redrivebench: delete shovel %s: %v\n", name, err)
			}
		}
	}()
	sets := 0
	declare := func() error {
		remove()
		sets++
		id := fmt.Sprintf("%s-%s-%d", kind, tag, sets)
		src, dst, into = "bench-dlq-"+id, "bench-dst-"+id, ""
		for _, q := range []string{src, dst} {
			if _, err := ch.QueueDeclare(q, true, false, false, false, args); err != nil {
				return err
			}
		}
		// A dead-lettered fill publishes to a work queue and rejects every
		// message from it into the source, as a failing consumer would:
		// each then carries the x-death and x-first-death-* headers that a
		// real DLQ's messages carry (and that dlq strips by default).
		into = src
		if fillHow == "dead-lettered" {
			into = "bench-work-" + id
			if _, err := ch.QueueDeclare(into, true, false, false, false, amqp.Table{
				"x-dead-letter-exchange": "", "x-dead-letter-routing-key": src}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := ch.Confirm(false); err != nil {
		return result{}, err
	}
	body := bytes.Repeat([]byte("x"), 1024)
	depthOf := func(q string) string {
		d, err := depth(conn, q)
		if err != nil {
			return fmt.Sprintf("%s: %v", q, err)
		}
		return fmt.Sprintf("%s holds %d", q, d)
	}
	reject := func() error {
		rc, err := conn.Channel()
		if err != nil {
			return err
		}
		defer rc.Close()
		if err := rc.Qos(2000, 0, false); err != nil {
			return err
		}
		ds, err := rc.ConsumeWithContext(ctx, into, "", false, false, false, false, nil)
		if err != nil {
			return err
		}
		deadline := time.NewTimer(maxWait)
		defer deadline.Stop()
		for i := 1; i <= n; i++ {
			var d amqp.Delivery
			var ok bool
			select {
			case d, ok = <-ds:
			case <-deadline.C:
				return fmt.Errorf("fill: waited %s (-wait) for message %d of %d from %s to reject: %s", maxWait, i, n, into, depthOf(into))
			case <-ctx.Done():
				return fmt.Errorf("fill: stopped waiting for message %d of %d from %s (%v)", i, n, into, context.Cause(ctx))
			}
			if !ok {
				return fmt.Errorf("fill: the work queue's consumer was cancelled")
			}
			if i%500 == 0 || i == n {
				if err := d.Nack(true, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	fill := func() error {
		for i := 0; i < n; i += 1000 {
			var ds []*amqp.DeferredConfirmation
			for j := i; j < i+1000 && j < n; j++ {
				d, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", into, false, false,
					amqp.Publishing{DeliveryMode: amqp.Persistent, MessageId: fmt.Sprintf("m%d", j), Body: body})
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
			wctx, cancel := context.WithTimeout(ctx, maxWait)
			for _, d := range ds {
				if ok, err := d.WaitContext(wctx); err != nil || !ok {
					cancel()
					if err != nil {
						return fmt.Errorf("fill: waiting up to %s (-wait) for the confirm of message %d of %d to %s: %v", maxWait, d.DeliveryTag, n, into, err)
					}
					return fmt.Errorf("fill: the broker nacked message %d of %d to %s", d.DeliveryTag, n, into)
				}
			}
			cancel()
		}
		if into != src {
			return reject()
		}
		return nil
	}
	wait := func(q string, want int64, state func() string) error {
		return poll(ctx, fmt.Sprintf("%s to hold %d messages", q, want), 5*time.Millisecond, func() bool {
			d, err := depth(conn, q)
			return err == nil && d == want
		}, func() string {
			s := depthOf(q)
			if state != nil {
				s += "; " + state()
			}
			return s
		})
	}
	// Each mover starts from the same state: new queues, the source just
	// filled, then settle for the broker to finish writing what the fill
	// left (quorum queues move their log to segment files in the
	// background).
	prepare := func() error {
		if err := declare(); err != nil {
			return err
		}
		if err := fill(); err != nil {
			return err
		}
		if err := wait(src, int64(n), nil); err != nil {
			return err
		}
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return nil
	}
	// A shovel whose URIs are "amqp://" runs inside the broker over a
	// direct connection, with no network and no AMQP framing; one given
	// the broker's address (as a shovel between brokers is) goes over TCP
	// as dlq does; one of protocol local (4.2 and later) talks to the
	// queues inside the broker with no AMQP 0-9-1 channel at all, its URI
	// naming only the user it acts as. All are timed.
	netURI := strings.TrimSuffix(amqpURL, "/") + "/%2F"
	localURI := "amqp://" + url.PathEscape(u.User.Username()) + "@"
	shovelRun := func(how string) (took, done time.Duration, err error) {
		if err := prepare(); err != nil {
			return 0, 0, err
		}
		protocol, uri, deleteAfter := "amqp091", "amqp://", any("queue-length")
		switch how {
		case shovelTCP:
			uri = netURI
		case shovelLocal:
			// A local shovel reads a quorum source's length as 0 when it
			// starts (measured on 4.3.6): with queue-length it deletes
			// itself at once, having moved nothing. It is told the count.
			protocol, uri, deleteAfter = "local", localURI, n
		}
		// RabbitMQ's own shovel, with confirms, like dlq.
		start := time.Now()
		name := fmt.Sprintf("bench-shovel-%s-%d", tag, sets)
		shovels = append(shovels, name)
		resp, err := m.do(ctx, "PUT", "/parameters/shovel/%2F/"+name, map[string]any{"value": map[string]any{
			"src-protocol": protocol, "src-uri": uri, "src-queue": src, "src-delete-after": deleteAfter,
			"dest-protocol": protocol, "dest-uri": uri, "dest-queue": dst, "ack-mode": "on-confirm"}})
		if err != nil {
			return 0, 0, fmt.Errorf("shovel (%s): %s", how, broker.Redact(err.Error()))
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return 0, 0, fmt.Errorf("shovel (%s): HTTP %d %s", how, resp.StatusCode, msg)
		}
		state := func() string { return m.shovelState(ctx, name) }
		if err := wait(dst, int64(n), state); err != nil {
			return 0, 0, fmt.Errorf("shovel (%s): %w", how, err)
		}
		// Timed to the last message at the destination; the shovel's own
		// acknowledgements at the source finish after that (counted against
		// dlq, whose time ends when it has acknowledged everything).
		took = time.Since(start)
		// Removing the shovel before it acknowledged its last messages would
		// put them back in the source: wait until it deletes itself.
		gone := func() bool {
			resp, err := m.do(ctx, "GET", "/parameters/shovel/%2F/"+name, nil)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusNotFound
		}
		if err := poll(ctx, "shovel "+name+" ("+how+") to delete itself after moving every message", 10*time.Millisecond, gone,
			func() string { return depthOf(src) + ", " + depthOf(dst) + "; " + state() }); err != nil {
			return 0, 0, err
		}
		done = time.Since(start)
		return took, done, nil
	}
	res = result{what: fmt.Sprintf("rabbitmq %d.%d %s %d×1KiB %s", major, minor, kind, n, fillHow), n: n, baseName: "shovel"}
	movers := []func() error{
		func() (err error) { res.base, res.baseDone, err = shovelRun(shovelInBroker); return err },
		func() (err error) { res.net, _, err = shovelRun(shovelTCP); return err },
		func() error {
			if err := prepare(); err != nil {
				return err
			}
			if res.dlq, err = runDLQ(ctx, bin, "--broker", amqpURL, "--management-url", m.base, "redrive", src, "--to", "queue:"+dst, "-o", "json"); err != nil {
				return err
			}
			// dlq has returned: every message is at the destination already.
			if d, err := depth(conn, dst); err != nil || d != int64(n) {
				return fmt.Errorf("dlq redrive ended with %s, want %d (%v)", depthOf(dst), n, err)
			}
			return nil
		},
	}
	if hasLocal {
		movers = append(movers, func() (err error) { res.local, res.localDone, err = shovelRun(shovelLocal); return err })
	}
	// Each run starts with a different mover: each follows each other as
	// often over as many runs as there are movers.
	for i := range movers {
		if err := movers[(i+first)%len(movers)](); err != nil {
			return result{}, err
		}
	}
	return res, nil
}
