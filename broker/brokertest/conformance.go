package brokertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Harness connects Conformance to one adapter and the server behind it. It
// makes queues, fills them and reads them back out of band: through the
// server's own client or the file itself, never through the adapter under
// test, so that the suite sees what the adapter really did.
type Harness struct {
	// Broker is the adapter under test, open on the server. Conformance
	// does not close it.
	Broker broker.Broker
	// Kinds are the queue kinds the adapter offers (classic, quorum,
	// stream; standard, FIFO; an archive's queue); each gets the
	// per-queue checks.
	Kinds []Kind
	// Count returns how many messages queue holds (ready, in flight and
	// unacknowledged alike), read out of band. The suite polls it until it
	// settles, so a count that lags (management statistics, SQS's
	// approximate numbers) is fine.
	Count func(t TB, queue string) int64
	// Contents returns the bodies of every message in queue, in queue
	// order, read out of band. It may take them: the suite calls it last.
	Contents func(t TB, queue string) []string
	// DeadLetters makes a work queue and its dead-letter queue, puts n
	// messages into the dead-letter queue as the broker dead-letters them,
	// and returns the dead-letter queue and where its messages came from.
	// Nil when the adapter resolves no origins.
	DeadLetters func(t TB, n int) (dlq string, origin broker.Destination)
	// Unroutable makes a destination that exists but routes to no queue
	// (RabbitMQ: an exchange without bindings); nil when the broker has
	// no such thing.
	Unroutable func(t TB) broker.Destination
	// Refusing makes a destination that refuses what is published to it
	// (RabbitMQ: a full queue with overflow reject-publish); nil when the
	// broker has none.
	Refusing func(t TB) broker.Destination
	// Secret is the password the adapter was opened with; String must
	// not show it.
	Secret string
	// Settle is how long a count may take to come to what the suite
	// expects; 0 means 90 seconds (management statistics lag, and the
	// machines that run the tests are loaded).
	Settle time.Duration
}

// Kind is one kind of queue the adapter offers.
type Kind struct {
	// Name names the subtests: "classic", "fifo".
	Name string
	// Kind is what QueueInspector must report for the queue; "" skips
	// that comparison.
	Kind broker.QueueKind
	// Make makes a queue of this kind, holding msgs in order, that is
	// removed when the test ends, and returns its name as the adapter
	// takes it. Group is for queues that keep order by group (SQS FIFO);
	// others ignore it.
	Make func(t TB, msgs []Fill) string
	// Unsupported names the capabilities the adapter refuses for this
	// kind with broker.ErrUnsupported ("consume", "purge"), with why. The
	// suite skips them only when the adapter does refuse so; a refusal of
	// a capability not named here is a failure.
	Unsupported map[string]string
	// Unchanging: reading the queue and settling its deliveries change
	// nothing (an archive): Ack removes no message.
	Unchanging bool
}

// Fill is one message a Kind.Make puts into its queue.
type Fill struct {
	Body  string
	Group string
}

// TB is what Conformance and a Harness need of a test: testing.TB's
// methods, and Run for subtests. A test of the suite itself passes a
// recorder instead of a *testing.T.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(f func())
	// Run runs f as a subtest named name and reports whether it passed
	// (a skipped subtest passes).
	Run(name string, f func(t TB)) bool
}

type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(TB)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}

// NameTB is Name for a TB: a queue or exchange name unique to this run.
func NameTB(t TB, prefix string) string { return name(t.Name(), prefix) }

// Conformance checks an adapter against the rules every adapter keeps, the
// way testing/fstest.TestFS checks a file system: it type-asserts each
// capability interface of package broker and, for every capability the
// adapter has, runs subtests against the real server behind h. A
// capability the adapter lacks is skipped with the reason, never passed.
//
//	func TestConformance(t *testing.T) {
//		brokertest.Conformance(t, brokertest.Harness{Broker: b, Kinds: …, Count: …, Contents: …})
//	}
func Conformance(t *testing.T, h Harness) {
	t.Helper()
	Check(testingT{t}, h)
}

// Check is Conformance on any TB.
func Check(t TB, h Harness) {
	t.Helper()
	if h.Broker == nil || h.Count == nil || h.Contents == nil || len(h.Kinds) == 0 {
		t.Fatalf("brokertest.Harness needs Broker, Count, Contents and at least one Kind")
	}
	s := &suite{h: h, b: h.Broker}
	t.Run("broker", s.identity)
	for _, k := range h.Kinds {
		t.Run(k.Name, func(t TB) { s.kind(t, k) })
	}
	t.Run("unroutable", s.unroutable)
	t.Run("refused", s.refused)
	t.Run("route", s.route)
	t.Run("origin", s.origin)
	t.Run("no-origin", s.noOrigin)
	t.Run("server-side-move", s.move)
	t.Run("exchange-names", s.exchangeNames)
	t.Run("server-version", func(t TB) {
		sv, ok := s.b.(broker.ServerVersioner)
		if !ok {
			s.lacks(t, "ServerVersioner")
		}
		if v, err := sv.ServerVersion(ctx(t)); err != nil || v == "" {
			t.Errorf("ServerVersion() = %q, %v; want the server's version", v, err)
		}
	})
	t.Run("flow", func(t TB) {
		if _, ok := s.b.(broker.FlowWatcher); !ok {
			s.lacks(t, "FlowWatcher")
		}
		t.Skipf("flow control needs a blocked broker, which the shared test servers must not be: the fault tests block their own (connection-blocked)")
	})
	t.Run("unreadable", func(t TB) {
		if _, ok := s.b.(broker.UnreadableTaker); !ok {
			s.lacks(t, "UnreadableTaker")
		}
		t.Skipf("a message the client cannot decode is made by a broker-specific trick: the adapter's own tests cover TakeUnreadable")
	})
}

