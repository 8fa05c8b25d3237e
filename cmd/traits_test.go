package cmd

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// traitsBroker declares the traits it is given and the queue kind it is
// inspected as; it counts the inspections.
type traitsBroker struct {
	traits    func(broker.Queue) broker.Traits
	kind      broker.QueueKind
	inspected int
}

func (b *traitsBroker) System() broker.System { return "" }
func (b *traitsBroker) String() string        { return "fake:" }
func (b *traitsBroker) Close() error          { return nil }
func (b *traitsBroker) Traits(q broker.Queue) broker.Traits {
	return b.traits(q)
}
func (b *traitsBroker) Queue(ctx context.Context, name string) (broker.Queue, error) {
	b.inspected++
	if b.kind == "" {
		return broker.Queue{}, broker.ErrNotFound
	}
	return broker.Queue{Name: name, Kind: b.kind}, nil
}

// rotateClassic reads a whole classic queue by rotation, other kinds as
// the adapter likes, as RabbitMQ declares.
func rotateClassic(q broker.Queue) broker.Traits {
	if q.Kind == broker.KindQuorum {
		return broker.Traits{}
	}
	return broker.Traits{PeekAll: broker.PeekRotate}
}

// A whole read takes the mode the queue's traits give, and asks about the
// queue only a broker that declares one.
func TestFullReadFollowsTraits(t *testing.T) {
	ctx := context.Background()
	var got []string
	for _, c := range []struct {
		name   string
		b      *traitsBroker
		po     broker.PeekOptions
		inspec int
	}{
		{"declares none", &traitsBroker{traits: func(broker.Queue) broker.Traits { return broker.Traits{} }, kind: broker.KindClassic}, broker.PeekOptions{}, 0},
		{"classic", &traitsBroker{traits: rotateClassic, kind: broker.KindClassic}, broker.PeekOptions{}, 1},
		{"quorum", &traitsBroker{traits: rotateClassic, kind: broker.KindQuorum}, broker.PeekOptions{}, 1},
		{"not inspected", &traitsBroker{traits: rotateClassic}, broker.PeekOptions{}, 1},
		{"mode given", &traitsBroker{traits: rotateClassic, kind: broker.KindClassic}, broker.PeekOptions{Mode: broker.PeekHold}, 0},
		{"limit given", &traitsBroker{traits: rotateClassic, kind: broker.KindClassic}, broker.PeekOptions{Limit: 5}, 0},
	} {
		po := fullRead(ctx, c.b, "q", c.po)
		got = append(got, fmt.Sprintf("%s: mode %q, inspected %d", c.name, po.Mode, c.b.inspected))
	}
	want := []string{
		`declares none: mode "", inspected 0`,
		`classic: mode "rotate", inspected 1`,
		`quorum: mode "", inspected 1`,
		`not inspected: mode "", inspected 1`,
		`mode given: mode "hold", inspected 0`,
		`limit given: mode "", inspected 0`,
	}
	if d := diffText(strings.Join(want, "\n")+"\n", strings.Join(got, "\n")+"\n"); d != "" {
		t.Error(d)
	}
}

// --since selects by age on a broker without time offsets, and stays a
// start offset elsewhere.
func TestSinceByAgeFollowsTraits(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	byAge := &traitsBroker{traits: func(broker.Queue) broker.Traits { return broker.Traits{SinceByAge: true} }}
	p := peekFlags{Since: "2h", NewerThan: 3 * time.Hour}
	w := p.window(byAge, now)
	if w.NewerThan != 2*time.Hour || p.Since != "" || p.options(now, 0).Offset != "" {
		t.Errorf("since by age: window %+v, since %q left, offset %q; want newer than 2h and no offset", w, p.Since, p.options(now, 0).Offset)
	}
	offsets := &traitsBroker{traits: func(broker.Queue) broker.Traits { return broker.Traits{} }}
	p = peekFlags{Since: "2h"}
	w = p.window(offsets, now)
	if !w.IsZero() || p.options(now, 0).Offset != "2026-03-01T10:00:00Z" {
		t.Errorf("time offsets: window %+v, offset %q; want no window and the offset 2h ago", w, p.options(now, 0).Offset)
	}
}

// A source read in parallel keeps every processor during a move.
func TestOneProcessorFollowsTraits(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set")
	}
	if runtime.GOMAXPROCS(0) == 1 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
	}
	before := runtime.GOMAXPROCS(0)
	parallel := &traitsBroker{traits: func(broker.Queue) broker.Traits { return broker.Traits{ParallelRead: true} }}
	restore := oneProcessor(parallel)
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Errorf("GOMAXPROCS %d during a move from a source read in parallel, want %d", n, before)
	}
	restore()
	restore = oneProcessor(&traitsBroker{traits: func(broker.Queue) broker.Traits { return broker.Traits{} }})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d during a move from a broker, want 1", n)
	}
	restore()
}
