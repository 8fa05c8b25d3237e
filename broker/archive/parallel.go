package archive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// Reading an archive in parallel, in order.
//
// One goroutine reads the file in batches of whole lines (batchSize bytes,
// more for a longer line), counting their newlines so that every line keeps
// its number. Decoders — one per CPU — each decode a batch at a time. The
// consumer takes batches in the order they were read, waiting for each to
// be decoded, so messages come out exactly in file order and an error
// surfaces at its line, after every message before it. A fixed set of
// batches circulates (read → decoded → consumed → free), so memory does not
// grow with the file, and the reader can run at most that far ahead.

const (
	// batchSize is the usual size of a batch: some 150 messages of 1 KiB.
	batchSize = 256 << 10
)

// batch is a run of whole lines and, once decoded, their messages.
type batch struct {
	buf []byte
	// line is the number of the line before buf's first.
	line int
	// first says the file's first non-blank line (which must be a header)
	// may be in buf: nothing but white space came before it.
	first bool
	// eof says buf ends the input; readErr is why, when not a clean end.
	eof     bool
	readErr error
	// tooLong says the line after buf exceeds MaxLine.
	tooLong bool

	// What the decoder made of it: messages and their line numbers, then
	// an error that stops reading (nil when the batch decoded whole and
	// reading may go on).
	msgs  []*broker.Message
	lines []int
	err   error
	done  chan struct{}
	// lends hold the batch's messages when they are lent, reused from
	// one batch to the next.
	lends []*lend
}

// parallelReader hands out the messages of an archive in file order,
// decoded on every CPU. Close it to stop early: it waits for its goroutines.
type parallelReader struct {
	name    string
	src     io.Reader
	prepare func(m *broker.Message, line int)
	// size is the usual batch size. A batch grown beyond four times that
	// for a long line is dropped once consumed, not kept for reuse.
	size int
	// lending says messages live in their batch's memory and are valid
	// only until the consumer asks for the batch after theirs.
	lending bool

	free  chan *batch
	order chan *batch
	work  chan *batch
	quit  chan struct{}
	wg    sync.WaitGroup

	cur    *batch
	i      int
	err    error
	closed bool
}

// readParallel starts reading r, which must not have been read yet.
// prepare, when set, runs on each message in a decoder with its line
// number.
func readParallel(r *Reader, prepare func(*broker.Message, int), lending bool) *parallelReader {
	return readParallelSize(r, prepare, lending, batchSize)
}

func readParallelSize(r *Reader, prepare func(*broker.Message, int), lending bool, size int) *parallelReader {
	workers := max(runtime.GOMAXPROCS(0), 1)
	inFlight := 2*workers + 2
	p := &parallelReader{
		name:    r.name,
		src:     r.src,
		prepare: prepare,
		size:    size,
		lending: lending,
		free:    make(chan *batch, inFlight),
		order:   make(chan *batch, inFlight),
		work:    make(chan *batch, inFlight),
		quit:    make(chan struct{}),
	}
	for range inFlight {
		p.free <- &batch{done: make(chan struct{}, 1)}
	}
	p.wg.Add(1 + workers)
	go p.read()
	for range workers {
		go p.decode()
	}
	return p
}

// Next returns the next message and its line number, io.EOF after the last,
// or the error that ends reading (which it keeps returning).
func (p *parallelReader) Next(ctx context.Context) (*broker.Message, int, error) {
	for {
		if p.err != nil {
			return nil, 0, p.err
		}
		if b := p.cur; b != nil {
			if p.i < len(b.msgs) {
				m, line := b.msgs[p.i], b.lines[p.i]
				b.msgs[p.i] = nil
				p.i++
				return m, line, nil
			}
			if b.err != nil {
				p.err = b.err
				continue
			}
			p.recycle(b)
			p.cur = nil
		}
		select {
		case b, ok := <-p.order:
			if !ok {
				p.err = io.EOF
				continue
			}
			select {
			case <-b.done:
			case <-ctx.Done():
				p.err = ctx.Err()
				continue
			}
			p.cur, p.i = b, 0
		case <-ctx.Done():
			p.err = ctx.Err()
		}
	}
}

func (p *parallelReader) recycle(b *batch) {
	b.msgs, b.lines, b.err = b.msgs[:0], b.lines[:0], nil
	if cap(b.buf) > 4*p.size {
		b.buf = nil
	}
	p.free <- b // never blocks: free holds every batch
}

// Close stops reading and waits until every goroutine has ended.
func (p *parallelReader) Close() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.quit)
	p.wg.Wait()
}

