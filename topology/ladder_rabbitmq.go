package topology

import "github.com/dlq-tools/dlq/broker"

// How a retry ladder counts attempts.
//
// RabbitMQ has no attempt counter for a message that goes round a ladder:
// a quorum delivery limit counts redeliveries within one queue and starts
// again after every dead-lettering. What RabbitMQ does keep is the x-death
// header: every time a message expires from a tier queue, the entry for
// (tier queue, expired) counts up — as long as only the broker moves the
// message. When a client publishes a copy, RabbitMQ 3.13 and later start a
// new death history at its next death (the x-death a client sends is not
// continued), while 3.12 and earlier continued it. So the ladder carries
// the attempts made so far in a header of its own, AttemptsHeader, on every
// copy the consumer publishes, and leaves the broker's death headers off
// those copies: both versions then count the same way. A ladder's
// MaxAttempts is enforced by the consumer of the main queue, with
// OnFailure:
//
//   - attempt n = AttemptsHeader (1 when absent) + the number of times the
//     message expired from one of the ladder's tier queues since;
//   - when a processing attempt fails and n < MaxAttempts, the message goes
//     to tier min(n, tiers)-1: for the first tier the consumer simply rejects
//     it (basic.nack, requeue=false), since the main queue's dead-letter
//     settings already route there; for later tiers it publishes a copy
//     with RetryHeaders to the retry exchange with that tier's routing key,
//     waits for the publisher confirm, then acknowledges the original;
//   - when n ≥ MaxAttempts it publishes the copy, headers kept, to the dead
//     exchange, waits for the confirm, then acknowledges the original.

// AttemptsHeader holds the attempts a message had made when a ladder's
// consumer last published a copy of it (an integer). It is not an x-
// header: RabbitMQ leaves application headers alone.
const AttemptsHeader = "retry-attempts"

// deathHeaders are the broker's death headers, left off a retry copy.
var deathHeaders = []string{"x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason",
	"x-last-death-exchange", "x-last-death-queue", "x-last-death-reason", "x-delivery-count"}

// Step is where a failed message goes next.
type Step struct {
	// Attempt is the attempt that just failed, from 1.
	Attempt int64 `json:"attempt"`
	// Dead is true when the message has used up its attempts: publish it to
	// Exchange (the dead exchange) and acknowledge the original.
	Dead bool `json:"dead"`
	// Reject is true when a plain reject (requeue=false) is enough: the
	// main queue dead-letters into the first tier.
	Reject bool `json:"reject"`
	// Tier is the index of the tier the message waits in, when not Dead.
	Tier       int    `json:"tier"`
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
}

// Attempt returns the attempt number of a message about to be processed,
// from its headers (AttemptsHeader) and death history (newest first, as
// broker.Death.History holds it).
func (l Ladder) Attempt(headers map[string]any, history []broker.DeathEntry) int64 {
	n := int64(1)
	if v, ok := broker.Int64(headers[AttemptsHeader]); ok && v > 0 {
		n = v
	}
	for _, d := range history {
		if d.Reason != "expired" {
			continue
		}
		for _, t := range l.Tiers {
			if d.Queue == t.Queue {
				n = broker.SatAdd(n, d.Count)
			}
		}
	}
	return max(n, 1)
}

// OnFailure says where a message whose processing just failed goes next.
func (l Ladder) OnFailure(headers map[string]any, history []broker.DeathEntry) Step {
	n := l.Attempt(headers, history)
	if n >= int64(l.MaxAttempts) || len(l.Tiers) == 0 {
		return Step{Attempt: n, Dead: true, Exchange: l.DeadExchange}
	}
	tier := int(min(n, int64(len(l.Tiers)))) - 1
	return Step{Attempt: n, Tier: tier, Reject: tier == 0, Exchange: l.RetryExchange, RoutingKey: l.Tiers[tier].RoutingKey}
}

// RetryHeaders are the headers of the copy a consumer publishes to a later
// tier after step: the message's own, without the broker's death headers,
// with AttemptsHeader set to the attempts made.
func RetryHeaders(headers map[string]any, step Step) map[string]any {
	out := make(map[string]any, len(headers)+1)
	for k, v := range headers {
		out[k] = v
	}
	for _, k := range deathHeaders {
		delete(out, k)
	}
	out[AttemptsHeader] = step.Attempt
	return out
}

// Ladder returns the expanded retry ladder called name.
func (m *Model) Ladder(name string) (Ladder, bool) {
	if m.Rabbit == nil {
		return Ladder{}, false
	}
	for _, l := range m.Rabbit.Ladders {
		if l.Name == name {
			return l, true
		}
	}
	return Ladder{}, false
}
