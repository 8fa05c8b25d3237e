package brokertest

import (
	"errors"
	"io"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

// ReadArchive returns every message of the archive at path; a file that
// cannot be read to its end fails the test.
func ReadArchive(t testing.TB, path string) []*broker.Message {
	t.Helper()
	rd, err := archive.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var ms []*broker.Message
	for {
		m, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return ms
		}
		if err != nil {
			t.Fatalf("read archive %s: %v", path, err)
		}
		ms = append(ms, m)
	}
}
