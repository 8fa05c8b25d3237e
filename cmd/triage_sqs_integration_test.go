package cmd

// `dlq triage` and `dlq triage apply` on an SQS FIFO DLQ (fauxqs; each
// message its own group), with dead letters
// from an SQS consumer that fails a message by sending it to the DLQ with
// its attributes (its x-dlq-redrive record too) and an error attribute, as
// a service's failure handler does, and deleting it from its queue.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/inspect"
)

// sqsService handles the messages of src: fail returns the error of a
// message it cannot handle ("" when it handles it).
type sqsService struct {
	got  sync.Map // body → times received
	fail atomic.Value
}

func (s *sqsService) times(body string) int {
	v, _ := s.got.Load(body)
	n, _ := v.(int)
	return n
}

func runSQSService(t *testing.T, s *riSQS, src, dlq string, fail func(body string) string) *sqsService {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc := &sqsService{}
	svc.fail.Store(fail)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seq := 0
		for ctx.Err() == nil {
			out, err := s.c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
			if err != nil {
				continue
			}
			for _, m := range out.Messages {
				body := aws.ToString(m.Body)
				v, _ := svc.got.Load(body)
				n, _ := v.(int)
				svc.got.Store(body, n+1)
				if reason := svc.fail.Load().(func(string) string)(body); reason != "" {
					attrs := map[string]sqstypes.MessageAttributeValue{}
					for k, a := range m.MessageAttributes {
						attrs[k] = a
					}
					attrs["error"] = riStr(reason)
					seq++
					in := &awssqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: m.Body, MessageAttributes: attrs,
						MessageGroupId: aws.String(m.Attributes["MessageGroupId"]), MessageDeduplicationId: aws.String(fmt.Sprintf("back-%d-%d", time.Now().UnixNano(), seq))}
					if _, err := s.c.SendMessage(ctx, in); err != nil {
						continue // not deleted: received again
					}
				}
				_, _ = s.c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return svc
}

func TestTriageIntegrationSQS(t *testing.T) {
	env := brokertest.SQS(t)
	s := newRISQS(t, env.Endpoint)
	base := brokertest.Name(t, "triage")
	dlqName := base + "-dlq.fifo"
	dlq := s.queue(dlqName, map[string]string{"FifoQueue": "true"})
	src := s.queue(base+"-src.fifo", map[string]string{"FifoQueue": "true", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))})
	// The pricing dependency is down, billing answers 503 (and will go on
	// doing so), and orders without an amount fail validation.
	var pricingUp atomic.Bool
	svc := runSQSService(t, s, src, dlq, func(body string) string {
		switch {
		case strings.Contains(body, `"pricing"`) && !pricingUp.Load():
			return "timeout after 30s calling pricing"
		case strings.Contains(body, `"billing"`):
			return "billing answered 503 Service Unavailable"
		case strings.Contains(body, `"invalid"`):
			return "ValidationException: amount must be positive"
		}
		return ""
	})
	var es []sqstypes.SendMessageBatchRequestEntry
	entry := func(body string) sqstypes.SendMessageBatchRequestEntry {
		k := fmt.Sprint(len(es))
		return sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(body), MessageGroupId: aws.String("g" + k), MessageDeduplicationId: aws.String("d" + k)}
	}
	for i := 0; i < 12; i++ {
		es = append(es, entry(fmt.Sprintf(`{"n":%d,"kind":"pricing"}`, i)))
	}
	for i := 0; i < 6; i++ {
		es = append(es, entry(fmt.Sprintf(`{"n":%d,"kind":"billing"}`, i)))
	}
	for i := 0; i < 4; i++ {
		es = append(es, entry(fmt.Sprintf(`{"n":%d,"kind":"invalid"}`, i)))
	}
	s.send(src, es...)
	riPoll(t, 30*time.Second, "22 dead letters", func() bool { return s.count(dlq) == 22 })
	settled := time.Now()
	const quiet = 5 * time.Second
	time.Sleep(time.Until(settled.Add(quiet + time.Second)))

	stdout, stderr, code := runDLQ(t, append(slices.Clone(s.args), "triage", dlqName, "--quiet", quiet.String(), "-o", "yaml")...)
	if code != ExitOK {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	var plan inspect.TriagePlan
	if err := yaml.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range plan.Groups {
		dest := ""
		if len(g.Evidence.Destinations) > 0 {
			dest = g.Evidence.Destinations[0].Value
		}
		got = append(got, fmt.Sprintf("%d %s/%s → %s", g.Count, g.Action, g.Rule, dest))
	}
	want := []string{
		"12 redrive/timeout → " + base + "-src.fifo",
		"6 redrive/server-error → " + base + "-src.fifo",
		"4 park/validation → " + base + "-src.fifo",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The pricing dependency comes back; billing does not.
	pricingUp.Store(true)
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runDLQWith(t, runOpts{Timeout: 5 * time.Minute}, append(slices.Clone(s.args), "triage", "apply", path, "--yes", "--canary-wait", "4s",
		"--archive-dir", dir, "-o", "json")...)
	if code != ExitCanaryStopped {
		t.Fatalf("apply: exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitCanaryStopped, stdout, stderr)
	}
	var out applyOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, stdout)
	}
	var outcomes []string
	for _, st := range out.Steps {
		outcomes = append(outcomes, st.Action+":"+st.Outcome)
	}
	if d := strings.Join(outcomes, " "); d != "redrive:done redrive:canary-stopped park:not-run" {
		t.Errorf("outcomes %s; want redrive:done redrive:canary-stopped park:not-run", d)
	}
	var c canaryOut
	if err := json.Unmarshal(out.Steps[1].Result, &c); err != nil {
		t.Fatalf("billing result: %v: %s", err, out.Steps[1].Result)
	}
	checkStopped(t, c, 1)
	// Billing's service saw the canary's 1 message again, and no other.
	again := 0
	for i := 0; i < 6; i++ {
		if svc.times(fmt.Sprintf(`{"n":%d,"kind":"billing"}`, i)) > 1 {
			again++
		}
	}
	if again != 1 {
		t.Errorf("%d billing messages were redriven, want the canary's 1", again)
	}
	// 6 billing (5 never moved, 1 back) and 4 invalid stay in the DLQ.
	riPoll(t, 30*time.Second, "the DLQ to hold 10", func() bool { return s.count(dlq) == 10 })
}
