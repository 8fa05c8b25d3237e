package sqs

import (
	"fmt"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestTraits(t *testing.T) {
	var b *Broker
	for _, c := range []struct {
		q    broker.Queue
		want string
	}{
		{broker.Queue{Name: "dlq", Kind: broker.KindSQSStandard}, "ordered false parallel true"},
		{broker.Queue{Name: "dlq.fifo", Kind: broker.KindSQSFIFO}, "ordered true parallel false"},
		{broker.Queue{Name: "https://sqs.example/1/dlq.fifo"}, "ordered true parallel false"}, // not inspected
		{broker.Queue{Name: "dlq"}, "ordered false parallel true"},
	} {
		tr := b.Traits(c.q)
		got := fmt.Sprintf("ordered %v parallel %v", tr.Ordered, tr.ParallelReceivers)
		if got != c.want {
			t.Errorf("%s (kind %q): got %s, want %s", c.q.Name, c.q.Kind, got, c.want)
		}
		if tr.Park != broker.ParkHold || tr.ReceiveBatch != 10 || tr.MaxAttributes != 10 || tr.Attributes == nil || !tr.Attributes(&broker.Message{}) {
			t.Errorf("%s (kind %q): park %d, receive batch %d, max attributes %d: want hold (2), 10, 10 and attribute messages", c.q.Name, c.q.Kind, tr.Park, tr.ReceiveBatch, tr.MaxAttributes)
		}
		if tr.SinceByAge || tr.ParallelRead || tr.FilesOnly || tr.PeekAll != broker.PeekAuto {
			t.Errorf("%+v: since by age %v, parallel read %v, files only %v, peek all %q: want none", c.q, tr.SinceByAge, tr.ParallelRead, tr.FilesOnly, tr.PeekAll)
		}
	}
}
