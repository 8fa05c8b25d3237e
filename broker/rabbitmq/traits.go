package rabbitmq

import "github.com/dlq-tools/dlq/broker"

var _ broker.QueueTraits = (*Broker)(nil)

// classicHoldMax is how many messages a run holds unacknowledged on a
// classic queue to put them back in place at the end.
const classicHoldMax = 1000

// Traits: a message that is not moved is rotated to the back of its queue
// (a release would deliver it again at once, and on a quorum queue raise its
// delivery count); a classic queue first holds up to classicHoldMax in
// place. A whole queue is peeked by rotation, a stream as a stream, and a
// quorum queue on a server where a requeue does not count (4.3 and later)
// by holding it, when all its messages fit in the hold bound.
func (b *Broker) Traits(q broker.Queue) broker.Traits {
	t := broker.Traits{Park: broker.ParkRotate, PeekAll: broker.PeekRotate}
	switch q.Kind {
	case broker.KindClassic:
		t.HoldInPlace = classicHoldMax
	case broker.KindStream:
		t.PeekAll = broker.PeekStream
		t.Retains = true
	case broker.KindQuorum:
		if !b.requeueCounts() && q.Depth <= DefaultMaxUnacked {
			t.PeekAll = broker.PeekHold
		}
	}
	return t
}
