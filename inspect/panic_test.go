package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// A panic while computing over one message's values ends the read with an
// error naming the message, and the peeker still settles every message it
// took: a rotation is never left half done.
func TestPanicInAVisitIsAnErrorAndEveryMessageIsSettled(t *testing.T) {
	msgs := []*broker.Message{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	boom := func(ctx context.Context, m *broker.Message) (string, error) {
		if m.ID == "b" {
			var d []int
			_ = d[len(m.ID)] // index out of range
		}
		return "ok", nil
	}
	reads := map[string]func(p broker.Peeker) error{
		"stats": func(p broker.Peeker) error {
			_, err := NewStats("q", StatsOptions{Reason: boom}).Read(context.Background(), p, "q", broker.PeekOptions{}, nil)
			return err
		},
		"groups": func(p broker.Peeker) error {
			_, err := NewGroupSelector([]string{"x"}, boom).Resolve(context.Background(), p, "q", broker.PeekOptions{}, 0)
			return err
		},
		"walk": func(p broker.Peeker) error {
			_, err := Walk(context.Background(), p, "q", WalkOptions{}, func(m *broker.Message) error {
				_, err := boom(context.Background(), m)
				return err
			})
			return err
		},
	}
	for name, read := range reads {
		p := &rotatingPeeker{msgs: msgs}
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: the panic reached the caller: %v", name, r)
				}
			}()
			err = read(p)
		}()
		var pe *broker.PanicError
		if !errors.As(err, &pe) || pe.ID != "b" || !strings.Contains(string(pe.Stack), "inspect") {
			t.Errorf("%s: err = %v, want a PanicError for message b with its stack", name, err)
		}
		if p.taken != 2 || p.settled != p.taken {
			t.Errorf("%s: took %d messages, settled %d; want 2 and 2", name, p.taken, p.settled)
		}
	}
}
