package cmd

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// parseSince reads "30m", "2h", "7d", "1w" or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(s, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseFloat(strings.TrimSpace(s[:len(s)-1]), 64)
		if err == nil && n >= 0 {
			return now.Add(-time.Duration(n * float64(unit))), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, flagErrorf("bad `--since` %q: use a duration such as 30m, 2h, 7d, or an RFC 3339 time such as 2026-03-01T12:00:00Z", s)
}

// openPeeker opens the broker of a queue reference for peeking.
func openPeeker(ctx context.Context, f *Factory, ref string) (broker.Broker, broker.Peeker, string, error) {
	if f.OpenQueue == nil {
		return nil, nil, "", errors.New("no broker configured: give `--broker URL`, a context, or a file:// archive")
	}
	b, name, err := f.OpenQueue(ctx, ref)
	if err != nil {
		return nil, nil, "", err
	}
	p, ok := b.(broker.Peeker)
	if !ok {
		b.Close()
		return nil, nil, "", broker.Errorf(broker.ErrUnsupported, "peek "+ref, "%s cannot read messages without removing them", b.String())
	}
	return b, p, name, nil
}

// fullRead picks the read mode of a command that reads a whole queue (stats,
// export) when `--mode` was not given: the one the queue's traits give for
// a whole read (RabbitMQ classic and quorum queues: rotation, so that at
// most a window of deliveries is ever unacknowledged however deep the
// queue). A broker that declares none is not asked about the queue; a
// queue that could not be inspected keeps the adapter's default.
func fullRead(ctx context.Context, b broker.Broker, queue string, po broker.PeekOptions) broker.PeekOptions {
	if po.Mode != broker.PeekAuto || po.Limit != 0 || broker.TraitsOf(b, broker.Queue{Name: queue}).PeekAll == broker.PeekAuto {
		return po
	}
	qi, ok := b.(broker.QueueInspector)
	if !ok {
		return po
	}
	if q, err := qi.Queue(ctx, queue); err == nil {
		po.Mode = broker.TraitsOf(b, q).PeekAll
	}
	return po
}
