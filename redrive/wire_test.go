package redrive_test

// The wire proxies of the fault scenarios (brokertest.AMQPWire,
// brokertest.SQSWire) hold dlq to its contract on the wire: a source message
// is removed only after the destination confirmed it.

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
)

// The proxies catch what they are there to catch: a removal from the source
// with no confirm before it fails the check, one after a confirm passes.
func TestWireChecksCatchARemovalBeforeItsConfirm(t *testing.T) {
	t.Run("amqp", func(t *testing.T) {
		env := brokertest.RabbitMQ(t)
		ledger := brokertest.NewWireLedger()
		conn, err := amqp.Dial(proxiedURL(t, env.AMQPURL, ledger))
		if err != nil {
			t.Fatal(brokertest.Redact(err.Error()))
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		src, dst := brokertest.Name(t, "src"), brokertest.Name(t, "dst")
		for _, q := range []string{src, dst} {
			if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"early", "proper"} {
			if err := ch.PublishWithContext(context.Background(), "", src, false, false, amqp.Publishing{Body: []byte(id)}); err != nil {
				t.Fatal(err)
			}
		}
		get := func() amqp.Delivery {
			for i := 0; i < 100; i++ {
				d, ok, err := ch.Get(src, false)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					return d
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Fatal("no message")
			return amqp.Delivery{}
		}
		// Acknowledged without publishing it anywhere: a violation.
		if err := get().Ack(false); err != nil {
			t.Fatal(err)
		}
		// Published with a confirm, then acknowledged: fine.
		d := get()
		pc, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Confirm(false); err != nil {
			t.Fatal(err)
		}
		c, err := pc.PublishWithDeferredConfirmWithContext(context.Background(), "", dst, true, false, amqp.Publishing{Body: d.Body})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.WaitContext(context.Background()); !ok || err != nil {
			t.Fatalf("confirm: %v %v", ok, err)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		_ = ch.Close() // the ack is on the wire once the close is answered
		if got := ledger.Verdict(); got != "2 removals; bad: basic.ack of early before any destination confirmed it" {
			t.Errorf("the AMQP proxy saw: %s", got)
		}
	})
	t.Run("sqs", func(t *testing.T) {
		env := brokertest.SQS(t)
		b := newSQS(t, "sqs", env.Endpoint)
		src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
		b.Fill(t, src, []string{"early", "proper"})
		cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
		if err != nil {
			t.Fatal(err)
		}
		c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) { o.BaseEndpoint = aws.String(b.wire.URL()) })
		ctx := context.Background()
		got := map[string]string{}
		for len(got) < 2 {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.url(t, src)), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				got[aws.ToString(m.Body)] = aws.ToString(m.ReceiptHandle)
			}
		}
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(b.url(t, src)), ReceiptHandle: aws.String(got["early"])}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.url(t, dst)),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String("proper")}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.url(t, src)),
			Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String(got["proper"])}}}); err != nil {
			t.Fatal(err)
		}
		if got := b.wire.Verdict(); got != "2 removals; bad: DeleteMessage of early before any destination confirmed it" {
			t.Errorf("the SQS proxy saw: %s", got)
		}
	})
}
