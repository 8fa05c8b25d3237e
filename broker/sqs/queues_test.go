package sqs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestQueues(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	base := baseName(t)
	dlq := createQueue(t, b, base+"-dlq", nil)
	arn := mustARN(t, b, dlq)
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, arn)
	a := createQueue(t, b, base+"-a", map[string]string{"RedrivePolicy": policy})
	createQueue(t, b, base+"-b", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":7}`, arn)})
	createQueue(t, b, base+"-c.fifo", map[string]string{"FifoQueue": "true"})
	sendBodies(t, b, a, "", bodies("m", 3)...)

	qs, err := b.QueuesWithPrefix(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]broker.Queue{}
	for _, q := range qs {
		got[strings.TrimPrefix(q.Name, base)] = q
	}
	if len(got) != 4 {
		t.Fatalf("listed %d queues %v, want 4", len(got), reflect.ValueOf(got).MapKeys())
	}
	if q := got["-dlq"]; !q.IsDLQ || !reflect.DeepEqual(q.DeadLetterSources, []string{base + "-a", base + "-b"}) || q.ARN != arn || q.Kind != broker.KindSQSStandard {
		t.Errorf("dlq: dlq %t, dead-letter sources %q, arn %q, kind %v; want true, [%s-a %s-b], %s, %v", q.IsDLQ, q.DeadLetterSources, q.ARN, q.Kind, base, base, arn, broker.KindSQSStandard)
	}
	if q := got["-a"]; q.IsDLQ || q.Depth != 3 || q.DeadLetterTarget != base+"-dlq" || q.DeliveryLimit != 5 || q.InFlight == nil || *q.InFlight != 0 || q.Delayed == nil {
		t.Errorf("source a: dlq %t, depth %d, dead-letter target %q, delivery limit %d, in flight %s, delayed known %t; want false, 3, %s-dlq, 5, &int64(0), true",
			q.IsDLQ, q.Depth, q.DeadLetterTarget, q.DeliveryLimit, testdiff.Render(q.InFlight), q.Delayed != nil, base)
	}
	if q := got["-b"]; q.DeliveryLimit != 7 {
		t.Errorf("source b (numeric maxReceiveCount): delivery limit %d, want 7", q.DeliveryLimit)
	}
	if q := got["-c.fifo"]; q.Kind != broker.KindSQSFIFO || q.IsDLQ || q.URL == "" {
		t.Errorf("fifo: kind %v, dlq %t, url %q; want %v, false, set", q.Kind, q.IsDLQ, q.URL, broker.KindSQSFIFO)
	}

	for _, ref := range []string{base + "-dlq", dlq, arn} {
		q, err := b.Queue(ctx, ref)
		if err != nil {
			t.Fatalf("Queue(%s): %v", ref, err)
		}
		if q.Name != base+"-dlq" || !q.IsDLQ || !reflect.DeepEqual(q.DeadLetterSources, []string{base + "-a", base + "-b"}) {
			t.Errorf("Queue(%s): name %q, dlq %t, dead-letter sources %q; want %s-dlq, true, [%s-a %s-b]", ref, q.Name, q.IsDLQ, q.DeadLetterSources, base, base, base)
		}
	}
}

func TestQueueNotFound(t *testing.T) {
	b := openTest(t)
	name := baseName(t) + "-missing"
	for _, ref := range []string{name, "arn:aws:sqs:us-east-1:000000000000:" + name} {
		_, err := b.Queue(context.Background(), ref)
		if !errors.Is(err, broker.ErrNotFound) {
			t.Fatalf("Queue(%s) = %v, want not found", ref, err)
		}
		if !strings.Contains(err.Error(), "`"+name+"`") || !strings.Contains(err.Error(), "dlq queues") {
			t.Errorf("error %q does not name the queue and the fix", err)
		}
	}
	_, err := b.Queue(context.Background(), "arn:aws:s3:::bucket")
	if !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("bad ARN: %v", err)
	}
}

func TestParseRedrivePolicy(t *testing.T) {
	for s, want := range map[string]int64{
		`{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":"4"}`: 4,
		`{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":9}`:   9,
	} {
		target, n, ok := parseRedrivePolicy(s)
		if !ok || n != want || target != "arn:aws:sqs:r:1:d" {
			t.Errorf("parseRedrivePolicy(%s) = %q %d %v", s, target, n, ok)
		}
	}
	for _, s := range []string{"", "{", `{"maxReceiveCount":3}`} {
		if _, _, ok := parseRedrivePolicy(s); ok {
			t.Errorf("parseRedrivePolicy(%q) ok", s)
		}
	}
}

// TestQueueRolesLadder declares dlq topology's SQS retry ladder, standard
// and FIFO (a main queue and a delay tier both redriving into the DLQ),
// and a dead queue the application sends to itself, and checks the roles.
func TestQueueRolesLadder(t *testing.T) {
	b := openTest(t)
	ctx := context.Background()
	base := baseName(t)
	policy := func(dlqURL string) map[string]string {
		return map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, mustARN(t, b, dlqURL))}
	}
	delayed := func(attrs map[string]string, fifo bool) map[string]string {
		attrs["DelaySeconds"] = "30"
		if fifo {
			attrs["FifoQueue"] = "true"
		}
		return attrs
	}
	dlq := createQueue(t, b, base+"-dlq", nil)
	createQueue(t, b, base, policy(dlq))
	createQueue(t, b, base+"-retry-30s", delayed(policy(dlq), false))
	fifoDLQ := createQueue(t, b, base+"-dlq.fifo", map[string]string{"FifoQueue": "true"})
	fifoMain := policy(fifoDLQ)
	fifoMain["FifoQueue"] = "true"
	createQueue(t, b, base+".fifo", fifoMain)
	createQueue(t, b, base+"-retry-30s.fifo", delayed(policy(fifoDLQ), true))
	createQueue(t, b, base+"_error", nil)
	createQueue(t, b, base+"-terror-events", nil)

	qs, err := b.QueuesWithPrefix(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"":                "work/topology dlq=false",
		"-retry-30s":      "retry/name dlq=false",
		"-dlq":            "dlq/topology dlq=true",
		".fifo":           "work/topology dlq=false",
		"-retry-30s.fifo": "retry/name dlq=false",
		"-dlq.fifo":       "dlq/topology dlq=true",
		"_error":          "dlq/name dlq=true",
		"-terror-events":  "work/default dlq=false",
	}
	got := map[string]string{}
	for _, q := range qs {
		got[strings.TrimPrefix(q.Name, base)] = fmt.Sprintf("%s/%s dlq=%v", q.Role, q.RoleSource, q.IsDLQ)
		if strings.Contains(q.Name, "-retry-") && q.DeliveryDelay != 30*time.Second {
			t.Errorf("%s: delivery delay %v, want 30s", q.Name, q.DeliveryDelay)
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", base+k, got[k], w)
		}
	}
	// One queue described alone: its sources make it a DLQ, its name
	// (with its delay) a retry tier.
	for name, w := range map[string]broker.Role{base + "-dlq.fifo": broker.RoleDLQ, base + "-retry-30s": broker.RoleRetry, base + "_error": broker.RoleDLQ} {
		q, err := b.Queue(ctx, name)
		if err != nil || q.Role != w {
			t.Errorf("Queue(%s): role %q, %v; want %s", name, q.Role, err, w)
		}
	}
}
