package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Broker is an archive file seen as a broker: its queues are the distinct
// queues its messages were archived from. Reading never modifies the file;
// acknowledging a delivery from an archive does nothing to it.
//
// An archive opened with Open publishes only to file destinations
// (broker.ToFile). One opened with Create also takes every other
// destination kind and appends those messages to its own file.
type Broker struct {
	path string // the file; "" for the embedded sample
	name string // the file's base name, or "demo"
	data []byte // the embedded sample's bytes
	// shift moves every time in the embedded sample so that it looks recent.
	shift time.Duration
	opts  WriterOptions

	mu      sync.Mutex
	own     *Writer            // set by Create, or by the first Publish of a Target
	lazy    bool               // a Target whose file does not exist yet
	writers map[string]*Writer // file destinations, by cleaned path
}

var (
	_ broker.Broker         = (*Broker)(nil)
	_ broker.QueueLister    = (*Broker)(nil)
	_ broker.QueueInspector = (*Broker)(nil)
	_ broker.Peeker         = (*Broker)(nil)
	_ broker.Consumer       = (*Broker)(nil)
	_ broker.Publisher      = (*Broker)(nil)
)

// Open opens the archive at path for reading (and for publishing to other
// file destinations). The file must exist and start like an archive.
func Open(path string) (*Broker, error) {
	if path == "" {
		return nil, errors.New("archive path is empty: use `file://PATH`")
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, openError(path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("open archive %s: is a directory: name a .jsonl or .jsonl.gz file", path)
	}
	b := &Broker{path: path, name: filepath.Base(path), writers: map[string]*Writer{}}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// Create opens the archive at path for appending, creating it when missing,
// and returns it as a broker that publishes every destination into it.
func Create(path string, opts WriterOptions) (*Broker, error) {
	w, err := NewWriter(path, opts)
	if err != nil {
		return nil, err
	}
	b := &Broker{path: path, name: filepath.Base(path), own: w, opts: opts, writers: map[string]*Writer{}}
	if err := b.check(); err != nil {
		w.Close()
		return nil, err
	}
	return b, nil
}

// Target is Create without touching the disk until the first Publish: the
// file (and its header) is created only when a message is written, so a
// dry run that opens a destination leaves nothing behind. The directory
// must exist and the path must not be a directory.
func Target(path string, opts WriterOptions) (*Broker, error) {
	if path == "" {
		return nil, errors.New("archive path is empty: use `file://PATH`")
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return nil, &broker.Error{Kind: broker.ErrNotFound, Op: "create archive " + path, Msg: "the directory does not exist: create it or choose another path"}
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return nil, fmt.Errorf("create archive %s: is a directory: name a .jsonl or .jsonl.gz file", path)
		}
		return Create(path, opts)
	}
	return &Broker{path: path, name: filepath.Base(path), opts: opts, lazy: true, writers: map[string]*Writer{}}, nil
}

// Writable returns an error when the archive cannot be written: a Target
// whose file does not exist yet creates and removes a file in its
// directory, so that a command that archives before it removes refuses
// before it takes anything rather than at its first write. An archive
// that exists was opened for appending already.
func (b *Broker) Writable() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.lazy || b.own != nil {
		return nil
	}
	fh, err := os.CreateTemp(filepath.Dir(b.path), ".dlq-check-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("create archive %s: %w: choose a path in a directory that can be written", b.path, err)
	}
	name := fh.Name()
	fh.Close()
	return os.Remove(name)
}

// check reads the first record so that a file that is not an archive fails
// at open rather than half-way through a command.
func (b *Broker) check() error {
	r, err := b.reader()
	if err != nil {
		return err
	}
	defer r.Close()
	var l metaLine
	if err := r.nextInto(&l); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// SetSource sets what later writes record as their source (the header of a
// new file and each record's broker).
func (b *Broker) SetSource(src Source) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opts.Source = src
	if b.own != nil {
		b.own.mu.Lock()
		b.own.opts.Source = src
		b.own.mu.Unlock()
	}
}

// System is broker.Archive.
func (b *Broker) System() broker.System { return broker.Archive }

// String is "file://PATH", or "demo:" for the embedded sample.
func (b *Broker) String() string {
	if b.data != nil {
		return "demo:"
	}
	return "file://" + b.path
}

// Path is the archive file ("" for the embedded sample).
func (b *Broker) Path() string { return b.path }

// Close flushes, fsyncs and closes every file written.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if b.own != nil {
		errs = append(errs, b.own.Close())
	}
	for _, w := range b.writers {
		errs = append(errs, w.Close())
	}
	b.writers = map[string]*Writer{}
	return errors.Join(errs...)
}

func (b *Broker) reader() (*Reader, error) {
	if b.lazy && b.own == nil {
		if _, err := os.Stat(b.path); errors.Is(err, os.ErrNotExist) {
			return NewReader(bytes.NewReader(nil), b.path)
		}
	}
	if b.data != nil {
		return NewReader(bytes.NewReader(b.data), "demo:")
	}
	return OpenReader(b.path)
}

