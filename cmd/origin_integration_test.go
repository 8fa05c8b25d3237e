package cmd

// The origin of a dead letter that went through a TTL retry ladder is the
// work queue whose consumer rejected it, not the retry queue that only
// delayed it: peek, stats and redrive agree.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// main (rejected) → retry (TTL, dead-letters back to main) → main: the
// consumer refuses it again and parks a copy in dead, as retry libraries do
// after their last attempt. Its x-death is then [retry expired, main
// rejected], newest first.
func TestOriginIntegrationRabbitTTLRetryLadder(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "ttl")
	work := r.exchange(base + ".work")
	dead := r.queue(base+".dead", nil)
	mainQ := base + ".main"
	retry := r.queue(base+".retry", amqp.Table{"x-message-ttl": int32(100),
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": mainQ})
	r.queue(mainQ, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": retry})
	r.bind(mainQ, "job", work)

	r.publish(work, "job", amqp.Publishing{MessageId: "m1", Body: []byte(`{"error":"Customer cus_42 not found"}`)})
	r.reject(mainQ, 1)
	r.waitDepth(mainQ, 1) // back from the retry delay
	got := r.drain(mainQ)
	if len(got) != 1 {
		t.Fatalf("main holds %d messages after the retry, want 1", len(got))
	}
	d := got[0]
	r.publish("", dead, amqp.Publishing{MessageId: d.MessageId, Headers: d.Headers, Body: d.Body})
	r.waitDepth(dead, 1)

	stdout, stderr, code := runDLQ(t, append(r.args, "peek", dead, "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("peek: exit %d: %s", code, stderr)
	}
	var msgs []struct {
		Source string `json:"source"`
	}
	if err := json.Unmarshal([]byte(stdout), &msgs); err != nil || len(msgs) != 1 {
		t.Fatalf("peek -o json: %v: %s", err, stdout)
	}
	if msgs[0].Source != mainQ {
		t.Errorf("peek source:\n%s", testdiff.Diff(mainQ, msgs[0].Source))
	}
	stdout, stderr, code = runDLQ(t, append(r.args, "stats", dead, "--group-by", "source", "-o", "csv")...)
	if code != ExitOK {
		t.Fatalf("stats: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, mainQ) || strings.Contains(stdout, retry) {
		t.Errorf("stats --group-by source, want the source %s:\n%s", mainQ, stdout)
	}

	stdout, stderr, code = runDLQ(t, append(r.args, "redrive", dead, "--yes", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("redrive: exit %d: %s %s", code, stdout, stderr)
	}
	if n := r.depth(retry); n != 0 {
		t.Errorf("the redrive put %d message(s) into the retry queue, want them in %s", n, mainQ)
	}
	if n := r.depth(mainQ); n != 1 {
		t.Errorf("main holds %d messages after the redrive, want 1", n)
	}
}

// A message in an SQS DLQ that does not say where it came from (no
// DeadLetterQueueSourceArn: sent into the DLQ directly) shows the DLQ's only
// source queue in peek and stats, the queue a redrive to the origin uses.
func TestOriginIntegrationSQSSingleSource(t *testing.T) {
	env := brokertest.SQS(t)
	for name, endpoint := range map[string]string{"fauxqs": env.Endpoint, "local-aws-sqs": env.MoveEndpoint} {
		t.Run(name, func(t *testing.T) {
			s := newRISQS(t, endpoint)
			base := brokertest.Name(t, "src")
			dlq := s.queue(base+"-dlq", nil)
			src := base + "-src"
			s.queue(src, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))})
			s.send(dlq, sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(`{"error":"boom"}`)})

			stdout, stderr, code := runDLQ(t, append(s.args, "peek", dlq, "-o", "json")...)
			if code != ExitOK {
				t.Fatalf("peek: exit %d: %s", code, stderr)
			}
			var msgs []struct {
				ID     string `json:"id"`
				Source string `json:"source"`
			}
			if err := json.Unmarshal([]byte(stdout), &msgs); err != nil || len(msgs) != 1 {
				t.Fatalf("peek -o json: %v: %s", err, stdout)
			}
			if msgs[0].Source != src {
				t.Errorf("peek source:\n%s", testdiff.Diff(src, msgs[0].Source))
			}
			stdout, stderr, code = runDLQ(t, append(s.args, "show", dlq, msgs[0].ID)...)
			if code != ExitOK {
				t.Fatalf("show: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "\nsource:      "+src+"\n") {
				t.Errorf("show, want the source %s:\n%s", src, stdout)
			}
			stdout, stderr, code = runDLQ(t, append(s.args, "stats", dlq, "--group-by", "source", "-o", "csv")...)
			if code != ExitOK {
				t.Fatalf("stats: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "\n"+src+",1,") {
				t.Errorf("stats --group-by source, want the source %s:\n%s", src, stdout)
			}
		})
	}
}
