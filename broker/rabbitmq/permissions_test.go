package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// The monitoring user: may read every queue and use the management API,
// may neither configure nor write anything.
func openMonitoring(t *testing.T, env brokertest.RabbitEnv) *Broker {
	t.Helper()
	u := env.User(t, "monitor", "monitoring", "^$", "^$", ".*")
	b, err := Open(context.Background(), Config{URL: u, ManagementURL: env.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open as the monitoring user: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// deliveryCounts takes every message of queue (acking) and returns how many
// there were and the highest x-delivery-count among them.
func deliveryCounts(t *testing.T, b *Broker, queue string) (n int, highest int64) {
	t.Helper()
	err := b.withChannel(context.Background(), func(ch *amqp.Channel) error {
		for {
			d, ok, err := ch.Get(queue, true)
			if err != nil || !ok {
				return err
			}
			n++
			if c, _ := rabbitrules.Int(d.Headers["x-delivery-count"]); c > highest {
				highest = c
			}
		}
	})
	if err != nil {
		t.Fatalf("drain %s: %v", queue, err)
	}
	return n, highest
}

// TestPeekWithoutWritePermissionNeverHarms: a user with read permission
// only peeks a quorum queue with a delivery limit of 2, three times. Rotate
// mode (the default there) would have its publishes refused, and the
// refusal would return every held delivery with x-delivery-count +1: after
// three peeks the queue was empty. Each peek is now refused before it takes
// anything, naming why and the fix; every message stays, uncounted. Where
// a requeue does not count (4.3), the peeks hold and nack, which needs no
// write permission: they read, and still nothing is counted.
func TestPeekWithoutWritePermissionNeverHarms(t *testing.T) {
	admin, env := openTest(t)
	mon := openMonitoring(t, env)
	q := brokertest.Name(t, "ro-quorum")
	declareQueue(t, admin, q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(2)})
	publishN(t, admin, q, "m", 20, nil)
	free := !admin.requeueCounts()
	for i := 0; i < 3; i++ {
		rep, err := mon.Peek(context.Background(), q, broker.PeekOptions{Limit: 3}, func(*broker.Message) error { return nil })
		if free {
			if err != nil || rep.Mode != broker.PeekHold || rep.Read != 3 {
				t.Fatalf("peek %d as the monitoring user on %s: mode %s, read %d, err %v; want hold, 3, nil", i+1, env.Version, rep.Mode, rep.Read, err)
			}
			waitDepth(t, admin, q, 20)
			continue
		}
		if !errors.Is(err, broker.ErrAccessDenied) {
			t.Fatalf("peek %d as the monitoring user: err = %v, want access denied", i+1, err)
		}
		if rep.Read != 0 {
			t.Errorf("peek %d read %d messages before it was refused", i+1, rep.Read)
		}
		for _, want := range []string{"delivery limit of 2", "nothing was read or changed", "write permission on `amq.default`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal does not say %q: %v", want, err)
			}
		}
	}
	// The forced modes that would rotate near-limit messages are refused too.
	// (Where a requeue does not count, none writes: a forced hold or
	// requeue returns every message, and a rotation it may not publish
	// holds instead.)
	for _, mode := range []broker.PeekMode{broker.PeekRotate, broker.PeekHold, broker.PeekRequeue} {
		_, err := mon.Peek(context.Background(), q, broker.PeekOptions{Limit: 3, Mode: mode, Force: true}, func(*broker.Message) error { return nil })
		if free {
			if err != nil {
				t.Errorf("peek --mode %s --force as the monitoring user on %s: %v", mode, env.Version, err)
			}
			waitDepth(t, admin, q, 20)
			continue
		}
		if !errors.Is(err, broker.ErrAccessDenied) {
			t.Errorf("peek --mode %s --force as the monitoring user: err = %v, want access denied", mode, err)
		}
	}
	n, highest := deliveryCounts(t, admin, q)
	t.Logf("hostile tally: attack=read-only-user-peek queue=quorum limit=2 version=%s before=20 after=%d lost=%d duplicated=%d", env.Version, n, max(20-n, 0), max(n-20, 0))
	if n != 20 || highest != 0 {
		t.Fatalf("after the peeks the queue holds %d messages (want 20) with a highest x-delivery-count of %d (want 0)", n, highest)
	}
}

