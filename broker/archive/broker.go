package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
