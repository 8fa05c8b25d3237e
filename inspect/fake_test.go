package inspect

import (
	"context"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// fakePeeker serves msgs in order and fails the test when it was expected to
// be called and never was.
type fakePeeker struct {
	msgs   []*broker.Message
	calls  []broker.PeekOptions
	report broker.PeekReport
	err    error
}

func newFakePeeker(t *testing.T, msgs ...*broker.Message) *fakePeeker {
	p := &fakePeeker{msgs: msgs, report: broker.PeekReport{Mode: broker.PeekStream}}
	t.Cleanup(func() {
		if len(p.calls) == 0 && !t.Failed() {
			t.Error("Peek was never called")
		}
	})
	return p
}

func (p *fakePeeker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	p.calls = append(p.calls, opts)
	rep, err := Messages(p.msgs).Peek(ctx, queue, opts, visit)
	rep.Mode, rep.Changed = p.report.Mode, p.report.Changed
	if err != nil {
		return rep, err
	}
	return rep, p.err
}

type fakePublisher struct {
	got     []broker.Outgoing
	batches int
}

func (f *fakePublisher) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	f.batches++
	f.got = append(f.got, msgs...)
	return make([]error, len(msgs)), nil
}

// rotatingPeeker peeks as RabbitMQ's rotate mode does: each message is
// taken, visited, then settled (republished to the back and acked). The
// settle runs when visit returns, an error included, but not when visit
// panics: the program would die with the message taken.
type rotatingPeeker struct {
	msgs           []*broker.Message
	taken, settled int
}

func (p *rotatingPeeker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	var rep broker.PeekReport
	for _, m := range p.msgs {
		p.taken++
		rep.Read++
		err := visit(m)
		p.settled++
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}
