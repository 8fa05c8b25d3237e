package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// fullDisk is a file system that takes left more bytes, then fails every
// write with ENOSPC after writing what fits, as a full disk does. Its
// syncs fail from the failSync-th on (0: never), and otherwise do nothing:
// these tests read back through the page cache, and thousands of real
// fsyncs would only make them slow.
type fullDisk struct {
	left     int
	failSync int
	syncs    int
}

func (d *fullDisk) open(path string) (file, error) {
	fh, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: fh.(*os.File), disk: d}, nil
}

type fullFile struct {
	*os.File
	disk *fullDisk
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(p) <= f.disk.left {
		f.disk.left -= len(p)
		return f.File.Write(p)
	}
	n, err := f.File.Write(p[:f.disk.left])
	f.disk.left = 0
	if err == nil {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

func (f *fullFile) Sync() error {
	f.disk.syncs++
	if f.disk.failSync > 0 && f.disk.syncs >= f.disk.failSync {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return nil
}

// fillBatches are what the writers under test write, one Flush per batch.
var fillBatches = [][]string{{"a", "b"}, {"c"}, {"d", "e", "f"}}

func fillMessage(id string) *broker.Message {
	return &broker.Message{ID: id, Queue: "orders.dlq", Body: []byte(strings.Repeat(id, 40) + " order " + id)}
}

func fillOptions() WriterOptions {
	return WriterOptions{Source: Source{System: broker.RabbitMQ, Queue: "orders.dlq"}, Generator: "test",
		Now: func() time.Time { return time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC) }}
}

// writeBatches writes fillBatches to path through open until something
// fails, and returns the IDs the writer confirmed as durable (a Flush
// that returned nil).
func writeBatches(t *testing.T, path string, open func(string) (file, error)) []string {
	t.Helper()
	w, err := newWriter(path, fillOptions(), open)
	if err != nil {
		return nil
	}
	var durable []string
	var failed error
	for _, batch := range fillBatches {
		for _, id := range batch {
			if failed = w.Write(fillMessage(id)); failed != nil {
				break
			}
		}
		if failed == nil {
			failed = w.Flush()
		}
		if failed != nil {
			break
		}
		durable = append(durable, batch...)
	}
	if err := w.Close(); failed != nil && err == nil {
		t.Errorf("Close after %v returned nil: it claims records that never reached the disk", failed)
	}
	return durable
}

// archiveIDs reads the whole archive at path with dlq's reader (and, for
// a .gz, every gzip member to its end as gzip -t does) and returns the IDs
// of its records.
func archiveIDs(t *testing.T, path string) []string {
	t.Helper()
	if strings.HasSuffix(path, ".gz") {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatalf("gzip: %v", err)
		}
	}
	r, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ids []string
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ids
		}
		if err != nil {
			t.Fatalf("after %v: %v", ids, err)
		}
		ids = append(ids, m.ID)
	}
}

// checkKept fails unless got is a prefix of written at least as long as
// kept, followed by then.
func checkKept(t *testing.T, got, written []string, kept int, then ...string) {
	t.Helper()
	n := len(got) - len(then)
	if n >= kept && n <= len(written) && slices.Equal(got[:n], written[:n]) && slices.Equal(got[n:], then) {
		return
	}
	want := append(slices.Clone(written[:kept]), then...)
	t.Errorf("records read back, want at least the first %d written, then %v:\n%s", kept, then, testdiff.Lines(want, got))
}

func TestWriterFullDiskAtEveryByte(t *testing.T) {
	written := slices.Concat(fillBatches...)
	for _, ext := range []string{".jsonl", ".jsonl.gz"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			full := filepath.Join(dir, "full"+ext)
			if got := writeBatches(t, full, (&fullDisk{left: 1 << 30}).open); !slices.Equal(got, written) {
				t.Fatalf("with room: durable %v, want %v", got, written)
			}
			st, err := os.Stat(full)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "a"+ext)
			for n := range int(st.Size()) + 1 {
				// An empty file, so that each round skips the
				// directory's fsync that creating one costs.
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				disk := &fullDisk{left: n}
				durable := writeBatches(t, path, disk.open)
				// Space again: the next writer repairs and appends.
				room := &fullDisk{left: 1 << 30}
				w, err := newWriter(path, fillOptions(), room.open)
				if err != nil {
					t.Fatalf("disk full after %d bytes, reopen: %v", n, err)
				}
				for _, id := range []string{"y", "z"} {
					if err := w.Write(fillMessage(id)); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprint(n), func(t *testing.T) {
					checkKept(t, archiveIDs(t, path), written, len(durable), "y", "z")
				})
			}
		})
	}
}

