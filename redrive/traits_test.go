package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// plainSource is a fake SQS source that declares no traits, as an adapter
// written without them would. Its subscriptions, like an archive's, do not
// deliver a released message again; Close gives back what is still taken.
type plainSource struct {
	f        *fakeBroker
	mu       sync.Mutex
	released int
}

func (p *plainSource) System() broker.System { return p.f.System() }
func (p *plainSource) String() string        { return "plain" }
func (p *plainSource) Close() error          { return nil }
func (p *plainSource) Queue(ctx context.Context, name string) (broker.Queue, error) {
	return p.f.Queue(ctx, name)
}
func (p *plainSource) Publish(ctx context.Context, outs []broker.Outgoing) ([]error, error) {
	return p.f.Publish(ctx, outs)
}
func (p *plainSource) Consume(ctx context.Context, queue string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	sub, err := p.f.Consume(ctx, queue, opts)
	if err != nil {
		return nil, err
	}
	return &plainSub{Subscription: sub, p: p}, nil
}

type plainSub struct {
	broker.Subscription
	p *plainSource
}

func (s *plainSub) Release(ctx context.Context, rs ...broker.Receipt) error {
	s.p.mu.Lock()
	s.p.released += len(rs)
	s.p.mu.Unlock()
	return nil
}

// A source that declares no traits gets the safe defaults: one
// subscription, and what is not moved is released, never rotated or held.
func TestSourceWithoutTraitsReleasesWithOneReceiver(t *testing.T) {
	f := newFake(t, broker.SQS)
	f.declare("dlq", broker.KindSQSStandard)
	f.declare("src", broker.KindSQSStandard)
	for i := 0; i < 30; i++ {
		f.put("dlq", &broker.Message{Body: []byte(fmt.Sprint(i)), SystemAttributes: map[string]string{"MessageId": fmt.Sprintf("id-%02d", i)}})
	}
	p := &plainSource{f: f}
	sel := FilterFunc(func(ctx context.Context, m *broker.Message) (bool, error) { return m.Body[len(m.Body)-1] == '5', nil })
	s, err := Run(context.Background(), p, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}, Filter: sel})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("moved %d returned %d rotated %d released %d subscriptions %d published %d",
		s.Moved, s.Returned, s.Rotated, p.released, f.calls["consume"], f.published)
	want := "moved 3 returned 27 rotated 0 released 27 subscriptions 1 published 3"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if n := len(f.ready("dlq")); n != 27 {
		t.Errorf("%d messages back in the source after the run, want 27", n)
	}
}

// The destination's traits decide the FIFO IDs and the attribute mapping:
// an SQS message to a destination that keeps headers has its attributes
// turned into headers; to one that keeps attributes, --set-header becomes
// an attribute.
func TestDestinationTraitsShapeTheMessage(t *testing.T) {
	for _, c := range []struct {
		dst        broker.System
		queue      string
		wantHeader bool
		wantGroup  bool
	}{
		{broker.RabbitMQ, "orders", true, false},
		{broker.SQS, "orders", false, false},
		{broker.SQS, "orders.fifo", false, true},
	} {
		t.Run(string(c.dst)+"/"+c.queue, func(t *testing.T) {
			src := newFake(t, broker.SQS)
			src.declare("dlq", broker.KindSQSStandard)
			src.put("dlq", &broker.Message{Body: []byte("x"),
				Attributes:       map[string]broker.Attribute{"tenant": {DataType: "String", StringValue: "acme"}},
				SystemAttributes: map[string]string{"MessageId": "id-1", "MessageGroupId": "g1"}})
			dst := newFake(t, c.dst)
			dst.declare(c.queue, broker.KindClassic)
			_, err := Run(context.Background(), src, "dlq", dst, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: c.queue},
				SetHeaders: map[string]string{"fixed": "yes"}, NoRedriveHeader: true})
			if err != nil {
				t.Fatal(err)
			}
			ready := dst.ready(c.queue)
			if len(ready) != 1 {
				t.Fatalf("%d messages at the destination, want 1", len(ready))
			}
			m := ready[0]
			_, hdr := m.Headers["tenant"]
			_, fixedAttr := m.Attributes["fixed"]
			group := m.SystemAttributes["MessageGroupId"] == "g1" && strings.HasPrefix(m.SystemAttributes["MessageDeduplicationId"], "dlq-")
			got := fmt.Sprintf("tenant header %v, fixed attribute %v, group and dedup id %v", hdr, fixedAttr, group)
			want := fmt.Sprintf("tenant header %v, fixed attribute %v, group and dedup id %v", c.wantHeader, !c.wantHeader, c.wantGroup)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// A queue whose traits say reading removes nothing (a stream) is refused
// before anything is taken, with the way round it: whatever its kind is
// called, only the trait decides.
func TestRetainingSourceRefused(t *testing.T) {
	for _, kind := range []broker.QueueKind{broker.KindStream, broker.KindClassic} {
		f := newFake(t, broker.RabbitMQ)
		f.declare("dlq", kind)
		f.declare("src", broker.KindClassic)
		f.put("dlq", &broker.Message{Body: []byte("a")})
		_, err := Run(context.Background(), f, "dlq", f, Options{Dest: broker.Destination{Kind: broker.ToQueue, Queue: "src"}})
		refused := errors.Is(err, broker.ErrUnsupported)
		if want := kind == broker.KindStream; refused != want {
			t.Errorf("%s source: refused %v (%v), want %v", kind, refused, err, want)
		}
		if n := len(f.ready("dlq")); n != 1 && kind == broker.KindStream {
			t.Errorf("%s source: %d messages left, want 1", kind, n)
		}
	}
}
