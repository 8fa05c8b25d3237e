package redrive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// A receive whose answer was lost (SQS kept the message hidden, dlq never
// saw it) must not let a run report that it moved everything: it ends with
// an error that names the hidden messages and --resume, and counts them.
func TestSQSRunReportsMessagesLeftHidden(t *testing.T) {
	defer func(d time.Duration) { hiddenSettle = d }(hiddenSettle)
	hiddenSettle = 50 * time.Millisecond
	f := newFake(t, broker.SQS)
	q := f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 12; i++ {
		f.put("dlq", &broker.Message{Body: []byte(fmt.Sprint(i)), SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i)}})
	}
	// Two messages taken by a receive that never answered.
	f.mu.Lock()
	for i := 0; i < 2; i++ {
		f.tag++
		q.unacked[f.tag] = fakeUnacked{m: q.ready[0]}
		q.ready = q.ready[1:]
	}
	f.mu.Unlock()

	s, err := Run(context.Background(), f, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}})
	if err == nil || !strings.Contains(err.Error(), "2 messages of `dlq` are still hidden") || !strings.Contains(err.Error(), "`resume`") {
		t.Fatalf("err = %v", err)
	}
	if s.Moved != 10 || s.Hidden != 2 {
		t.Fatalf("moved %d, hidden %d; want 10, 2", s.Moved, s.Hidden)
	}
}

// Messages another consumer settles soon are no reason to report a run as
// partly done.
func TestSQSRunWaitsForOthersInFlight(t *testing.T) {
	defer func(d time.Duration) { hiddenSettle = d }(hiddenSettle)
	hiddenSettle = 5 * time.Second
	f := newFake(t, broker.SQS)
	q := f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 5; i++ {
		f.put("dlq", &broker.Message{Body: []byte(fmt.Sprint(i)), SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i)}})
	}
	f.mu.Lock()
	f.tag++
	other := f.tag
	q.unacked[other] = fakeUnacked{m: q.ready[0]}
	q.ready = q.ready[1:]
	f.mu.Unlock()
	go func() {
		time.Sleep(300 * time.Millisecond) // the other consumer deletes its message
		f.mu.Lock()
		delete(q.unacked, other)
		f.mu.Unlock()
	}()
	s, err := Run(context.Background(), f, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}})
	if err != nil || s.Moved != 4 || s.Hidden != 0 {
		t.Fatalf("moved %d, hidden %d, err %v; want 4, 0, nil", s.Moved, s.Hidden, err)
	}
}