// read fills batches with whole lines and queues them for decoding and,
// in the same order, for the consumer.
func (p *parallelReader) read() {
	defer p.wg.Done()
	defer close(p.work)
	defer close(p.order)
	var (
		carry   []byte // the start of a line cut by the end of a read
		line    int
		content bool // a non-blank byte was seen
	)
	for {
		var b *batch
		select {
		case b = <-p.free:
		case <-p.quit:
			return
		}
		buf := append(b.buf[:0], carry...)
		if cap(buf) < p.size {
			buf = append(make([]byte, 0, p.size), buf...)
		}
		b.first, b.eof, b.readErr, b.tooLong = false, false, nil, false
		for {
			for len(buf) < cap(buf) {
				n, err := p.src.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err != nil {
					b.eof = true
					if !errors.Is(err, io.EOF) {
						b.readErr = err
					}
					break
				}
			}
			if b.eof {
				carry = carry[:0]
				break
			}
			if cut := bytes.LastIndexByte(buf, '\n'); cut >= 0 {
				carry = append(carry[:0], buf[cut+1:]...)
				buf = buf[:cut+1]
				break
			}
			// No newline in a full buffer: a long line.
			if len(buf) >= MaxLine {
				carry = carry[:0]
				b.eof, b.tooLong, buf = true, true, buf[:0]
				break
			}
			buf = append(make([]byte, 0, min(2*cap(buf), MaxLine+1)), buf...)
		}
		b.buf, b.line = buf, line
		line += bytes.Count(buf, []byte{'\n'})
		if !content && len(bytes.TrimSpace(buf)) > 0 {
			b.first, content = true, true
		}
		select {
		case p.order <- b:
		case <-p.quit:
			return
		}
		select {
		case p.work <- b:
		case <-p.quit:
			return
		}
		if b.eof {
			return
		}
	}
}

// decode decodes batches until there are no more.
func (p *parallelReader) decode() {
	defer p.wg.Done()
	var in *interner
	if p.lending {
		in = newInterner()
	}
	for {
		select {
		case b, ok := <-p.work:
			if !ok {
				return
			}
			p.decodeBatch(b, in)
			b.done <- struct{}{}
		case <-p.quit:
			return
		}
	}
}

func (p *parallelReader) decodeBatch(b *batch, in *interner) {
	buf, n := b.buf, b.line
	first := b.first
	for len(buf) > 0 {
		raw := buf
		rest := []byte(nil)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			raw, rest = buf[:i], buf[i+1:]
		}
		buf = rest
		n++
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		// The line is the input's last when nothing at all follows it, as
		// bufio.Scanner (and so Reader) sees it.
		last := b.eof && len(rest) == 0 && (b.readErr == nil || errors.Is(b.readErr, io.ErrUnexpectedEOF)) && !b.tooLong
		var l *lend
		if p.lending {
			if len(b.msgs) == len(b.lends) {
				b.lends = append(b.lends, &lend{})
			}
			l = b.lends[len(b.msgs)]
			l.intern = in
		}
		m, err := p.decodeLine(raw, n, first, last, l)
		first = false
		if err != nil {
			b.err = err
			return
		}
		if m != nil {
			b.msgs = append(b.msgs, m)
			b.lines = append(b.lines, n)
		}
	}
	switch {
	case b.tooLong:
		b.err = readError(p.name, n, bufio.ErrTooLong)
	case b.eof:
		b.err = readError(p.name, n, b.readErr)
	}
}

// decodeLine decodes line n as Reader.Next does: nil for a header. With
// lent memory l, the message is l's.
func (p *parallelReader) decodeLine(raw []byte, n int, first, last bool, l *lend) (*broker.Message, error) {
	var (
		rec  *record
		fast bool
	)
	if l != nil {
		rec = &l.rec
		fast = !first && fastRecordLent(raw, rec, l)
	} else {
		rec = new(record)
		fast = !first && fastRecord(raw, rec)
	}
	if !fast {
		var ln line
		h, err := decodeLine(p.name, n, raw, first, func() bool { return last }, &ln)
		if err != nil {
			return nil, err
		}
		if h != nil {
			return nil, nil
		}
		rec = &ln.record
	}
	rec.normaliseTimes()
	var m *broker.Message
	if l != nil {
		m = &l.msg
	} else {
		m = new(broker.Message)
	}
	if err := fromRecordTo(rec, m, l); err != nil {
		return nil, lineError(p.name, n, err)
	}
	if p.prepare != nil {
		p.prepare(m, n)
	}
	return m, nil
}
