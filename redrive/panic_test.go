package redrive

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// A panic while one message is selected or transformed stops the run with
// an error naming the message; every delivery taken is settled (moved or
// given back), none is left unacknowledged and none is lost.
func TestPanicOverAMessageStopsTheRunAndSettlesEveryDelivery(t *testing.T) {
	tr := func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		if m.ID == "m002" {
			var p *broker.Death
			_ = p.Count // nil dereference
		}
		return m.Clone(), nil
	}
	for _, dry := range []bool{false, true} {
		f := rabbitFake(t, broker.KindClassic, 5)
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("dry run %v: the panic reached the caller: %v", dry, r)
				}
			}()
			_, err = Run(context.Background(), f, "orders.dlq", f, Options{Transform: tr, DryRun: dry, Window: 1})
		}()
		var pe *broker.PanicError
		if !errors.As(err, &pe) || pe.ID != "m002" {
			t.Errorf("dry run %v: err = %v, want a PanicError for m002", dry, err)
		}
		q, qerr := f.Queue(context.Background(), "orders.dlq")
		if qerr != nil {
			t.Fatal(qerr)
		}
		if *q.InFlight != 0 {
			t.Errorf("dry run %v: %d deliveries left unacknowledged", dry, *q.InFlight)
		}
		all := append(f.readyIDs("orders"), f.readyIDs("orders.dlq")...)
		slices.Sort(all)
		if want := []string{"m000", "m001", "m002", "m003", "m004"}; !slices.Equal(all, want) {
			t.Errorf("dry run %v: messages %v, want %v once each", dry, all, want)
		}
		if !slices.Contains(f.readyIDs("orders.dlq"), "m002") {
			t.Errorf("dry run %v: m002 left the DLQ: %v", dry, f.readyIDs("orders"))
		}
	}
}
