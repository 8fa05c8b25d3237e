package redrive

// Integration tests of the engine with the real adapters on the servers of
// `make test`. The command-line tests in package cmd cover the verbs end to
// end; these check what only the library can observe: the order of archive
// writes and deletions, and FIFO group order through the SQS adapter.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/broker/sqs/sqsbench"
)

// itSQS opens the adapter and a plain client on fauxqs.
func itSQS(t *testing.T) (*dlqsqs.Broker, *awssqs.Client) {
	t.Helper()
	env := brokertest.SQS(t)
	b, err := dlqsqs.Open(context.Background(), dlqsqs.Config{Region: "us-east-1", Endpoint: env.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	c := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(env.Endpoint), Credentials: aws.AnonymousCredentials{}}, dlqsqs.OwnRequestBodies)
	return b, c
}

func itQueue(t *testing.T, c *awssqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

// itTotal is every message of an SQS queue, visible or not.
func itTotal(t *testing.T, c *awssqs.Client, u string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b
}

// checkingArchive is an archive whose every confirmed write is checked on
// disk, together with the source, before the engine may remove anything.
type checkingArchive struct {
	t     *testing.T
	inner broker.Publisher
	path  string
	// before checks the source, given how many messages the archive
	// confirmed before this write.
	before    func(archived int64)
	calls     atomic.Int64
	confirmed atomic.Int64
}

func (a *checkingArchive) Publish(ctx context.Context, outs []broker.Outgoing) ([]error, error) {
	prior := a.confirmed.Load()
	a.before(prior)
	errs, err := a.inner.Publish(ctx, outs)
	if err != nil {
		return errs, err
	}
	a.calls.Add(1)
	onDisk := map[string]bool{}
	for _, m := range brokertest.ReadArchive(a.t, a.path) {
		onDisk[string(m.Body)] = true
	}
	for i, o := range outs {
		if errs[i] == nil {
			a.confirmed.Add(1)
			if !onDisk[string(o.Message.Body)] {
				a.t.Errorf("archive confirmed %s before it was on disk", o.Message.Body)
			}
		}
	}
	// Written and fsynced, not yet removed from the source.
	a.before(prior)
	return errs, nil
}

// Discard with an archive on SQS: each window is written and fsynced to the
// archive while the queue still holds every message; only then are they
// deleted. The messages the filter leaves stay.
func TestDiscardArchivesBeforeTheQueueShrinks(t *testing.T) {
	b, c := itSQS(t)
	name := brokertest.Name(t, "disc")
	u := itQueue(t, c, name, nil)
	const n = 60
	for i := 0; i < n; i += 10 {
		var es []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			es = append(es, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j - i)), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, j))})
		}
		if _, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(u), Entries: es}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "discarded.jsonl")
	target, err := archive.Target(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	// One window at a time: when a window is archived, the queue holds
	// exactly the messages not archived before it.
	arch := &checkingArchive{t: t, inner: target, path: path, before: func(archived int64) {
		if got := itTotal(t, c, u); got != n-int(archived) {
			t.Errorf("the queue holds %d messages while a window is archived, want %d: something was deleted before its archive write", got, n-archived)
		}
	}}
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) {
		return !strings.HasSuffix(string(m.Body), "5}"), nil
	})
	s, err := Discard(context.Background(), b, name, arch, broker.Destination{Kind: broker.ToFile, Path: path},
		Options{Filter: sel, Window: 20, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 54 || s.Archived != 54 || arch.calls.Load() == 0 {
		t.Fatalf("moved %d, archived %d after %d archive writes; want 54, 54, some", s.Moved, s.Archived, arch.calls.Load())
	}
	if got := len(brokertest.ReadArchive(t, path)); got != 54 {
		t.Errorf("archive holds %d, want 54", got)
	}
	if got := itTotal(t, c, u); got != 6 {
		t.Errorf("queue holds %d, want the 6 the filter left", got)
	}
}

// A FIFO group stops at a message that cannot move, on fauxqs through the
// SQS adapter: the group's later messages stay in the DLQ in their order,
// the other groups move in order, and every moved message has a new
// deduplication id.
func TestFIFOGroupOrderOnFauxqs(t *testing.T) {
	b, c := itSQS(t)
	name := brokertest.Name(t, "fifo")
	fifo := map[string]string{"FifoQueue": "true"}
	dlq := itQueue(t, c, name+"-dlq.fifo", fifo)
	dst := itQueue(t, c, name+"-dst.fifo", fifo)
	const n = 30
	for i := 0; i < n; i += 10 {
		var es []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			es = append(es, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j - i)), MessageBody: aws.String(strconv.Itoa(j)),
				MessageGroupId: aws.String(fmt.Sprint("g", j%3)), MessageDeduplicationId: aws.String(fmt.Sprint("orig-", j))})
		}
		if _, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: es}); err != nil {
			t.Fatal(err)
		}
	}
	tr := func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		if string(m.Body) == "7" { // group g1
			return nil, errors.New("refused")
		}
		return m.Clone(), nil
	}
	s, err := Run(context.Background(), b, name+"-dlq.fifo", b, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: name + "-dst.fifo"}, Transform: tr})
	if err != nil {
		t.Fatal(err)
	}
	moved := itDrain(t, c, dst)
	left := itDrain(t, c, dlq)
	byGroup := func(ms []sqstypes.Message) map[string][]int {
		g := map[string][]int{}
		for _, m := range ms {
			v, _ := strconv.Atoi(aws.ToString(m.Body))
			g[m.Attributes["MessageGroupId"]] = append(g[m.Attributes["MessageGroupId"]], v)
			if strings.HasPrefix(m.Attributes["MessageDeduplicationId"], "orig-") && len(ms) == len(moved) {
				t.Errorf("%s kept its original deduplication id", aws.ToString(m.Body))
			}
		}
		return g
	}
	mg, lg := byGroup(moved), byGroup(left)
	want := map[string]string{"g0": "[0 3 6 9 12 15 18 21 24 27]", "g1": "[1 4]", "g2": "[2 5 8 11 14 17 20 23 26 29]"}
	for g, w := range want {
		if fmt.Sprint(mg[g]) != w {
			t.Errorf("moved of %s = %v, want %s", g, mg[g], w)
		}
	}
	if fmt.Sprint(lg["g1"]) != "[7 10 13 16 19 22 25 28]" || len(lg) != 1 {
		t.Errorf("left in the DLQ: %v", lg)
	}
	// The later messages of g1 are either held by the engine (when they
	// came in the same receive as 7) or never delivered by SQS while 7 is
	// held.
	if s.Moved != 22 || s.Failed[ReasonInvalidTransform] != 1 || s.Examined != 23+s.Failed[ReasonGroupHeld] {
		t.Errorf("summary examined %d moved %d failed %v", s.Examined, s.Moved, s.Failed)
	}
}

