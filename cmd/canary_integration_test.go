package cmd

// End-to-end tests of `dlq redrive --canary` through the built binary,
// against RabbitMQ (classic and quorum DLQs) and an SQS FIFO queue on
// fauxqs. A goroutine plays the consumer of the work queue:
// "unfixed", it dead-letters every redriven message again; "fixed", it
// processes them.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// canaryWait is the settle time the tests give: short, as the consumer
// beside the test dead-letters a message within its next poll (at most a
// second on SQS), with room for a loaded machine.
const canaryWait = "5s"

// canaryOut is the part of `redrive --canary -o json` the tests check.
type canaryOut struct {
	Moved  int64 `json:"moved"`
	Canary struct {
		Selected int64 `json:"selected"`
		Steps    []struct {
			Moved    int64 `json:"moved"`
			Returned int64 `json:"returned"`
		} `json:"steps"`
		Stopped *struct {
			Step     int   `json:"step"`
			Returned int64 `json:"returned"`
		} `json:"stopped"`
		Returns []struct {
			Same bool `json:"same_group"`
		} `json:"returns"`
		Left          int64  `json:"left"`
		ResumeCommand string `json:"resume_command"`
	} `json:"canary"`
}

func (c canaryOut) moves() []int64 {
	var m []int64
	for _, s := range c.Canary.Steps {
		m = append(m, s.Moved)
	}
	return m
}

// runCanary runs the binary with args and -o json, and checks its exit
// code.
func runCanary(t *testing.T, want ExitCode, args ...string) canaryOut {
	t.Helper()
	stdout, stderr, code, _ := runBinary(t, nil, append(args, "--yes", "-o", "json")...)
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
	var out canaryOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return out
}

// checkStopped checks a canary that an unfixed consumer stopped after its
// first step, which moved first messages. (A read of an SQS FIFO queue
// sees the head of each message group only: it counts at least one of a
// group that came back.)
func checkStopped(t *testing.T, out canaryOut, first int64) {
	t.Helper()
	c := out.Canary
	if c.Stopped == nil || c.Stopped.Step != 1 || c.Stopped.Returned < 1 || c.Stopped.Returned > first || out.Moved != first ||
		len(c.Returns) == 0 || !c.Returns[0].Same || c.ResumeCommand == "" {
		t.Errorf("stopped %+v after moving %d, returns %+v, resume %q; want step 1 with %d back of the same group",
			c.Stopped, out.Moved, c.Returns, c.ResumeCommand, first)
	}
	if d := testdiff.Diff([]int64{first}, out.moves()); d != "" {
		t.Errorf("moved per step (-want +got):\n%s", d)
	}
}

// rabbitConsumer consumes work until the test ends: while fixed is false it
// rejects each message (RabbitMQ dead-letters it back to the DLQ), else it
// acknowledges it. It counts both.
type rabbitConsumer struct {
	fixed             atomic.Bool
	rejected, handled atomic.Int64
}

func consumeRabbit(t *testing.T, r *riRabbit, work string) *rabbitConsumer {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(work, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &rabbitConsumer{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := range ds {
			if c.fixed.Load() {
				c.handled.Add(1)
				_ = d.Ack(false)
			} else {
				c.rejected.Add(1)
				_ = d.Nack(false, false)
			}
		}
	}()
	t.Cleanup(func() { ch.Close(); wg.Wait() })
	return c
}

func TestCanaryIntegrationRabbit(t *testing.T) {
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			// Unfixed: the first moved message comes back and the canary
			// stops with nothing else moved.
			work, dlq := riDeadLetters(t, r, kind, 20)
			c := consumeRabbit(t, r, work)
			args := append(slices.Clone(r.args), "redrive", dlq, "--canary", "--canary-wait", canaryWait)
			checkStopped(t, runCanary(t, ExitCanaryStopped, args...), 1)
			if n := c.rejected.Load() + c.handled.Load(); n != 1 {
				t.Errorf("the consumer got %d messages, want the 1 of step 1", n)
			}
			if n := r.depth(dlq); n != 20 {
				t.Errorf("the DLQ holds %d, want 20 (19 never moved, 1 back)", n)
			}
			// Fixed: --resume goes on from step 1 and moves everything.
			c.fixed.Store(true)
			out := runCanary(t, ExitOK, append(slices.Clone(r.args), "redrive", dlq, "--resume")...)
			if d := testdiff.Diff([]int64{1, 5, 2, 5, 7}, out.moves()); d != "" {
				t.Errorf("resumed: moved per step (-want +got):\n%s", d)
			}
			r.waitDepth(dlq, 0)
			riPoll(t, 30*time.Second, "the consumer to handle 20", func() bool { return c.handled.Load() == 20 })

			// Fixed from the start: every step runs and everything moves.
			work2, dlq2 := riDeadLetters(t, r, kind, 20)
			c2 := consumeRabbit(t, r, work2)
			c2.fixed.Store(true)
			out = runCanary(t, ExitOK, append(slices.Clone(r.args), "redrive", dlq2, "--canary", "--canary-wait", canaryWait)...)
			if d := testdiff.Diff([]int64{1, 5, 2, 5, 7}, out.moves()); d != "" {
				t.Errorf("fixed: moved per step (-want +got):\n%s", d)
			}
			if out.Canary.Stopped != nil || out.Moved != 20 || r.depth(dlq2) != 0 {
				t.Errorf("fixed: stopped %+v, moved %d, DLQ %d; want none, 20, 0", out.Canary.Stopped, out.Moved, r.depth(dlq2))
			}
			riPoll(t, 30*time.Second, "the consumer to handle 20", func() bool { return c2.handled.Load() == 20 })
			if c2.rejected.Load() != 0 {
				t.Errorf("the fixed consumer rejected %d", c2.rejected.Load())
			}
		})
	}
}