// all reports whether a queue name means the whole file.
func (b *Broker) all(queue string) bool {
	return queue == "" || queue == b.name || queue == b.String() || queue == b.path
}

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
	msg := fmt.Sprintf("no messages from queue `%s` in the archive: list its queues with `dlq queues --broker %s`", name, b.String())
	return &broker.Error{Kind: broker.ErrNotFound, Op: "archive " + b.String(), Msg: msg}
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

// Peek visits the messages archived from queue ("" or the file's name: all
// of them) in file order. It changes nothing. opts.Offset may be a line
// number ("120" or "line 120") to start from; Position of each message is
// its recorded position, or "line N" when it has none.
//
// Lines are decoded on every CPU, a batch of lines at a time, and handed
// to visit one by one in file order from a single goroutine; a malformed
// line is reported, with its number, after every message before it. At
// most two batches of 256 KiB a CPU, plus two, are in flight, so memory
// does not grow with the file; stopping early ends the reading before Peek
// returns.
func (b *Broker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	return b.peek(ctx, queue, opts, visit, false)
}

// PeekReused is Peek for visitors that keep nothing of a message once visit
// returns: not the message, nor its Body, Headers, Attributes,
// SystemAttributes, Death or what they hold (its strings may be kept; they
// are never reused). Each message's memory is reused for a later one, so
// reading allocates little more than the strings and memory stays flat
// however large the file. Aggregations such as `dlq stats` read this way.
func (b *Broker) PeekReused(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	return b.peek(ctx, queue, opts, visit, true)
}

func (b *Broker) peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error, lending bool) (broker.PeekReport, error) {
	rep := broker.PeekReport{Mode: broker.PeekStream}
	from, err := parseOffset(opts.Offset)
	if err != nil {
		return rep, err
	}
	r, err := b.reader()
	if err != nil {
		return rep, err
	}
	defer r.Close()
	pr := readParallel(r, b.prepare, lending)
	defer pr.Close()
	all := b.all(queue)
	found := all
	for opts.Limit <= 0 || rep.Read < int64(opts.Limit) {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		m, line, err := pr.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		if !all && m.Queue != queue {
			continue
		}
		found = true
		if line < from {
			continue
		}
		rep.Read++
		if err := visit(m); err != nil {
			if errors.Is(err, broker.ErrStop) {
				return rep, nil
			}
			return rep, err
		}
	}
	if !found {
		return rep, b.notFound(ctx, queue)
	}
	return rep, nil
}

func parseOffset(s string) (int, error) {
	switch s {
	case "", "first":
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "line "))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("archive offset %q: use a line number, or `first`", s)
	}
	return n, nil
}

// prepare gives a message read from the file its line as position and, for
// the embedded sample, recent times.
func (b *Broker) prepare(m *broker.Message, line int) {
	if m.Position == "" {
		var buf [32]byte
		m.Position = string(strconv.AppendInt(append(buf[:0], "line "...), int64(line), 10))
	}
	if b.shift != 0 {
		shiftTimes(m, b.shift)
	}
}

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

// Publish appends each message to its file destination (or, for an archive
// opened with Create, to the archive itself whatever the destination) and
// fsyncs every file touched before it returns, so that the caller may then
// delete the originals.
func (b *Broker) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := make([]error, len(msgs))
	touched := map[*Writer]bool{}
	for i, o := range msgs {
		w, err := b.writerFor(o.Dest)
		if err != nil {
			errs[i] = err
			continue
		}
		if err := w.Write(o.Message); err != nil {
			errs[i] = err
			continue
		}
		touched[w] = true
	}
	for w := range touched {
		if err := w.Flush(); err != nil {
			return errs, err
		}
	}
	return errs, nil
}

func (b *Broker) writerFor(d broker.Destination) (*Writer, error) {
	if b.lazy && b.own == nil {
		w, err := NewWriter(b.path, b.opts)
		if err != nil {
			return nil, err
		}
		b.own = w
	}
	if d.Kind != broker.ToFile || d.Path == "" {
		if b.own != nil {
			return b.own, nil
		}
		return nil, &broker.Error{Kind: broker.ErrUnsupported, Op: "publish to " + d.String(),
			Msg: "an archive takes only file destinations: use `file://PATH`"}
	}
	p := filepath.Clean(d.Path)
	if b.own != nil && p == filepath.Clean(b.path) {
		return b.own, nil
	}
	if b.path != "" && p == filepath.Clean(b.path) {
		return nil, &broker.Error{Kind: broker.ErrConflict, Op: "publish to " + d.String(),
			Msg: "the archive being read cannot also be the destination: choose another file"}
	}
	if w := b.writers[p]; w != nil {
		return w, nil
	}
	w, err := NewWriter(p, b.opts)
	if err != nil {
		return nil, err
	}
	b.writers[p] = w
	return w, nil
}