func itDrain(t *testing.T, c *awssqs.Client, u string) []sqstypes.Message {
	t.Helper()
	all, err := sqsbench.Drain(context.Background(), c, u)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// Discard with an archive on a RabbitMQ quorum DLQ: every archive write is
// on disk when confirmed, the queue is whole until then (no ack precedes
// it), and the messages the filter leaves keep their order and delivery
// count.
func TestDiscardArchiveFirstOnRabbitMQ(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	ctx := context.Background()
	b, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatal("dial failed")
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	q := brokertest.Name(t, "disc")
	if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			ch.QueueDelete(q, false, false, false)
		}
	})
	ch.Confirm(false)
	const n = 40
	for i := 0; i < n; i++ {
		d, err := ch.PublishWithDeferredConfirm("", q, false, false, amqp.Publishing{DeliveryMode: 2, Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		if err != nil || !d.Wait() {
			t.Fatal("publish failed")
		}
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	target, err := archive.Target(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	arch := &checkingArchive{t: t, inner: target, path: path, before: func(int64) {}}
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) {
		return strings.Contains(string(m.Body), "0}"), nil
	})
	s, err := Discard(ctx, b, q, arch, broker.Destination{Kind: broker.ToFile, Path: path}, Options{Filter: sel, Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 4 || s.Skipped[ReasonFiltered] != 36 || s.Examined != n {
		t.Fatalf("moved %d, skipped %v, examined %d; want 4, %s 36, %d", s.Moved, s.Skipped, s.Examined, ReasonFiltered, n)
	}
	var left []string
	for {
		d, ok, err := ch.Get(q, false)
		if err != nil || !ok {
			break
		}
		if c, ok := d.Headers["x-delivery-count"]; ok && fmt.Sprint(c) != "0" {
			t.Errorf("%s: x-delivery-count %v", d.Body, c)
		}
		left = append(left, string(d.Body))
		d.Ack(false)
	}
	var want []string
	for i := 0; i < n; i++ {
		if i%10 != 0 {
			want = append(want, fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left %v, want %v", left, want)
	}
	if got := len(brokertest.ReadArchive(t, path)); got != 4 {
		t.Errorf("archive holds %d", got)
	}
}
