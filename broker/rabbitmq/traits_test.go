package rabbitmq

import (
	"fmt"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestTraits(t *testing.T) {
	var b *Broker
	for _, c := range []struct {
		kind broker.QueueKind
		want string
	}{
		{broker.KindClassic, "park 1 hold 1000 peek rotate retains false"},
		{broker.KindQuorum, "park 1 hold 0 peek rotate retains false"},
		{broker.KindStream, "park 1 hold 0 peek stream retains true"},
		{"", "park 1 hold 0 peek rotate retains false"}, // not inspected
	} {
		tr := b.Traits(broker.Queue{Name: "q", Kind: c.kind})
		got := fmt.Sprintf("park %d hold %d peek %s retains %t", tr.Park, tr.HoldInPlace, tr.PeekAll, tr.Retains)
		if tr.Park != broker.ParkRotate || got != c.want || tr.Ordered || tr.ParallelReceivers || tr.MaxAttributes != 0 || tr.Attributes != nil || tr.SinceByAge || tr.ParallelRead || tr.FilesOnly {
			t.Errorf("%q: got %s, park %d, ordered %t, parallel %t, max attributes %d, attributes set %t, since by age %t, parallel read %t, files only %t; want %s, park %d, nothing else",
				c.kind, got, tr.Park, tr.Ordered, tr.ParallelReceivers, tr.MaxAttributes, tr.Attributes != nil, tr.SinceByAge, tr.ParallelRead, tr.FilesOnly, c.want, broker.ParkRotate)
		}
	}
}

// A whole quorum queue is read by rotation where a requeue counts, and held
// where it does not (4.3) when it fits in the hold bound.
func TestTraitsPeekAllByVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		kind    broker.QueueKind
		depth   int64
		want    broker.PeekMode
	}{
		{"3.10.8", broker.KindQuorum, 10, broker.PeekRotate},
		{"4.0.5", broker.KindQuorum, 10, broker.PeekRotate},
		{"4.3.6", broker.KindQuorum, 10, broker.PeekHold},
		{"4.3.6", broker.KindQuorum, DefaultMaxUnacked, broker.PeekHold},
		{"4.3.6", broker.KindQuorum, DefaultMaxUnacked + 1, broker.PeekRotate},
		{"4.3.6", broker.KindClassic, 10, broker.PeekRotate},
		{"4.3.6", "", 0, broker.PeekRotate},
		{"", broker.KindQuorum, 10, broker.PeekRotate},
	} {
		b := &Broker{amqpVersion: c.version}
		if got := b.Traits(broker.Queue{Name: "q", Kind: c.kind, Depth: c.depth}).PeekAll; got != c.want {
			t.Errorf("RabbitMQ %q, %q queue of %d: whole read %s, want %s", c.version, c.kind, c.depth, got, c.want)
		}
	}
}
