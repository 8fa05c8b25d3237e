package archive

import (
	"context"
	"io"

	"github.com/dlq-tools/dlq/broker"
)

// Consume hands out the messages archived from queue in file order. Ack and
// Release do nothing: an archive is never modified by reading it, so a
// redrive from a file can be repeated (keep the file, or delete it yourself
// once the redrive succeeded).
func (b *Broker) Consume(ctx context.Context, queue string, opts broker.ConsumeOptions) (broker.Subscription, error) {
	r, err := b.reader()
	if err != nil {
		return nil, err
	}
	if !b.all(queue) {
		if _, err := b.Queue(ctx, queue); err != nil {
			r.Close()
			return nil, err
		}
	}
	return &subscription{b: b, r: r, queue: queue, limit: opts.Limit}, nil
}

type subscription struct {
	b     *Broker
	r     *Reader
	queue string
	limit int64
	n     int64
}

func (s *subscription) Next(ctx context.Context) (*broker.Delivery, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.limit > 0 && s.n >= s.limit {
			return nil, io.EOF
		}
		m, err := s.r.Next()
		if err != nil {
			return nil, err
		}
		if !s.b.all(s.queue) && m.Queue != s.queue {
			continue
		}
		s.b.prepare(m, s.r.Line())
		s.n++
		return &broker.Delivery{Message: m, Receipt: broker.Receipt{Tag: uint64(s.r.Line())}}, nil
	}
}

// Ack does nothing: archives are append-only and never changed by reading.
func (s *subscription) Ack(context.Context, ...broker.Receipt) error { return nil }

// Release does nothing, as Ack.
func (s *subscription) Release(context.Context, ...broker.Receipt) error { return nil }

func (s *subscription) Close() error { return s.r.Close() }