// TestWriterRepairsTornGzip cuts a valid .gz archive at every byte, as a
// crash or a full disk can leave it, and appends to it.
func TestWriterRepairsTornGzip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl.gz")
	w, err := NewWriter(src, fillOptions())
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64 // the file's size after each batch's member
	for _, batch := range fillBatches {
		for _, id := range batch {
			if err := w.Write(fillMessage(id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, st.Size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	written := slices.Concat(fillBatches...)
	for cut := range len(data) {
		kept := 0
		for i, end := range ends {
			if end <= int64(cut) {
				kept += len(fillBatches[i])
			}
		}
		if cut == len(data)-1 {
			// Only the last member's trailer is torn: every line of it
			// can be read, and is kept.
			kept = len(written)
		}
		path := filepath.Join(dir, "a.jsonl.gz")
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		room := &fullDisk{left: 1 << 30}
		w, err := newWriter(path, fillOptions(), room.open)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if err := w.Write(fillMessage("z")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			checkKept(t, archiveIDs(t, path), written, kept, "z")
		})
	}
}

// TestWriterRefusesDamagedGzip: bytes after the last good member that are
// not a member cut short, and a torn gzip file that is not an archive, are
// left alone, and nothing is appended.
func TestWriterRefusesDamagedGzip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl.gz")
	if got := writeBatches(t, src, openAppend); len(got) == 0 {
		t.Fatal("nothing written")
	}
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	badCRC := slices.Clone(good)
	badCRC[len(badCRC)-8] ^= 0xff
	var other bytes.Buffer
	zw := gzip.NewWriter(&other)
	zw.Write([]byte(`{"id":"a"}` + "\n" + `{"id":"b"}` + "\n"))
	zw.Close()
	for name, data := range map[string][]byte{
		"a torn gzip file of JSON lines": other.Bytes()[:other.Len()-4],
		"plain text after the members":   append(slices.Clone(good), "not gzip\n"...),
		"zeros after the members":        append(slices.Clone(good), make([]byte, 4096)...),
		"bad checksum":                   badCRC,
		"not gzip at all":                []byte(hdr + "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.jsonl.gz")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := NewWriter(path, fillOptions())
			if err == nil {
				w.Close()
				t.Fatal("NewWriter appends to a damaged archive")
			}
			if !strings.Contains(err.Error(), "damaged after byte") && !strings.Contains(err.Error(), "not start with a dlq archive header") {
				t.Errorf("err = %v, want it to say where the damage starts, or that this is not an archive", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Errorf("the damaged file was changed: %d bytes, was %d", len(got), len(data))
			}
		})
	}
}

// TestWriterAppendsGzipWhateverTheName: readers take a file that starts
// like gzip as gzip, so the writer appends gzip members to it even when
// it is called .jsonl, rather than repair it as text.
func TestWriterAppendsGzipWhateverTheName(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "a.jsonl.gz")
	durable := writeBatches(t, gz, openAppend)
	path := filepath.Join(dir, "a.jsonl")
	if err := os.Rename(gz, path); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(path, fillOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(fillMessage("z")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, gz); err != nil { // for archiveIDs' gzip check
		t.Fatal(err)
	}
	if d := testdiff.Lines(append(durable, "z"), archiveIDs(t, gz)); d != "" {
		t.Errorf("records:\n%s", d)
	}
}