// sqsConsumer receives from src until the test ends: while fixed is false
// it sends each message back to the DLQ with its attributes (its
// x-dlq-redrive record too), as a failed message is dead-lettered, else it
// handles it. Both delete it from src.
type sqsConsumer struct {
	fixed             atomic.Bool
	rejected, handled atomic.Int64
	groups            sync.Map // message groups it saw (FIFO)
}

func consumeSQS(t *testing.T, s *riSQS, src, dlq string, fifo bool) *sqsConsumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &sqsConsumer{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seq := 0
		for ctx.Err() == nil {
			out, err := s.c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"},
				//lint:ignore SA1019 local-aws-sqs returns MessageGroupId only for the deprecated field.
				AttributeNames: []sqstypes.QueueAttributeName{"All"}})
			if err != nil {
				continue
			}
			for _, m := range out.Messages {
				g := m.Attributes["MessageGroupId"]
				c.groups.Store(g, true)
				if !c.fixed.Load() {
					seq++
					in := &awssqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
					if fifo {
						in.MessageGroupId, in.MessageDeduplicationId = aws.String(g), aws.String(fmt.Sprintf("back-%d-%d", time.Now().UnixNano(), seq))
					}
					if _, err := s.c.SendMessage(ctx, in); err != nil {
						continue // not deleted: received again
					}
					c.rejected.Add(1)
				} else {
					c.handled.Add(1)
				}
				_, _ = s.c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

func TestCanaryIntegrationSQS(t *testing.T) {
	env := brokertest.SQS(t)
	for _, ep := range []struct{ name, url string }{{"fauxqs", env.Endpoint}, {"local-aws-sqs", env.MoveEndpoint}} {
		for _, fifo := range []bool{false, true} {
			name := ep.name + "-" + map[bool]string{false: "standard", true: "fifo"}[fifo]
			t.Run(name, func(t *testing.T) {
				s := newRISQS(t, ep.url)
				// 4 groups of 5 (FIFO), or 20 messages.
				setup := func(prefix string) (src, dlq, dlqName string) {
					base := brokertest.Name(t, prefix)
					suffix, attrs := "", map[string]string(nil)
					if fifo {
						suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
					}
					dlqName = base + "-dlq" + suffix
					dlq = s.queue(dlqName, attrs)
					srcAttrs := map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))}
					if fifo {
						srcAttrs["FifoQueue"] = "true"
					}
					src = s.queue(base+"-src"+suffix, srcAttrs)
					var es []sqstypes.SendMessageBatchRequestEntry
					for i := 0; i < 20; i++ {
						e := sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i)),
							MessageAttributes: map[string]sqstypes.MessageAttributeValue{"error": riStr("timeout after 30s")}}
						if fifo {
							e.MessageGroupId, e.MessageDeduplicationId = aws.String(fmt.Sprint("g", i/5)), aws.String(fmt.Sprint("d", i))
						}
						es = append(es, e)
					}
					s.send(dlq, es...)
					return src, dlq, dlqName
				}
				// On FIFO the first step takes a whole group: 5 messages.
				first := int64(1)
				fixedSteps := []int64{1, 5, 2, 5, 7}
				if fifo {
					first, fixedSteps = 5, []int64{5, 5, 5, 5}
				}
				src, dlq, dlqName := setup("unfixed")
				c := consumeSQS(t, s, src, dlq, fifo)
				args := append(slices.Clone(s.args), "redrive", dlqName, "--canary", "--canary-wait", canaryWait)
				checkStopped(t, runCanary(t, ExitCanaryStopped, args...), first)
				if n := c.rejected.Load() + c.handled.Load(); n != first {
					t.Errorf("the consumer got %d messages, want the %d of step 1", n, first)
				}
				if fifo {
					n := 0
					c.groups.Range(func(any, any) bool { n++; return true })
					if n != 1 {
						t.Errorf("the consumer saw %d message groups, want 1", n)
					}
				}
				riPoll(t, 30*time.Second, "the DLQ to hold 20", func() bool { return s.count(dlq) == 20 })

				src2, dlq2, dlqName2 := setup("fixed")
				c2 := consumeSQS(t, s, src2, dlq2, fifo)
				c2.fixed.Store(true)
				out := runCanary(t, ExitOK, append(slices.Clone(s.args), "redrive", dlqName2, "--canary", "--canary-wait", canaryWait)...)
				if out.Canary.Stopped != nil || out.Moved != 20 {
					t.Errorf("fixed: stopped %+v, moved %d; want none, 20", out.Canary.Stopped, out.Moved)
				}
				if !fifo {
					if d := testdiff.Diff(fixedSteps, out.moves()); d != "" {
						t.Errorf("fixed: moved per step (-want +got):\n%s", d)
					}
				} else if m := out.moves(); len(m) < 2 || m[0] != 5 {
					t.Errorf("fixed: moved per step %v, want whole groups of 5, the first step one group", m)
				}
				riPoll(t, 30*time.Second, "the consumer to handle 20", func() bool { return c2.handled.Load() == 20 })
				if n := s.count(dlq2); n != 0 {
					t.Errorf("fixed: the DLQ holds %d, want 0", n)
				}
			})
		}
	}
}
