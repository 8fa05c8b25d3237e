package archive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
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

func fillMessage(id string) *broker.Message {
	return &broker.Message{ID: id, Queue: "orders.dlq", Body: []byte(strings.Repeat(id, 40) + " order " + id)}
}

func fillOptions() WriterOptions {
	return WriterOptions{Source: Source{System: broker.RabbitMQ, Queue: "orders.dlq"}, Generator: "test",
		Now: func() time.Time { return time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC) }}
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