type suite struct {
	h Harness
	b broker.Broker
}

func (s *suite) settle() time.Duration {
	if s.h.Settle > 0 {
		return s.h.Settle
	}
	return 90 * time.Second
}

func ctx(t TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func (s *suite) lacks(t TB, iface string) {
	t.Helper()
	t.Skipf("%s does not implement broker.%s", s.b.System(), iface)
}

// unsupported skips t when err is the adapter's documented refusal of
// capability for kind k, and fails it when the refusal is not documented.
func unsupported(t TB, k Kind, capability string, err error) {
	t.Helper()
	if !errors.Is(err, broker.ErrUnsupported) {
		return
	}
	if why, ok := k.Unsupported[capability]; ok {
		t.Skipf("%s queues refuse %s (%s): %v", k.Name, capability, why, err)
	}
	t.Fatalf("%s: %v: the adapter refuses %s for %s queues, which the harness does not declare (Kind.Unsupported)", capability, err, capability, k.Name)
}

// declaredUnsupported fails t when the harness declared capability
// unsupported but the adapter did it.
func declaredUnsupported(t TB, k Kind, capability string) {
	t.Helper()
	if why, ok := k.Unsupported[capability]; ok {
		t.Errorf("%s worked on a %s queue, but the harness declares it unsupported (%s)", capability, k.Name, why)
	}
}

// waitCount polls the harness's out-of-band count of queue until it is
// want, and fails t with the last count when it never is.
func (s *suite) waitCount(t TB, queue string, want int64, why string) {
	t.Helper()
	deadline := time.Now().Add(s.settle())
	wait := 20 * time.Millisecond
	for {
		got := s.h.Count(t, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d: %s", queue, got, want, why)
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// fills returns n messages with bodies unique to this run, in two groups.
func fills(n int) []Fill {
	var r [4]byte
	_, _ = rand.Read(r[:])
	tag := hex.EncodeToString(r[:])
	f := make([]Fill, n)
	for i := range f {
		f[i] = Fill{Body: fmt.Sprintf("conformance-%s-%02d", tag, i), Group: fmt.Sprintf("g%d", i%2)}
	}
	return f
}

func bodiesOf(f []Fill) []string {
	b := make([]string, len(f))
	for i, x := range f {
		b[i] = x.Body
	}
	return b
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// groupOrder returns, for each group of f, the bodies of got that belong to
// it, in got's order, and what they should be (f's order).
func groupOrder(f []Fill, got []string) (want, have []string) {
	group := map[string]string{}
	for _, x := range f {
		group[x.Body] = x.Group
	}
	in := map[string]bool{}
	for _, b := range got {
		in[b] = true
	}
	for _, g := range []string{"g0", "g1"} {
		for _, x := range f {
			if x.Group == g && in[x.Body] {
				want = append(want, x.Body)
			}
		}
		for _, b := range got {
			if group[b] == g {
				have = append(have, b)
			}
		}
	}
	return want, have
}

func missing(t TB) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "dlqt-conformance-missing-" + hex.EncodeToString(r[:])
}

// notFound fails t unless err says, as a typed broker error, that a queue
// is missing.
func notFound(t TB, op string, err error) {
	t.Helper()
	var be *broker.Error
	switch {
	case err == nil:
		t.Errorf("%s of a missing queue: no error, want broker.ErrNotFound", op)
	case !errors.Is(err, broker.ErrNotFound):
		t.Errorf("%s of a missing queue: %v (%T), want broker.ErrNotFound", op, err, err)
	case !errors.As(err, &be):
		t.Errorf("%s of a missing queue: %v (%T), want a *broker.Error that says why", op, err, err)
	}
}

func (s *suite) identity(t TB) {
	if s.b.System() == "" {
		t.Errorf("System() is empty")
	}
	str := s.b.String()
	if str == "" {
		t.Errorf("String() is empty: it names the broker in output and audit records")
	}
	if s.h.Secret != "" && strings.Contains(str, s.h.Secret) {
		t.Errorf("String() shows the password: it must be redacted")
	}
}
