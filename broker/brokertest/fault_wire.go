package brokertest

// Wire checks for the fault scenarios: a loopback proxy between dlq and the
// server reads what dlq says and what it is told, and records it in a
// WireLedger, which holds dlq to its contract on the wire — a source message
// is removed (an AMQP basic.ack, an SQS DeleteMessage) only after the
// destination confirmed a publish of that message (a publisher confirm, a
// successful SendMessageBatch entry). The servers' end state is counted
// separately; this proves the order of the steps, whatever a server or an
// emulator does afterwards.
//
// Every message of the fault scenarios has its ID as its body, so a proxy
// knows a message by its body in both directions.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// WireLedger is what a proxy saw: which message IDs a destination
// confirmed, and every removal from a source that came before its confirm.
// A FaultHarness returns the ledger its proxy records into; the ledger
// itself knows no protocol. Its methods are safe for concurrent use.
type WireLedger struct {
	mu        sync.Mutex
	confirmed map[string]bool
	// sent counts the sends of each message ID to each queue, "queue/id"
	// (every attempt: an SDK's retries pass the proxy too); nil where the
	// proxy does not count them.
	sent     map[string]int
	removals int      // acknowledgements or deletes checked
	bad      []string // removals with no confirm before them
}

// NewWireLedger returns an empty ledger.
func NewWireLedger() *WireLedger { return &WireLedger{confirmed: map[string]bool{}} }

// Confirm records that a destination confirmed message id.
func (l *WireLedger) Confirm(id string) {
	l.mu.Lock()
	l.confirmed[id] = true
	l.mu.Unlock()
}

// Send counts one send of id to queue. A proxy that counts sends lets the
// scenarios tell the server's duplicates (a message dlq sent once, stored
// twice) from dlq's.
func (l *WireLedger) Send(queue, id string) {
	l.mu.Lock()
	if l.sent == nil {
		l.sent = map[string]int{}
	}
	l.sent[queue+"/"+id]++
	l.mu.Unlock()
}

// Sends is how many times dlq sent id to queue; ok is false where the
// proxy does not count sends.
func (l *WireLedger) Sends(queue, id string) (n int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent == nil {
		return 0, false
	}
	return l.sent[queue+"/"+id], true
}

// Remove checks a removal of id from the source, named by how ("basic.ack
// of"): it must follow a confirm of id.
func (l *WireLedger) Remove(id, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removals++
	if !l.confirmed[id] {
		l.bad = append(l.bad, fmt.Sprintf("%s %s before any destination confirmed it", how, id))
	}
}

// Check fails t for every removal that came before its confirm, and
// returns how many removals were checked.
func (l *WireLedger) Check(t testing.TB) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range l.bad {
		if i == 10 {
			t.Errorf("… and %d more", len(l.bad)-10)
			break
		}
		t.Errorf("on the wire: %s", b)
	}
	return l.removals
}

// Verdict sums the ledger up in one line: "2 removals; bad: basic.ack of
// early before any destination confirmed it".
func (l *WireLedger) Verdict() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d removals; bad: %s", l.removals, strings.Join(l.bad, "; "))
}
