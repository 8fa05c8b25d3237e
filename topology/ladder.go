package topology

import "github.com/dlq-tools/dlq/broker"

// How a retry ladder counts attempts.
//
// RabbitMQ has no attempt counter for a message that goes round a ladder:
// a quorum delivery limit counts redeliveries within one queue and starts
// again after every dead-lettering. What RabbitMQ does keep is the x-death
// header: every time a message expires from a tier queue, the entry for
// (tier queue, expired) counts up. A ladder's MaxAttempts is therefore
// enforced by the consumer of the main queue, with OnFailure:
//
//   - attempt n = 1 + the number of times the message expired from one of
//     the ladder's tier queues;
//   - when a processing attempt fails and n < MaxAttempts, the message goes
//     to tier min(n, tiers)-1: for the first tier the consumer simply rejects
//     it (basic.nack, requeue=false), since the main queue's dead-letter
//     settings already route there; for later tiers it publishes a copy,
//     headers included, to the retry exchange with that tier's routing key,
//     waits for the publisher confirm, then acknowledges the original;
//   - when n ≥ MaxAttempts it publishes the copy to the dead exchange, waits
//     for the confirm, then acknowledges the original.
//
// Keeping the headers on republished copies keeps x-death, so the count
// survives every path.

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
// from its death history (newest first, as broker.Death.History holds it).
func (l Ladder) Attempt(history []broker.DeathEntry) int64 {
	n := int64(1)
	for _, d := range history {
		if d.Reason != "expired" {
			continue
		}
		for _, t := range l.Tiers {
			if d.Queue == t.Queue {
				n += d.Count
			}
		}
	}
	return n
}

// OnFailure says where a message whose processing just failed goes next.
func (l Ladder) OnFailure(history []broker.DeathEntry) Step {
	n := l.Attempt(history)
	if n >= int64(l.MaxAttempts) || len(l.Tiers) == 0 {
		return Step{Attempt: n, Dead: true, Exchange: l.DeadExchange}
	}
	tier := int(min(n, int64(len(l.Tiers)))) - 1
	return Step{Attempt: n, Tier: tier, Reject: tier == 0, Exchange: l.RetryExchange, RoutingKey: l.Tiers[tier].RoutingKey}
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
