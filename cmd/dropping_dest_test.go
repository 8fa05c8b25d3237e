package cmd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestRedriveRefusesADestinationThatDrops: a redrive of 60 messages into a
// queue with x-max-length 10 and overflow drop-head (set by argument, or by
// a policy) used to move all 60, keep 10 and exit 0: the broker confirms
// every publish and drops the oldest. Now the run and its dry run are
// refused before anything is taken, naming the limit; --allow-drop accepts
// it. A reject-publish queue needs no refusal: what it cannot take stays
// in the source.
func TestRedriveRefusesADestinationThatDrops(t *testing.T) {
	r := newRIRabbit(t)
	fill := func(q string, n int) {
		for i := range n {
			r.publish("", q, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte(fmt.Sprintf("m-%d", i))})
		}
		r.waitDepth(q, n)
	}
	for _, tc := range []struct {
		name   string
		args   amqp.Table
		policy map[string]any
	}{
		{"argument", amqp.Table{"x-max-length": int32(10), "x-overflow": "drop-head"}, nil},
		{"default-overflow", amqp.Table{"x-max-length": int32(10)}, nil},
		{"policy", nil, map[string]any{"max-length": 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := r.queue(brokertest.Name(t, "src"), nil)
			dst := r.queue(brokertest.Name(t, "dst"), tc.args)
			if tc.policy != nil {
				pol := brokertest.Name(t, "pol")
				mgmt(t, "PUT", "/policies/%2F/"+pol, map[string]any{"pattern": "^" + dst + "$", "definition": tc.policy, "apply-to": "queues", "priority": 100})
				t.Cleanup(func() { mgmt(t, "DELETE", "/policies/%2F/"+pol, nil) })
				riPoll(t, 30*time.Second, "the policy to apply", func() bool {
					_, stderr, code := runDLQ(t, append(r.args, "redrive", src, "--to", "queue:"+dst, "--dry-run", "-o", "json")...)
					return code != ExitOK && strings.Contains(stderr, "drop-head")
				})
			}
			fill(src, 60)
			for _, dry := range []bool{true, false} {
				args := append(r.args, "redrive", src, "--to", "queue:"+dst, "--yes", "-o", "json")
				if dry {
					args = append(args, "--dry-run")
				}
				_, stderr, code := runDLQ(t, args...)
				if code != ExitError || !strings.Contains(stderr, "max-length 10") || !strings.Contains(stderr, "overflow drop-head") || !strings.Contains(stderr, "--allow-drop") {
					t.Fatalf("redrive (dry run %t) into a drop-head queue: exit %d, stderr %q; want exit 1 naming the limit, drop-head and --allow-drop", dry, code, stderr)
				}
			}
			src60, dst0 := r.depth(src), r.depth(dst)
			t.Logf("hostile tally: attack=drop-head-destination via=%s version=%s before=60 after=%d lost=%d", tc.name, brokertest.RabbitMQ(t).Version, src60+dst0, 60-src60-dst0)
			if src60 != 60 || dst0 != 0 {
				t.Fatalf("after the refusals: source %d (want 60), destination %d (want 0)", src60, dst0)
			}
			stdout, stderr, code := runDLQ(t, append(r.args, "redrive", src, "--to", "queue:"+dst, "--yes", "--allow-drop", "-o", "json")...)
			if code != ExitOK {
				t.Fatalf("redrive --allow-drop: exit %d: %s", code, stderr)
			}
			if s := riSummary(t, stdout); s.Moved != 60 {
				t.Errorf("redrive --allow-drop moved %d, want 60 (the user accepted the drops)", s.Moved)
			}
		})
	}

	t.Run("reject-publish", func(t *testing.T) {
		src := r.queue(brokertest.Name(t, "src"), nil)
		dst := r.queue(brokertest.Name(t, "dst"), amqp.Table{"x-max-length": int32(10), "x-overflow": "reject-publish"})
		fill(src, 60)
		stdout, stderr, code := runDLQ(t, append(r.args, "redrive", src, "--to", "queue:"+dst, "--yes", "-o", "json")...)
		s := riSummary(t, stdout)
		after := r.depth(src) + r.depth(dst)
		t.Logf("hostile tally: attack=reject-publish-destination version=%s before=60 after=%d lost=%d", brokertest.RabbitMQ(t).Version, after, 60-after)
		if code != ExitPartial || s.Moved != 10 || after != 60 {
			t.Fatalf("redrive into reject-publish: exit %d, moved %d, source+destination %d; want exit 3, 10 moved, 60 kept (stderr %s)", code, s.Moved, after, stderr)
		}
	})
}

// TestRedriveNoOriginErrorsNameTheirOwnMessage: three messages without a
// death record, redriven to their origin: each no-origin line names its
// own message and no other. (The origin of the first was cached with its
// ID in the error, and every later line named the first message.)
func TestRedriveNoOriginErrorsNameTheirOwnMessage(t *testing.T) {
	r := newRIRabbit(t)
	dlq := r.queue(brokertest.Name(t, "dlq"), nil)
	for _, id := range []string{"first-msg", "second-msg", "third-msg"} {
		r.publish("", dlq, amqp.Publishing{MessageId: id, Body: []byte(id)})
	}
	r.waitDepth(dlq, 3)
	stdout, stderr, code := runDLQ(t, append(r.args, "redrive", dlq, "--yes", "-o", "json")...)
	s := riSummary(t, stdout)
	if code != ExitError || s.Failed["no-origin"] != 3 {
		t.Fatalf("exit %d, failed %v; want exit 1 and 3 no-origin (stderr %s)", code, s.Failed, stderr)
	}
	if len(s.Errors) != 3 {
		t.Fatalf("errors %q: want one line a message", s.Errors)
	}
	for _, line := range s.Errors {
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "no-origin: "), ":")
		for _, other := range []string{"first-msg", "second-msg", "third-msg"} {
			if other != id && strings.Contains(line, other) {
				t.Errorf("the line of %s names %s: %q", id, other, line)
			}
		}
	}
	r.waitDepth(dlq, 3)
}
