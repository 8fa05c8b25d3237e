package archive

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// WriterOptions describe what a Writer records besides the messages.
type WriterOptions struct {
	// Source goes into the header of a new file, and its Broker into every
	// record (without a password).
	Source Source
	// Generator names the writing program in the header ("dlq 1.2.0").
	Generator string
	// Now stamps the header and each record's "archived"; time.Now if nil.
	Now func() time.Time
}

// Writer appends messages to an archive file. It only ever appends: records
// already in the file are never rewritten. A record counts as written once
// Flush or Close has returned without error: both fsync the file.
//
// A ".gz" file gets one gzip member per Flush, closed (with its CRC and
// size) before the fsync, so that every flushed record is readable after a
// crash; readers see the members as one stream.
//
// After a failed write or sync (a full disk) the Writer is spent: every
// later call returns that error, as what reached the disk is unknown. The
// next NewWriter of the file repairs its tail.
type Writer struct {
	mu     sync.Mutex
	path   string
	fh     file
	bw     *bufio.Writer
	gz     *gzip.Writer // open member, nil between flushes
	isGz   bool
	opts   WriterOptions
	n      int64
	err    error // the first write or sync error; sticky
	closed bool
}

// file is what a Writer needs of its *os.File; tests put a full disk
// behind it.
type file interface {
	io.Writer
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

func openAppend(path string) (file, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
}

// NewWriter opens path for appending, creating it (mode 0600: dead letters
// often carry personal data) with a header when it does not exist or is
// empty. A file that exists is written in the format of its content (a gzip
// one gets gzip members whatever its name), and the tail a crash or a full
// disk left behind, which no Flush ever confirmed, is repaired first: a
// plain file loses its unterminated last line; a gzip file is cut after its
// last complete member whose CRC and size check, and the complete lines
// that can still be read from the torn member after it are written again
// as a new member. A gzip file damaged otherwise (not a write cut short),
// and a file that does not start like a dlq archive, are refused, never
// truncated.
func NewWriter(path string, opts WriterOptions) (*Writer, error) {
	return newWriter(path, opts, openAppend)
}

func newWriter(path string, opts WriterOptions, open func(string) (file, error)) (*Writer, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	fh, err := open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &broker.Error{Kind: broker.ErrNotFound, Op: "create archive " + path, Msg: "the directory does not exist: create it or choose another path", Err: err}
		}
		return nil, openError(path, err)
	}
	w := &Writer{path: path, fh: fh, isGz: strings.HasSuffix(path, ".gz"), opts: opts}
	w.bw = bufio.NewWriterSize(fh, 256<<10)
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			fh.Close()
			return nil, fmt.Errorf("create archive %s: %w", path, err)
		}
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("open archive %s: %w", path, err)
	}
	size := st.Size()
	var salvage []byte
	if size > 0 {
		// Readers tell gzip by its content, whatever the name: so does
		// the writer, lest it cut a compressed file at a newline byte.
		var magic [2]byte
		if _, err := fh.ReadAt(magic[:], 0); err == nil && magic == [2]byte{0x1f, 0x8b} {
			w.isGz = true
		}
		if w.isGz {
			size, salvage, err = repairGzip(fh, size)
		} else {
			size, err = repairTail(fh, size)
		}
		if err != nil {
			fh.Close()
			return nil, fmt.Errorf("open archive %s: %w", path, err)
		}
	}
	if len(salvage) > 0 {
		if err := w.writeRaw(salvage); err != nil {
			fh.Close()
			return nil, err
		}
		if err := w.Flush(); err != nil {
			fh.Close()
			return nil, err
		}
	} else if size == 0 {
		h := Header{Version: Version, Created: opts.Now().UTC(), Source: opts.Source, Generator: opts.Generator}
		h.Source.Broker = broker.Redact(h.Source.Broker)
		b, err := marshalLine(h)
		if err != nil {
			fh.Close()
			return nil, err
		}
		if err := w.writeLine(b); err != nil {
			fh.Close()
			return nil, err
		}
		if err := w.Flush(); err != nil {
			fh.Close()
			return nil, err
		}
	}
	return w, nil
}

// repairTail drops an unterminated last line (a write torn by a crash; it was
// never flushed as complete, so never confirmed) and returns the new size.
// A file that does not start like a dlq archive is left as it is.
func repairTail(fh file, size int64) (int64, error) {
	var last [1]byte
	if _, err := fh.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	if ok, err := startsLikeArchive(fh, size); err != nil || !ok {
		return 0, cmp.Or(err, errors.New("its last line is incomplete, and its first is not a dlq archive header: dlq repairs only its own archives; choose another file"))
	}
	buf := make([]byte, 64<<10)
	end := size
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := fh.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			keep := start + int64(i) + 1
			return keep, truncateSync(fh, keep)
		}
		end = start
	}
	return 0, truncateSync(fh, 0)
}

// startsLikeArchive reports whether the first non-blank line of a plain
// file is a dlq archive header or, when that line is the torn one, the
// start of one as dlq writes it.
func startsLikeArchive(fh file, size int64) (bool, error) {
	buf := make([]byte, min(size, 64<<10))
	if _, err := fh.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return startsWithHeader(buf), nil
}

