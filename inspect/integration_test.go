package inspect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
)

// The fixture every backend gets: 30 messages, 12 "card declined" (Spring
// header / SQS error attribute), 10 "timeout" (body error field), 8 with no
// reason but a tenant header; ids fx-00..fx-29.
const fixtureN = 30

func fixtureReason(i int) string {
	switch {
	case i%3 == 0 || i == 29:
		return "card declined"
	case i%3 == 1 && i < 28:
		return "timeout"
	default:
		return ""
	}
}

func fixtureCounts() map[string]int64 {
	c := map[string]int64{}
	for i := range fixtureN {
		r := fixtureReason(i)
		if r == "" {
			r = Unknown
		}
		c[r]++
	}
	return c
}

func fixtureBody(i int) []byte {
	if fixtureReason(i) == "timeout" {
		return []byte(fmt.Sprintf(`{"n":%d,"error":{"message":"timeout"}}`, i))
	}
	return []byte(fmt.Sprintf(`{"n":%d}`, i))
}

type rabbitFixture struct {
	b    *rabbitmq.Broker
	ch   *amqp.Channel
	name string
}

func openRabbit(t *testing.T, args amqp.Table) rabbitFixture {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	ctx := context.Background()
	b, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	name := brokertest.Name(t, "dlq")
	if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := conn.Channel(); err == nil {
			c.QueueDelete(name, false, false, false)
		}
	})
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i := range fixtureN {
		h := amqp.Table{}
		if fixtureReason(i) == "card declined" {
			h["x-exception-message"] = "card declined"
		}
		if fixtureReason(i) == "" {
			h["tenant"] = "acme"
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", name, true, false, amqp.Publishing{
			MessageId: fmt.Sprintf("fx-%02d", i), ContentType: "application/json", DeliveryMode: 2, Headers: h, Body: fixtureBody(i),
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish not confirmed: %v", err)
		}
	}
	return rabbitFixture{b: b, ch: ch, name: name}
}

