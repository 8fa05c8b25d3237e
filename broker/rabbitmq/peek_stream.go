package rabbitmq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// streamOffset parses a stream offset: first, last, next, an offset number,
// an RFC 3339 time, or a Go duration (2h, 30m) meaning that long before now.
func streamOffset(s string, now time.Time) (any, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "first":
		return "first", nil
	case "last":
		return "last", nil
	case "next":
		return "next", nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return nil, broker.Hintf("stream offset %d is negative: check %s", n, broker.OptOffset)
		}
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return nil, broker.Hintf("stream offset %q: want first, last, next, an offset number, an RFC 3339 time (2024-05-01T10:00:00Z) or a duration such as 2h: check %s/%s", s, broker.OptOffset, broker.OptSince)
}

// streamFirstOffset is the offset of the oldest message the stream still
// holds (retention may have removed the ones before), or -1 when empty.
func (b *Broker) streamFirstOffset(ctx context.Context, queue string) (int64, error) {
	first := int64(-1)
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		w, err := startWindowed(ch, queue, 1, 1, amqp.Table{"x-stream-offset": "first"})
		if err != nil {
			return err
		}
		d, err := w.next(ctx, idleWait)
		if err != nil || d == nil {
			return err
		}
		if n, ok := rabbitrules.Int(d.Headers["x-stream-offset"]); ok {
			first = n
		}
		return nil
	})
	return first, err
}

// peekStream reads a stream from an offset without changing it.
func (b *Broker) peekStream(ctx context.Context, info peekInfo, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	rep := broker.PeekReport{Mode: broker.PeekStream}
	op := "peek stream `" + info.name + "`"
	off, err := streamOffset(opts.Offset, time.Now())
	if err != nil {
		return rep, err
	}
	if info.depth == 0 {
		return rep, nil
	}
	// The last offset, so that the walk ends at the end of the stream:
	// first offset + message count - 1. The count comes from the management
	// statistics and may lag by a statistics interval, so after the end a
	// short grace reads what has just arrived; an idle timeout covers a
	// count that is unknown or too high.
	end := int64(-1)
	if info.depth > 0 && off != "next" {
		first, err := b.streamFirstOffset(ctx, info.name)
		if err != nil {
			return rep, translateErr(op, err)
		}
		if first < 0 {
			return rep, nil
		}
		end = first + info.depth - 1
		if n, ok := off.(int64); ok && n > end {
			// Past the end: nothing to read (yet).
			return rep, nil
		}
	}
	limit := int64(opts.Limit)
	target := limit
	if target == 0 {
		target = 1 << 62
	}
	err = b.withChannel(ctx, func(ch *amqp.Channel) error {
		w, err := startWindowed(ch, info.name, target, 1000, amqp.Table{"x-stream-offset": off})
		if err != nil {
			return err
		}
		// Reading a stream changes nothing: a message whose headers the
		// client cannot read is shown with the rest, marked.
		w.passUnreadable = true
		// A stream delivers from its segments at once; a time offset past
		// the last message, or a count that is unknown, only has the idle
		// timeout to end on.
		wait := 3 * time.Second
		if _, isTime := off.(time.Time); isTime || end < 0 {
			wait = idleWait
		}
		for {
			d, err := w.next(ctx, wait)
			if err != nil {
				return err
			}
			if d == nil {
				return nil
			}
			// On a stream an ack only grants the consumer credit.
			if err := ch.Ack(d.DeliveryTag, false); err != nil {
				return err
			}
			m := fromDelivery(info.name, d)
			rep.Read++
			if err := visit(m); err != nil {
				if errors.Is(err, broker.ErrStop) {
					return nil
				}
				return err
			}
			wait = idleWait
			if n, ok := rabbitrules.Int(d.Headers["x-stream-offset"]); ok && end >= 0 && n >= end {
				wait = 100 * time.Millisecond
			}
		}
	})
	if err != nil {
		var be *broker.Error
		if errors.As(err, &be) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return rep, translateErr(op, err)
		}
		return rep, err
	}
	return rep, nil
}