// startsWithHeader reports whether the first non-blank line of text is a
// dlq archive header or, when that line is not complete, the start of one
// as dlq writes it.
func startsWithHeader(text []byte) bool {
	text = bytes.TrimLeft(text, " \t\r\n")
	i := bytes.IndexByte(text, '\n')
	if i < 0 {
		const start = `{"dlq_archive":`
		return bytes.HasPrefix(text, []byte(start)) || bytes.HasPrefix([]byte(start), text)
	}
	var h struct {
		Version *int `json:"dlq_archive"`
	}
	return json.Unmarshal(text[:i], &h) == nil && h.Version != nil
}

// maxSalvage bounds what repairGzip holds of a torn member's text; complete
// lines beyond it are dropped with the rest of the torn member.
const maxSalvage = 64 << 20

// repairGzip finds the end of the last complete gzip member whose CRC and
// size check, truncates whatever follows it, and returns that end with the
// complete JSON lines the torn member after it still yields (to be written
// again; they were never confirmed, so keeping them is a bonus). Bytes after
// the last good member that are not a member cut short (a bad header or
// checksum) are damage, not a torn write: the file is left as it is.
func repairGzip(fh file, size int64) (int64, []byte, error) {
	cr := &countingReader{r: io.NewSectionReader(fh, 0, size)}
	br := bufio.NewReaderSize(cr, 64<<10)
	at := func() int64 { return cr.n - int64(br.Buffered()) }
	var zr gzip.Reader
	var out capBuffer
	var end int64
	for end < size {
		out.b = out.b[:0]
		magic, _ := br.Peek(3)
		isMember := bytes.HasPrefix([]byte{0x1f, 0x8b, 8}, magic) // or the start of one
		err := zr.Reset(br)
		if errors.Is(err, io.ErrUnexpectedEOF) && !isMember {
			err = gzip.ErrHeader // too short for gzip to judge its header
		}
		if err == nil {
			zr.Multistream(false)
			_, err = io.Copy(&out, &zr)
		}
		if err == nil {
			end = at()
			continue
		}
		if errors.Is(err, io.ErrUnexpectedEOF) && end == 0 && !startsWithHeader(out.b) {
			return 0, nil, errors.New("its first gzip member is incomplete, and does not start with a dlq archive header: dlq repairs only its own archives; choose another file")
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("damaged after byte %d (%v), not by a write cut short: dlq appends only to an archive it can read to the end; choose another file, and keep this one as evidence", end, err)
		}
		if err := truncateSync(fh, end); err != nil {
			return 0, nil, err
		}
		return end, completeLines(out.b), nil
	}
	return end, nil, nil
}

// completeLines is the leading run of b's newline-terminated lines that are
// blank or valid JSON; nil when none of them holds anything.
func completeLines(b []byte) []byte {
	keep := 0
	for keep < len(b) {
		i := bytes.IndexByte(b[keep:], '\n')
		if i < 0 {
			break
		}
		l := bytes.TrimSpace(b[keep : keep+i])
		if len(l) > 0 && !json.Valid(l) {
			break
		}
		keep += i + 1
	}
	if len(bytes.TrimSpace(b[:keep])) == 0 {
		return nil
	}
	return b[:keep]
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// capBuffer keeps the first maxSalvage bytes written to it and discards the
// rest.
type capBuffer struct{ b []byte }

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := maxSalvage - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func truncateSync(fh file, n int64) error {
	if err := fh.Truncate(n); err != nil {
		return err
	}
	return fh.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Path is the file being written.
func (w *Writer) Path() string { return w.path }

// Count is the number of messages written through this Writer.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *Writer) writeLine(b []byte) error {
	if err := w.writeRaw(b); err != nil {
		return err
	}
	return w.writeRaw([]byte{'\n'})
}

// writeRaw writes b into the open member (or the plain file's buffer).
func (w *Writer) writeRaw(b []byte) error {
	if w.err != nil {
		return w.err
	}
	var dst io.Writer = w.bw
	if w.isGz {
		if w.gz == nil {
			w.gz = gzip.NewWriter(w.bw)
		}
		dst = w.gz
	}
	if _, err := dst.Write(b); err != nil {
		w.err = fmt.Errorf("write archive %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// Write appends one message. It is durable only after Flush or Close.
func (w *Writer) Write(m *broker.Message) error {
	b, err := Marshal(m, w.opts.Source.Broker, w.opts.Now())
	if err != nil {
		return fmt.Errorf("archive message %s: %w", m.ID, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("write archive %s: writer closed", w.path)
	}
	if err := w.writeLine(b); err != nil {
		return err
	}
	w.n++
	return nil
}

// Flush writes buffered records and fsyncs the file; after it returns nil,
// every message written so far survives a crash.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.closed {
		return nil
	}
	if w.err != nil {
		return w.err
	}
	if w.gz != nil {
		if err := w.gz.Close(); err != nil {
			w.err = fmt.Errorf("write archive %s: %w", w.path, err)
			return w.err
		}
		w.gz = nil
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("write archive %s: %w", w.path, err)
		return w.err
	}
	if err := w.fh.Sync(); err != nil {
		// A failed fsync may have dropped the dirty pages: a later one
		// that succeeds proves nothing about them.
		w.err = fmt.Errorf("sync archive %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// Close flushes, fsyncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.flushLocked()
	w.closed = true
	return errors.Join(err, w.fh.Close())
}
