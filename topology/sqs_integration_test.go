package topology_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/internal/testdiff"
	"github.com/dlq-tools/dlq/topology"
)

// loadPrefixed loads an example spec with every name under prefix.
func loadPrefixed(t *testing.T, file, prefix string) *topology.Model {
	t.Helper()
	s, err := topology.ParseFile(filepath.Join("testdata", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	s.NamePrefix = prefix
	m, err := topology.Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openSQS(t *testing.T) (*sqs.Broker, brokertest.SQSEnv) {
	t.Helper()
	env := brokertest.SQS(t)
	b, err := sqs.Open(context.Background(), sqs.Config{Endpoint: env.Endpoint, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, env
}

// cleanupSQS deletes every queue whose name starts with prefix.
func cleanupSQS(t *testing.T, b *sqs.Broker, prefix string) {
	t.Cleanup(func() {
		ctx := context.Background()
		qs, err := b.ListSQSQueues(ctx, prefix)
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		for _, q := range qs {
			if _, err := b.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Delete, Name: q.Name}); err != nil {
				t.Logf("cleanup %s: %v", q.Name, err)
			}
		}
	})
}

func mustPlan(t *testing.T, b broker.Broker, m *topology.Model, opts topology.PlanOptions) *topology.Plan {
	t.Helper()
	p, err := topology.MakePlan(context.Background(), b, m, opts)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func planText(p *topology.Plan) string {
	var b bytes.Buffer
	_ = topology.WritePlan(&b, p, false)
	return b.String()
}

// roundTrip checks plan on empty → apply → plan shows nothing → export →
// plan of the export shows nothing.
func roundTrip(t *testing.T, b broker.Broker, m *topology.Model, prefix string, objects int) {
	t.Helper()
	ctx := context.Background()
	p := mustPlan(t, b, m, topology.PlanOptions{})
	s := p.Summary()
	if s.Create != objects || s.Update != 0 || s.Conflict != 0 || s.Unchanged != 0 {
		t.Fatalf("plan on an empty broker: want %d creates and nothing else (-want +got):\n%s%s", objects, testdiff.Diff(topology.Summary{Create: objects}, topology.Summary{Create: s.Create, Update: s.Update, Conflict: s.Conflict, Unchanged: s.Unchanged}), planText(p))
	}
	if _, err := topology.Apply(ctx, b, p, nil); err != nil {
		t.Fatalf("apply: %v\n%s", err, planText(p))
	}
	p2 := mustPlan(t, b, m, topology.PlanOptions{})
	if p2.HasChanges() {
		t.Fatalf("plan after apply shows changes:\n%s", planText(p2))
	}
	if p2.Unchanged != objects {
		t.Errorf("plan after apply: %d unchanged, want %d", p2.Unchanged, objects)
	}
	// Applying again is a no-op.
	if res, err := topology.Apply(ctx, b, p2, nil); err != nil || len(res.Applied) != 0 {
		t.Fatalf("second apply: %d applied, %v", len(res.Applied), err)
	}
	spec, err := topology.Export(ctx, b, topology.ExportOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	data, err := topology.MarshalSpec(spec, "exported")
	if err != nil {
		t.Fatal(err)
	}
	em, err := topology.LoadBytes("export.yaml", data)
	if err != nil {
		t.Fatalf("exported spec does not load: %v\n%s", err, data)
	}
	p3 := mustPlan(t, b, em, topology.PlanOptions{})
	if p3.HasChanges() {
		t.Fatalf("plan of the export shows changes:\n%s\nexport:\n%s", planText(p3), data)
	}
	if p3.Unchanged < objects {
		t.Errorf("the export holds %d objects, want at least %d:\n%s", p3.Unchanged, objects, data)
	}
}

func TestSQSTopologyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file   string
		queues int
	}{
		{"sqs-pair.yaml", 4},
		{"sqs-retry-ladder.yaml", 5},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, _ := openSQS(t)
			prefix := brokertest.Name(t, "t") + "-"
			cleanupSQS(t, b, prefix)
			m := loadPrefixed(t, tc.file, prefix)
			roundTrip(t, b, m, prefix, tc.queues)
		})
	}
}

func TestSQSPlanUpdatesAttributesInPlace(t *testing.T) {
	b, _ := openSQS(t)
	ctx := context.Background()
	prefix := brokertest.Name(t, "u") + "-"
	cleanupSQS(t, b, prefix)
	m := loadPrefixed(t, "sqs-pair.yaml", prefix)
	if _, err := topology.Apply(ctx, b, mustPlan(t, b, m, topology.PlanOptions{}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplySQSChange(ctx, broker.SQSChange{Action: broker.Declare, Name: prefix + "orders",
		Attributes: map[string]string{"VisibilityTimeout": "99"}}); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, b, m, topology.PlanOptions{})
	cs := p.Changes
	if len(cs) != 1 || cs[0].Action != topology.Update || cs[0].Name != prefix+"orders" ||
		len(cs[0].Diffs) != 1 || cs[0].Diffs[0].Field != "VisibilityTimeout" || cs[0].Diffs[0].Old != "99" {
		t.Fatalf("want one in-place update of VisibilityTimeout 99 → 30, got:\n%s", planText(p))
	}
	if _, err := topology.Apply(ctx, b, p, nil); err != nil {
		t.Fatal(err)
	}
	if p := mustPlan(t, b, m, topology.PlanOptions{}); p.HasChanges() {
		t.Fatalf("still changes after the update:\n%s", planText(p))
	}
}

// TestSQSPairDeadLetters receives a message past maxReceiveCount and finds
// it in the DLQ.
func TestSQSPairDeadLetters(t *testing.T) {
	b, env := openSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := brokertest.Name(t, "dl") + "-"
	cleanupSQS(t, b, prefix)
	spec := []byte(`version: 1
name_prefix: ` + prefix + `
sqs:
  pairs:
    - name: orders
      max_receive_count: 2
      source: {visibility_timeout: 0s, receive_wait: 0s}
`)
	m, err := topology.LoadBytes("pair.yaml", spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topology.Apply(ctx, b, mustPlan(t, b, m, topology.PlanOptions{}), nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	c := awssqs.NewFromConfig(cfg, sqs.OwnRequestBodies, func(o *awssqs.Options) { o.BaseEndpoint = aws.String(env.Endpoint) })
	src, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(prefix + "orders")})
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(prefix + "orders-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	receives := 0
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: src.QueueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) > 0 {
			receives++ // never deleted: every receive is a failed attempt
			if receives > 2 {
				t.Fatalf("received %d times, past maxReceiveCount 2", receives)
			}
			continue
		}
		if receives == 2 {
			break
		}
	}
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			if got := aws.ToString(out.Messages[0].Body); got != "poison" {
				t.Fatalf("DLQ holds %q", got)
			}
			return
		}
	}
	t.Fatalf("the message never reached %sorders-dlq after %d receives: %v", prefix, receives, ctx.Err())
}
