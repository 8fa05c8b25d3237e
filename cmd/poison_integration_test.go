package cmd

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/redrive"
)

// poisonRun is one scheduled redrive with --max-redrives: its summary.
func poisonRun(t *testing.T, args ...string) redrive.Summary {
	t.Helper()
	stdout, stderr, code := runDLQ(t, append(args, "-o", "json", "--no-journal", "--yes")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	return riSummary(t, stdout)
}

// checkPoisonRun compares the counts of a run.
func checkPoisonRun(t *testing.T, run int, s redrive.Summary, moved, limit, other int64, otherReason string) {
	t.Helper()
	got := []int64{s.Moved, s.Skipped[redrive.ReasonRedriveLimit], s.Skipped[otherReason]}
	if want := []int64{moved, limit, other}; !slices.Equal(got, want) {
		t.Errorf("run %d: moved, redrive-limit, %s = %v, want %v (summary skipped %v failed %v)", run, otherReason, got, want, s.Skipped, s.Failed)
	}
}

// A scheduled redrive with --max-redrives 2 on RabbitMQ (classic and
// quorum DLQs): a poison message that its consumer rejects after every
// redrive (so RabbitMQ dead-letters it back) goes round twice, then stays
// with redrive-limit, its record counting 2; a --filter counts first; a
// dry run reports the same.
func TestRedriveIntegrationRabbitMaxRedrives(t *testing.T) {
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			r := newRIRabbit(t)
			work, dlq := riDeadLetters(t, r, kind, 3) // m0 poison, m1 fine, m2 filtered out
			args := append(r.args, "redrive", "--yes", dlq, "--max-redrives", "2", "--filter", ".body.n != 2")
			// consume plays the work queue's consumer: m0 fails again
			// (rejected: dead-lettered back), the others succeed.
			consume := func() {
				for {
					d, ok, err := r.ch.Get(work, false)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						return
					}
					if d.MessageId == "m0" {
						err = d.Nack(false, false)
					} else {
						err = d.Ack(false)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			for run := 1; run <= 2; run++ {
				moved := int64(2)
				if run == 2 {
					moved = 1
				}
				checkPoisonRun(t, run, poisonRun(t, args...), moved, 0, 1, redrive.ReasonFiltered)
				r.waitDepth(work, int(moved))
				consume()
				r.waitDepth(dlq, 2)
			}
			checkPoisonRun(t, 3, poisonRun(t, args...), 0, 1, 1, redrive.ReasonFiltered)
			dry := poisonRun(t, append(args, "--dry-run")...)
			checkPoisonRun(t, 4, dry, 0, 1, 1, redrive.ReasonFiltered)
			if n := r.depth(work); n != 0 {
				t.Errorf("work queue holds %d after the limit, want 0", n)
			}
			left := r.drain(dlq)
			var ids []string
			for _, d := range left {
				ids = append(ids, d.MessageId)
				if d.MessageId != "m0" {
					continue
				}
				rec, _ := d.Headers[redrive.RedriveHeader].(amqp.Table)
				if fmt.Sprint(rec["count"]) != "2" {
					t.Errorf("m0's %s = %v, want count 2", redrive.RedriveHeader, d.Headers[redrive.RedriveHeader])
				}
			}
			if !slices.Equal(riSorted(ids), []string{"m0", "m2"}) {
				t.Errorf("left in the DLQ %v, want m0 (the limit) and m2 (filtered)", ids)
			}
		})
	}
}

// The same on SQS, standard and FIFO: the consumer of the source sends a
// failed message back to the DLQ with its attributes (x-dlq-redrive
// included). On FIFO a message the limit keeps holds the later messages
// of its group, in order (group-held), and other groups move.
func TestRedriveIntegrationSQSMaxRedrives(t *testing.T) {
	env := brokertest.SQS(t)
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(name, func(t *testing.T) {
			s := newRISQS(t, env.Endpoint)
			base := brokertest.Name(t, "poison")
			suffix, attrs := "", map[string]string(nil)
			if fifo {
				suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
			}
			dlqName := base + "-dlq" + suffix
			dlq := s.queue(dlqName, attrs)
			srcAttrs := map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, s.arn(dlq))}
			if fifo {
				srcAttrs["FifoQueue"] = "true"
			}
			src := s.queue(base+"-src"+suffix, srcAttrs)
			seq := 0
			entry := func(body, group string, a map[string]sqstypes.MessageAttributeValue) sqstypes.SendMessageBatchRequestEntry {
				e := sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(body), MessageAttributes: a}
				if fifo {
					seq++
					e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(fmt.Sprint("d", seq))
				}
				return e
			}
			s.send(dlq, entry("poison", "g0", nil), entry("fine-1", "g1", nil))
			// consume: the poison message fails again and goes back to the
			// DLQ as it came; then a new failure of group g0 arrives
			// behind it.
			consume := func(run int) {
				var back []sqstypes.SendMessageBatchRequestEntry
				for _, m := range s.drain(src) {
					if aws.ToString(m.Body) == "poison" {
						back = append(back, entry("poison", "g0", m.MessageAttributes))
					}
				}
				if len(back) != 1 {
					t.Fatalf("run %d: the poison message did not reach the source", run)
				}
				back = append(back, entry(fmt.Sprint("fine-g0-", run), "g0", nil))
				s.send(dlq, back...)
			}
			args := append(s.args, "redrive", "--yes", dlqName, "--max-redrives", "2")
			checkPoisonRun(t, 1, poisonRun(t, args...), 2, 0, 0, redrive.ReasonGroupHeld)
			consume(1)
			checkPoisonRun(t, 2, poisonRun(t, args...), 2, 0, 0, redrive.ReasonGroupHeld)
			consume(2)
			// Run 3: poison stays; behind it in group g0 fine-g0-2 stays
			// too on FIFO, and moves on a standard queue. (On FIFO, SQS
			// may deliver fine-g0-2 in the same receive, and dlq holds it,
			// group-held; or not before poison is back, and it is not
			// examined.)
			s3 := poisonRun(t, args...)
			if fifo {
				checkPoisonRun(t, 3, s3, 0, 1, s3.Examined-1, redrive.ReasonGroupHeld)
			} else {
				checkPoisonRun(t, 3, s3, 1, 1, 0, redrive.ReasonGroupHeld)
			}
			var left []string
			for _, m := range s.drain(dlq) {
				left = append(left, aws.ToString(m.Body))
				if aws.ToString(m.Body) != "poison" {
					continue
				}
				var rec struct{ Count int }
				_ = json.Unmarshal([]byte(aws.ToString(m.MessageAttributes[redrive.RedriveHeader].StringValue)), &rec)
				if rec.Count != 2 {
					t.Errorf("poison's %s = %v, want count 2", redrive.RedriveHeader, m.MessageAttributes[redrive.RedriveHeader])
				}
			}
			want := []string{"poison"}
			if fifo {
				want = append(want, "fine-g0-2") // in order behind it
			}
			if !slices.Equal(left, want) {
				t.Errorf("left in the DLQ %v, want %v", left, want)
			}
		})
	}
}