// TestPeekReadOnlyModeNeverPublishes: in read-only mode even an
// administrator's peek of a limited quorum queue publishes nothing: it is
// refused before anything is taken. Where a requeue does not count (4.3) it
// holds and nacks instead: it reads, publishes nothing and counts nothing.
func TestPeekReadOnlyModeNeverPublishes(t *testing.T) {
	admin, env := openTest(t)
	ro, err := Open(context.Background(), Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL, Timeout: 10 * time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	q := brokertest.Name(t, "ro-mode")
	declareQueue(t, admin, q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	publishN(t, admin, q, "m", 10, nil)
	free := !admin.requeueCounts()
	rep, err := ro.Peek(context.Background(), q, broker.PeekOptions{}, func(*broker.Message) error { return nil })
	switch {
	case free && (err != nil || rep.Mode != broker.PeekHold || rep.Read != 10):
		t.Fatalf("read-only peek of a limited quorum queue on %s: mode %s, read %d, err %v; want hold, 10, nil", env.Version, rep.Mode, rep.Read, err)
	case free:
		waitDepth(t, admin, q, 10)
	case !errors.Is(err, broker.ErrReadOnly) || !strings.Contains(err.Error(), "read-only"):
		t.Fatalf("read-only peek of a limited quorum queue: err = %v, want a read-only refusal", err)
	}
	if n, highest := deliveryCounts(t, admin, q); n != 10 || highest != 0 {
		t.Fatalf("after the read-only peek the queue holds %d messages (want 10) with a highest x-delivery-count of %d (want 0)", n, highest)
	}
	// Without a delivery limit (3.x) a hold read would still raise every
	// count: refused in read-only mode too. A classic queue is held.
	unlimited := brokertest.Name(t, "ro-unlimited")
	declareQueue(t, admin, unlimited, amqp.Table{"x-queue-type": "quorum"})
	publishN(t, admin, unlimited, "u", 3, nil)
	if _, err = ro.Peek(context.Background(), unlimited, broker.PeekOptions{}, func(*broker.Message) error { return nil }); free && err != nil {
		t.Errorf("read-only peek of a quorum queue without a limit on %s: %v", env.Version, err)
	} else if !free && !errors.Is(err, broker.ErrReadOnly) {
		t.Errorf("read-only peek of a quorum queue without a limit: err = %v, want a read-only refusal", err)
	}
	waitDepth(t, admin, unlimited, 3)
	if n, highest := deliveryCounts(t, admin, unlimited); n != 3 || highest != 0 {
		t.Errorf("after the read-only peek the unlimited queue holds %d (want 3) with a highest x-delivery-count of %d (want 0)", n, highest)
	}
	classic := brokertest.Name(t, "ro-classic")
	declareQueue(t, admin, classic, nil)
	publishN(t, admin, classic, "c", 3, nil)
	if rep, err := ro.Peek(context.Background(), classic, broker.PeekOptions{Mode: broker.PeekRotate}, func(*broker.Message) error { return nil }); err != nil || rep.Mode != broker.PeekHold || rep.Read != 3 {
		t.Errorf("read-only full read of a classic queue: mode %s, read %d, err %v; want hold, 3, nil", rep.Mode, rep.Read, err)
	}
}

// TestPeekWithoutWritePermissionReadsWhatIsSafe: the same monitoring user
// reads a classic queue (hold mode: nothing published), and a quorum queue
// without a delivery limit where the version has none by default (3.x):
// returned in hold mode, nothing can be dead-lettered. Every message stays.
func TestPeekWithoutWritePermissionReadsWhatIsSafe(t *testing.T) {
	admin, env := openTest(t)
	mon := openMonitoring(t, env)
	classic := brokertest.Name(t, "ro-classic")
	declareQueue(t, admin, classic, nil)
	publishN(t, admin, classic, "c", 10, nil)
	var ids []string
	rep, err := mon.Peek(context.Background(), classic, broker.PeekOptions{Limit: 3}, func(m *broker.Message) error {
		ids = append(ids, m.ID)
		return nil
	})
	if err != nil || rep.Read != 3 {
		t.Fatalf("peek of a classic queue as the monitoring user: read %d, err %v", rep.Read, err)
	}
	waitDepth(t, admin, classic, 10)
	if got := drainIDs(t, admin, classic); strings.Join(got, ",") != strings.Join(seq("c", 0, 10), ",") {
		t.Errorf("classic queue after the peek: %v, want c-0…c-9 in order", got)
	}

	quorum := brokertest.Name(t, "ro-unlimited")
	declareQueue(t, admin, quorum, amqp.Table{"x-queue-type": "quorum"})
	publishN(t, admin, quorum, "q", 10, nil)
	rep, err = mon.Peek(context.Background(), quorum, broker.PeekOptions{Limit: 3}, func(*broker.Message) error { return nil })
	if admin.serverMajor(context.Background()) >= 4 && admin.requeueCounts() {
		// 4.x gives every quorum queue a delivery limit of 20 (4.3 does
		// not count the hold's returns: held there, as on 3.x).
		if !errors.Is(err, broker.ErrAccessDenied) {
			t.Fatalf("peek of a quorum queue (default limit) as the monitoring user on %s: err = %v, want access denied", env.Version, err)
		}
	} else if err != nil || rep.Mode != broker.PeekHold || rep.Read != 3 {
		t.Fatalf("peek of an unlimited quorum queue as the monitoring user: mode %s, read %d, err %v; want hold, 3, nil", rep.Mode, rep.Read, err)
	}
	waitDepth(t, admin, quorum, 10)
}

func deref(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// TestHoldBoundAdvice: past the hold bound, a user who may write is told to
// rotate; a user who may not (or read-only mode) is told what works for
// them: a smaller --limit, a larger --max-unacked with its cost, or a user
// who may write. (They were told to use rotate mode, which refuses them.)
func TestHoldBoundAdvice(t *testing.T) {
	info := peekInfo{name: "orders.dlq", kind: broker.KindClassic, depth: 20, bytes: 20 << 10}
	opts := broker.PeekOptions{MaxUnacked: 10}
	_, err := holdTarget(info, opts, broker.PeekHold, func() error { return nil })
	if !errors.Is(err, broker.ErrUnsafe) || !strings.Contains(err.Error(), "use `mode rotate`") {
		t.Errorf("a user who may write: %v, want the advice to rotate", err)
	}
	for _, tc := range []struct {
		name string
		nw   *errNoWrite
		want []string
	}{
		{"no write permission", &errNoWrite{user: "monitor", vhost: "/"},
			[]string{"nothing was read or changed", "user `monitor` may not write", "`limit 10`", "`max-unacked 20` (all 20 are then held at once, about 20.0K", "a user with write permission on `amq.default` in vhost `/`"}},
		{"read-only mode", &errNoWrite{readOnly: true},
			[]string{"dlq runs read-only", "`limit 10`", "`max-unacked 20`", "without read-only mode"}},
	} {
		_, err := holdTarget(info, opts, broker.PeekHold, func() error { return tc.nw })
		if !errors.Is(err, broker.ErrUnsafe) {
			t.Fatalf("%s: err = %v, want unsafe", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the refusal does not say %q:\n%v", tc.name, w, err)
			}
		}
		if strings.Contains(err.Error(), "use `mode rotate`") {
			t.Errorf("%s: the refusal advises rotate mode, which this user cannot use:\n%v", tc.name, err)
		}
	}
	// Past what AMQP can hold at once, a larger bound is no advice.
	big := peekInfo{name: "orders.dlq", kind: broker.KindClassic, depth: 100000}
	_, err = holdTarget(big, broker.PeekOptions{}, broker.PeekHold, func() error { return &errNoWrite{user: "monitor", vhost: "/"} })
	if err == nil || strings.Contains(err.Error(), "max-unacked 100000") || !strings.Contains(err.Error(), "`limit 5000`") {
		t.Errorf("100,000 messages: %v, want --limit 5000 and no --max-unacked 100000", err)
	}
}

// TestPeekWithoutWritePermissionPastTheHoldBound: the monitoring user
// reads a classic queue deeper than --max-unacked. The refusal names what
// that user can do, and each piece of advice works: --limit reads, a larger
// --max-unacked reads all; every message stays, in order.
func TestPeekWithoutWritePermissionPastTheHoldBound(t *testing.T) {
	admin, env := openTest(t)
	mon := openMonitoring(t, env)
	q := brokertest.Name(t, "ro-deep")
	declareQueue(t, admin, q, nil)
	publishN(t, admin, q, "c", 20, nil)
	rep, err := mon.Peek(context.Background(), q, broker.PeekOptions{MaxUnacked: 10}, func(*broker.Message) error { return nil })
	if !errors.Is(err, broker.ErrUnsafe) || rep.Read != 0 {
		t.Fatalf("peek of 20 with max-unacked 10 as the monitoring user: read %d, err %v; want an unsafe refusal before reading", rep.Read, err)
	}
	for _, want := range []string{"may not write", "`limit 10`", "`max-unacked 20`", "user with write permission"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "use `mode rotate`") {
		t.Errorf("the refusal advises rotate mode, which the monitoring user cannot use:\n%v", err)
	}
	for _, opts := range []broker.PeekOptions{{MaxUnacked: 10, Limit: 10}, {MaxUnacked: 20}} {
		rep, err := mon.Peek(context.Background(), q, opts, func(*broker.Message) error { return nil })
		want := int64(opts.Limit)
		if want == 0 {
			want = 20
		}
		if err != nil || rep.Read != want {
			t.Errorf("following the advice (%+v): read %d, err %v", opts, rep.Read, err)
		}
		waitDepth(t, admin, q, 20)
	}
	got := drainIDs(t, admin, q)
	t.Logf("hostile tally: attack=no-write-user-deep-classic version=%s before=20 after=%d lost=%d duplicated=%d", env.Version, len(got), max(20-len(got), 0), max(len(got)-20, 0))
	if strings.Join(got, ",") != strings.Join(seq("c", 0, 20), ",") {
		t.Fatalf("after the peeks the queue holds %v, want c-0…c-19 in order", got)
	}
}
