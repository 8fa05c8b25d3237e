package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// MaxLine is the longest line the reader accepts: a RabbitMQ message of the
// default 128 MiB maximum size, base64-encoded, with room for its headers.
const MaxLine = 256 << 20

// ErrTruncated reports an archive whose last record was cut short, as a
// crash during a write leaves it. Every record before it is intact.
var ErrTruncated = errors.New("archive truncated")

// Reader reads an archive one message at a time. Memory stays flat however
// large the file: only the current line is held.
type Reader struct {
	name    string
	src     io.Reader // what sc reads: the file's bytes, inflated
	sc      *bufio.Scanner
	closer  io.Closer
	line    int
	header  *Header
	lastErr error
}

// NewReader reads an archive from r, which may be gzip-compressed (detected
// from its first bytes, whatever the file is called). name is used in error
// messages.
func NewReader(r io.Reader, name string) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read archive %s: %w", name, err)
	}
	var src io.Reader = br
	var closer io.Closer
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read archive %s: %w", name, err)
		}
		src, closer = zr, zr
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	return &Reader{name: name, src: src, sc: sc, closer: closer}, nil
}

// OpenReader opens the archive file at path for reading.
func OpenReader(path string) (*Reader, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, openError(path, err)
	}
	r, err := NewReader(fh, path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	if r.closer != nil {
		r.closer = multiCloser{r.closer, fh}
	} else {
		r.closer = fh
	}
	return r, nil
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &broker.Error{Kind: broker.ErrNotFound, Op: "open archive " + path, Msg: "no such file: check the path after `file://`", Err: err}
	case errors.Is(err, os.ErrPermission):
		return &broker.Error{Kind: broker.ErrAccessDenied, Op: "open archive " + path, Msg: "permission denied: check the file's mode and owner", Err: err}
	}
	return fmt.Errorf("open archive %s: %w", path, err)
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Line is the line number of the record Next returned last (1-based).
func (r *Reader) Line() int { return r.line }

// Header is the most recent header read, nil before the first.
func (r *Reader) Header() *Header { return r.header }

// Next returns the next message, or io.EOF after the last. A malformed line
// is an error naming the file and line number; reading cannot go on after
// it.
func (r *Reader) Next() (*broker.Message, error) {
	var l line
	for {
		raw, err := r.nextLine()
		if err != nil {
			return nil, err
		}
		if r.header != nil && fastRecord(raw, &l.record) {
			break
		}
		l.reset()
		isHeader, err := r.decodeLine(raw, &l)
		if err != nil {
			return nil, err
		}
		if !isHeader {
			break
		}
	}
	l.normaliseTimes()
	m, err := fromRecord(&l.record)
	if err != nil {
		return nil, r.fail(err)
	}
	return m, nil
}

// versioned is a decoded line that may be a header.
type versioned interface {
	version() *int
	reset()
}

func (l *line) version() *int { return l.DLQArchive }
func (l *line) reset()        { *l = line{} }

// nextInto decodes the next record line into v, skipping (and checking)
// headers.
func (r *Reader) nextInto(v versioned) error {
	for {
		raw, err := r.nextLine()
		if err != nil {
			return err
		}
		v.reset()
		isHeader, err := r.decodeLine(raw, v)
		if err != nil {
			return err
		}
		if !isHeader {
			return nil
		}
	}
}

// readError is the error that ends reading after line n: io.EOF at a clean
// end (an empty file is an empty archive).
func readError(name string, n int, err error) error {
	switch {
	case err == nil:
		return io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("archive %s line %d: longer than %d MiB: not a dlq archive, or corrupt", name, n+1, MaxLine>>20)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("archive %s: %w after line %d (a write was interrupted); the records before it are intact", name, ErrTruncated, n)
	}
	return fmt.Errorf("read archive %s after line %d: %w", name, n, err)
}

// nextLine returns the next non-blank line.
func (r *Reader) nextLine() ([]byte, error) {
	if r.lastErr != nil {
		return nil, r.lastErr
	}
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		return b, nil
	}
	r.lastErr = readError(r.name, r.line, r.sc.Err())
	return nil, r.lastErr
}

func (r *Reader) fail(err error) error {
	r.lastErr = lineError(r.name, r.line, err)
	return r.lastErr
}

func lineError(name string, line int, err error) error {
	return fmt.Errorf("archive %s line %d: %w", name, line, err)
}

func (r *Reader) decodeLine(raw []byte, v versioned) (bool, error) {
	h, err := decodeLine(r.name, r.line, raw, r.header == nil, r.atEnd, v)
	if err != nil {
		r.lastErr = err
		return false, err
	}
	if h != nil {
		r.header = h
		return true, nil
	}
	return false, nil
}

// decodeLine decodes line n of an archive with encoding/json into v. first
// says that no header has been read yet (the line must be one); atEnd
// reports whether the line is the file's last, for telling a torn final
// write from corruption. It returns the header when the line is one.
func decodeLine(name string, n int, raw []byte, first bool, atEnd func() bool, v versioned) (*Header, error) {
	fail := func(err error) error { return lineError(name, n, err) }
	if raw[0] != '{' {
		if first {
			return nil, fail(errors.New("not a dlq archive: a JSON object with `dlq_archive` expected on the first line"))
		}
		return nil, fail(errors.New("not a JSON object"))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if first {
			return nil, fail(fmt.Errorf("not a dlq archive: %s", jsonError(err)))
		}
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset >= int64(len(raw)) && atEnd() {
			return nil, fail(fmt.Errorf("%w: the last record is incomplete (a write was interrupted); the records before it are intact", ErrTruncated))
		}
		return nil, fail(errors.New(jsonError(err)))
	}
	if ver := v.version(); ver != nil {
		if *ver > Version || *ver < 1 {
			return nil, fail(fmt.Errorf("archive format version %d is not one this dlq reads (1 to %d): upgrade dlq", *ver, Version))
		}
		var h Header
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, fail(fmt.Errorf("header: %s", jsonError(err)))
		}
		h.Created = utc(h.Created)
		return &h, nil
	}
	if first {
		return nil, fail(errors.New("not a dlq archive: the first line must be a header with `dlq_archive`"))
	}
	return nil, nil
}

// atEnd reports whether the line just read was the last one, for telling a
// torn final write from corruption in the middle.
func (r *Reader) atEnd() bool {
	if r.sc.Scan() {
		// There is more: put nothing back (the error ends reading anyway).
		return false
	}
	return r.sc.Err() == nil || errors.Is(r.sc.Err(), io.ErrUnexpectedEOF)
}

func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: %s cannot be %s", strings.TrimPrefix(te.Field, "record."), te.Value, te.Type)
	}
	return err.Error()
}
