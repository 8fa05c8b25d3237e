package archive

import (
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestTraits(t *testing.T) {
	var b *Broker
	tr := b.Traits(broker.Queue{Name: "a"})
	if tr.Park != broker.ParkRelease || tr.HoldInPlace != 0 || tr.ReceiveBatch != 0 || tr.ParallelReceivers || tr.Ordered || tr.MaxAttributes != 0 || tr.PeekAll != broker.PeekAuto {
		t.Errorf("archive traits: park %d, hold %d, receive batch %d, parallel %t, ordered %t, max attributes %d, peek %s; want the defaults (release %d, one receiver, peek %s)",
			tr.Park, tr.HoldInPlace, tr.ReceiveBatch, tr.ParallelReceivers, tr.Ordered, tr.MaxAttributes, tr.PeekAll, broker.ParkRelease, broker.PeekAuto)
	}
	if !tr.SinceByAge || !tr.ParallelRead || !tr.FilesOnly {
		t.Errorf("archive traits: since by age %v, parallel read %v, files only %v: want all true", tr.SinceByAge, tr.ParallelRead, tr.FilesOnly)
	}
	for sys, want := range map[broker.System]bool{broker.SQS: true, broker.RabbitMQ: false, "": false} {
		if got := tr.Attributes(&broker.Message{System: sys}); got != want {
			t.Errorf("a message archived from %q keeps attributes: %v, want %v", sys, got, want)
		}
	}
}
