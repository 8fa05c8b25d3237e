package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"sort"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// metaLine is the part of a record that queue listings need.
type metaLine struct {
	DLQArchive   *int          `json:"dlq_archive"`
	System       broker.System `json:"system"`
	Queue        string        `json:"queue"`
	Body         *string       `json:"body"`
	BodyEncoding string        `json:"body_encoding"`
	Timestamp    stamp         `json:"timestamp"`
	Death        *metaDeath    `json:"death"`
	// text is the body when the fast decoder read the line (Body is nil).
	text []byte
}

type metaDeath struct {
	Queue    string `json:"queue"`
	QueueARN string `json:"queue_arn"`
	First    stamp  `json:"first"`
}

func (l *metaLine) version() *int { return l.DLQArchive }

// nextMeta reads the next record's listing fields, through the fast decoder
// when it can.
func (r *Reader) nextMeta(l *metaLine, rec *record) error {
	for {
		raw, err := r.nextLine()
		if err != nil {
			return err
		}
		if r.header != nil {
			*rec = record{}
			if fastMeta(raw, rec) {
				rec.normaliseTimes()
				*l = metaLine{System: rec.System, Queue: rec.Queue, text: rec.text, BodyEncoding: rec.BodyEncoding, Timestamp: rec.Timestamp}
				if d := rec.Death; d != nil {
					l.Death = &metaDeath{Queue: d.Queue, QueueARN: d.QueueARN, First: d.First}
				}
				return nil
			}
		}
		l.reset()
		isHeader, err := r.decodeLine(raw, l)
		if err != nil {
			return err
		}
		if !isHeader {
			return nil
		}
	}
}
func (l *metaLine) reset() { *l = metaLine{} }

func (l *metaLine) size() int64 {
	text := l.text
	if l.Body != nil {
		text = []byte(*l.Body)
	}
	if l.BodyEncoding == "base64" {
		return int64(base64.StdEncoding.DecodedLen(len(text)) - bytes.Count(text[max(len(text)-2, 0):], []byte("=")))
	}
	return int64(len(text))
}

func (l *metaLine) born() time.Time {
	if l.Death != nil && !l.Death.First.IsZero() {
		return l.Death.First.Time
	}
	return l.Timestamp.Time
}

type queueAcc struct {
	q       broker.Queue
	bytes   int64
	oldest  time.Time
	sources map[string]bool
	death   bool
}

// Queues lists the distinct queues the archive's messages came from, with
// their message counts, total body bytes and the age of the oldest message,
// in one pass over the file.
func (b *Broker) Queues(ctx context.Context) ([]broker.Queue, error) {
	accs, err := b.scan(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]broker.Queue, 0, len(accs))
	for _, a := range accs {
		out = append(out, b.finish(a))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Queue describes one queue of the archive; "" or the file's name is the
// whole file. A queue with no messages in the file is broker.ErrNotFound.
func (b *Broker) Queue(ctx context.Context, name string) (broker.Queue, error) {
	if b.all(name) {
		accs, err := b.scan(ctx, func(string) string { return b.name })
		if err != nil {
			return broker.Queue{}, err
		}
		if a, ok := accs[b.name]; ok {
			return b.finish(a), nil
		}
		return b.finish(&queueAcc{q: broker.Queue{Name: b.name}}), nil
	}
	accs, err := b.scan(ctx, func(q string) string {
		if q == name {
			return q
		}
		return ""
	})
	if err != nil {
		return broker.Queue{}, err
	}
	a, ok := accs[name]
	if !ok {
		return broker.Queue{}, b.notFound(ctx, name)
	}
	return b.finish(a), nil
}

func (b *Broker) notFound(ctx context.Context, name string) error {
	hint := broker.Hintf("no messages from queue `%s` in the archive: list its queues with %s", name, broker.Cmd("queues", broker.OptBroker.With(b.String())))
	return &broker.Error{Kind: broker.ErrNotFound, Op: "archive " + b.String(), Hint: hint}
}

// scan reads every record once. key maps a record's queue to the queue it
// counts for ("" skips it); nil counts every record under its own queue.
func (b *Broker) scan(ctx context.Context, key func(string) string) (map[string]*queueAcc, error) {
	r, err := b.reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	accs := map[string]*queueAcc{}
	var (
		l   metaLine
		rec record
	)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := r.nextMeta(&l, &rec); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		name := l.Queue
		if key != nil {
			if name = key(l.Queue); name == "" {
				continue
			}
		}
		a := accs[name]
		if a == nil {
			a = &queueAcc{q: broker.Queue{Name: name}, sources: map[string]bool{}}
			accs[name] = a
		}
		a.q.Depth++
		a.bytes += l.size()
		if t := l.born(); !t.IsZero() && (a.oldest.IsZero() || t.Before(a.oldest)) {
			a.oldest = t
		}
		if l.Death != nil {
			a.death = true
			if l.Death.Queue != "" {
				a.sources[l.Death.Queue] = true
			}
		}
	}
	return accs, nil
}

func (b *Broker) finish(a *queueAcc) broker.Queue {
	q := a.q
	q.System = broker.Archive
	q.Kind = broker.KindArchive
	q.URL = b.String()
	bytes := a.bytes
	q.Bytes = &bytes
	if !a.oldest.IsZero() {
		age := time.Since(a.oldest.Add(b.shift)).Truncate(time.Second)
		q.OldestAge = &age
	}
	for s := range a.sources {
		q.DeadLetterSources = append(q.DeadLetterSources, s)
	}
	sort.Strings(q.DeadLetterSources)
	// An archive knows no topology: its messages' death records say a
	// queue held dead letters, else the name may.
	q.Role, q.RoleSource = broker.RoleWork, broker.RoleByDefault
	if r, ok := broker.RoleFromQueueName(q.Name); ok {
		q.Role, q.RoleSource = r, broker.RoleFromName
	}
	if a.death {
		q.RoleSource = broker.RoleFromMessages
		if !q.Role.IsDead() {
			q.Role = broker.RoleDLQ
		}
	}
	q.IsDLQ = q.Role.IsDead()
	return q
}