// depth is the number of ready messages (passive declare; exact).
// depth is the queue's ready count once the messages a peek returned are
// back: RabbitMQ requeues a closed channel's deliveries asynchronously, so a
// count taken at once may miss some for a moment. It waits (up to 5 s) for
// the fixture's size, and returns whatever it last saw.
func (f rabbitFixture) depth(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := f.ch.QueueDeclarePassive(f.name, true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == fixtureN || time.Now().After(deadline) {
			return q.Messages
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ids reads the queue's message ids in order, through a peek.
func ids(t *testing.T, p broker.Peeker, queue string, po broker.PeekOptions) []string {
	t.Helper()
	var out []string
	_, err := p.Peek(context.Background(), queue, po, func(m *broker.Message) error {
		out = append(out, m.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkStats(t *testing.T, p broker.Peeker, queue string, po broker.PeekOptions) StatsResult {
	t.Helper()
	res, _, err := CollectStats(context.Background(), p, queue, po, StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, g := range res.Groups {
		got[g.Values[0]] = g.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(fixtureCounts()) || res.Total != fixtureN || res.Duplicates.Messages != 0 {
		t.Errorf("stats = %v (total %d, dups %d), want %v", got, res.Total, res.Duplicates.Messages, fixtureCounts())
	}
	return res
}

func TestIntegrationRabbitClassic(t *testing.T) {
	f := openRabbit(t, nil)
	before := ids(t, f.b, f.name, broker.PeekOptions{Mode: broker.PeekHold})
	if len(before) != fixtureN || f.depth(t) != fixtureN {
		t.Fatalf("fixture: %d ids, depth %d", len(before), f.depth(t))
	}
	// A filtered peek: 5 timeouts, the queue unchanged in depth and order.
	var got []string
	rep, err := Walk(context.Background(), f.b, f.name, WalkOptions{Filter: MustCompile(`.reason == "timeout"`), Limit: 5, Peek: broker.PeekOptions{Mode: broker.PeekHold}}, func(m *broker.Message) error {
		got = append(got, m.ID)
		return nil
	})
	if err != nil || strings.Join(got, ",") != "fx-01,fx-04,fx-07,fx-10,fx-13" {
		t.Fatalf("filtered walk: %v %v", got, err)
	}
	t.Logf("hold peek report: %+v", rep)
	checkStats(t, f.b, f.name, broker.PeekOptions{Mode: broker.PeekRotate})
	after := ids(t, f.b, f.name, broker.PeekOptions{Mode: broker.PeekHold})
	if f.depth(t) != fixtureN || strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("peek and stats changed the queue: depth %d, order %v", f.depth(t), after)
	}
}

func TestIntegrationRabbitQuorumDeliveryLimit(t *testing.T) {
	f := openRabbit(t, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(3)})
	for i := range 100 {
		if _, err := Walk(context.Background(), f.b, f.name, WalkOptions{Limit: 5}, func(*broker.Message) error { return nil }); err != nil {
			t.Fatalf("peek %d: %v", i, err)
		}
	}
	if d := f.depth(t); d != fixtureN {
		t.Fatalf("100 peeks on a quorum queue with delivery limit 3 lost messages: depth %d", d)
	}
	checkStats(t, f.b, f.name, broker.PeekOptions{})
	order := ids(t, f.b, f.name, broker.PeekOptions{})
	for i, id := range order {
		if id != fmt.Sprintf("fx-%02d", i) {
			t.Fatalf("order changed: %v", order)
		}
	}
	// Returning deliveries would raise counts towards the limit: refused,
	// except where a requeue does not count (4.3).
	_, err := f.b.Peek(context.Background(), f.name, broker.PeekOptions{Mode: broker.PeekRequeue, Limit: 3}, func(*broker.Message) error { return nil })
	if env := brokertest.RabbitMQ(t); env.RequeueFree() {
		if err != nil {
			t.Errorf("requeue peek on a quorum queue with a delivery limit on RabbitMQ %s: %v", env.Version, err)
		}
	} else if !errors.Is(err, broker.ErrUnsafe) {
		t.Errorf("requeue peek on a quorum queue with a delivery limit: %v", err)
	}
}

func TestIntegrationRabbitStream(t *testing.T) {
	f := openRabbit(t, amqp.Table{"x-queue-type": "stream"})
	po := broker.PeekOptions{Offset: "first"}
	a := checkStats(t, f.b, f.name, po)
	b := checkStats(t, f.b, f.name, po)
	if a.Total != b.Total || fmt.Sprint(ids(t, f.b, f.name, po)) != fmt.Sprint(ids(t, f.b, f.name, po)) {
		t.Error("stream peeks are not repeatable")
	}
}

func sqsFixture(t *testing.T, fifo bool) (*dlqsqs.Broker, *sqs.Client, string, string) {
	t.Helper()
	env := brokertest.SQS(t)
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) { o.BaseEndpoint = aws.String(env.Endpoint) })
	name := brokertest.Name(t, "dlq")
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	for i := range fixtureN {
		in := &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(string(fixtureBody(i))), MessageAttributes: map[string]sqstypes.MessageAttributeValue{}}
		switch fixtureReason(i) {
		case "card declined":
			in.MessageAttributes["ErrorMessage"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("card declined")}
		case "":
			in.MessageAttributes["tenant"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("acme")}
		}
		if fifo {
			// One group per message: a FIFO peek sees only group heads.
			in.MessageGroupId = aws.String(fmt.Sprintf("g%d", i))
			in.MessageDeduplicationId = aws.String(fmt.Sprintf("d%d", i))
		}
		if _, err := c.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	b, err := dlqsqs.Open(ctx, dlqsqs.Config{Region: "us-east-1", Endpoint: env.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, c, *q.QueueUrl, name
}

func visibleDepth(t *testing.T, c *sqs.Client, url string) string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"] + "/" + out.Attributes["ApproximateNumberOfMessagesNotVisible"]
}

func TestIntegrationSQS(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			b, c, url, name := sqsFixture(t, fifo)
			checkStats(t, b, name, broker.PeekOptions{})
			var got []string
			_, err := Walk(context.Background(), b, name, WalkOptions{Filter: MustCompile(`.reason == "card declined"`)}, func(m *broker.Message) error {
				got = append(got, m.ID)
				return nil
			})
			if err != nil || len(got) != 11 {
				t.Errorf("filter: %d matches, %v", len(got), err)
			}
			want := fmt.Sprintf("%d/0", fixtureN)
			deadline := time.Now().Add(5 * time.Second)
			for visibleDepth(t, c, url) != want && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if d := visibleDepth(t, c, url); d != want {
				t.Errorf("visible/in flight after peeks = %s, want %s (messages must be returned at once)", d, want)
			}
		})
	}
}

func TestIntegrationExportArchive(t *testing.T) {
	f := openRabbit(t, nil)
	path := filepath.Join(t.TempDir(), "dump.jsonl.gz")
	dst, err := archive.Create(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Export(context.Background(), f.b, f.name, dst, broker.Destination{Kind: broker.ToFile, Path: path}, ExportOptions{Walk: WalkOptions{Peek: broker.PeekOptions{Mode: broker.PeekRotate}}})
	if err != nil || res.Exported != fixtureN {
		t.Fatalf("export: exported %d, %v; want %d", res.Exported, err, fixtureN)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if f.depth(t) != fixtureN {
		t.Errorf("export removed messages: depth %d", f.depth(t))
	}
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	checkStats(t, a, "", broker.PeekOptions{})
}