// TestWriterLeavesOtherFilesAlone: a plain file that does not start like a
// dlq archive is not "repaired" (its last line cut), whatever it ends with.
func TestWriterLeavesOtherFilesAlone(t *testing.T) {
	for name, data := range map[string]string{
		"one line of text":        "hello, world",
		"JSON lines, no header":   `{"id":"a"}` + "\n" + `{"id":"b"}`,
		"a header of another app": `{"dlq":1}` + "\n" + `{"id":"b"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.jsonl")
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := NewWriter(path, fillOptions())
			if err == nil {
				w.Close()
				t.Error("NewWriter repaired a file that is not an archive")
			}
			if got, _ := os.ReadFile(path); string(got) != data {
				t.Errorf("the file was changed:\n%s", testdiff.Text(data, string(got)))
			}
		})
	}
}

// TestWriterStaysFailedAfterSyncError: after a failed fsync, whose dirty
// pages may be gone, a later fsync that succeeds proves nothing, so no
// later Flush or Close may report success.
func TestWriterStaysFailedAfterSyncError(t *testing.T) {
	for _, ext := range []string{".jsonl", ".jsonl.gz"} {
		t.Run(ext, func(t *testing.T) {
			disk := &fullDisk{left: 1 << 30, failSync: 2} // the header's sync passes
			w, err := newWriter(filepath.Join(t.TempDir(), "a"+ext), fillOptions(), disk.open)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(fillMessage("a")); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Flush = %v, want ENOSPC", err)
			}
			disk.failSync = 0 // the next fsync would pass
			if err := w.Write(fillMessage("b")); err == nil {
				t.Error("Write after a failed sync returned nil")
			}
			if err := w.Flush(); err == nil {
				t.Error("Flush after a failed sync returned nil")
			}
			if err := w.Close(); err == nil {
				t.Error("Close after a failed sync returned nil")
			}
		})
	}
}

// TestReadersReadEveryMember: a .gz archive holds one gzip member per
// flush, also across writers; the reader and the parallel reader read
// them all.
func TestReadersReadEveryMember(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl.gz")
	writeBatches(t, path, openAppend)
	w, err := NewWriter(path, fillOptions())
	if err != nil {
		t.Fatal(err)
	}
	w.Write(fillMessage("z"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The header, one member per batch, and the second writer's.
	if got, want := gzipMembers(t, data), 1+len(fillBatches)+1; got != want {
		t.Errorf("%d gzip members, want %d", got, want)
	}
	want := append(slices.Concat(fillBatches...), "z")
	if d := testdiff.Lines(want, archiveIDs(t, path)); d != "" {
		t.Errorf("records:\n%s", d)
	}
	checkSame(t, data)
}

// gzipMembers counts the gzip members of data, each read to its end.
func gzipMembers(t *testing.T, data []byte) int {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(data))
	var zr gzip.Reader
	n := 0
	for {
		err := zr.Reset(br)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("member %d: %v", n+1, err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, &zr); err != nil {
			t.Fatalf("member %d: %v", n+1, err)
		}
		n++
	}
}

// FuzzWriterRepair appends to arbitrary files: a writer either refuses,
// leaving the file as it was, or repairs it so that the whole file reads
// to its end (as gzip, for a .gz) with what it kept of the old file first.
func FuzzWriterRepair(f *testing.F) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(hdr + "\n" + `{"id":"a"}` + "\n"))
	zw.Close()
	f.Add(gz.Bytes(), true)
	f.Add(gz.Bytes()[:gz.Len()-3], true)
	f.Add(append(slices.Clone(gz.Bytes()), 0x1f, 0x8b, 8, 0), true)
	f.Add([]byte(hdr+"\n"+`{"id":"a"}`+"\n"+`{"id":"b","bo`), false)
	f.Add([]byte(`{"dlq_arch`), false)
	f.Fuzz(func(t *testing.T, data []byte, isGz bool) {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		if isGz {
			path += ".gz"
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := newWriter(path, fillOptions(), (&fullDisk{left: 1 << 30}).open)
		if err != nil {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("refused (%v), but changed the file", err)
			}
			return
		}
		if err := w.Write(fillMessage("z")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte{0x1f, 0x8b}) {
			// Plain: the complete lines of the old file, then new ones.
			keep := data[:bytes.LastIndexByte(data, '\n')+1]
			if !bytes.HasPrefix(got, keep) || !bytes.HasSuffix(got, []byte("\n")) {
				t.Fatalf("plain file after the repair:\n%q\nwas\n%q", got, data)
			}
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(got))
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("gzip after the repair: %v", err)
		}
		if !bytes.HasSuffix(text, []byte(" order z\"}\n")) {
			t.Fatalf("the appended record is not last: %q", text[max(len(text)-80, 0):])
		}
	})
}
