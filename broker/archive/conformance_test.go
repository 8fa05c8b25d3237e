package archive_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestConformance runs the shared adapter suite against an archive opened
// for appending (Create): its queues are the queues its records came from.
// The harness writes records with a Writer of its own and reads the file
// as JSON lines, never through the Broker under test.
func TestConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conformance.jsonl")
	b, err := archive.Create(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	h := archiveHarness{path: path}
	brokertest.Conformance(t, brokertest.Harness{
		Broker: b,
		Kinds: []brokertest.Kind{{Name: "archive", Kind: broker.KindArchive, Make: h.make,
			// Reading an archive never changes it: an Ack removes
			// nothing, so that a redrive from a file can be repeated.
			Unchanging: true}},
		Count:    func(t brokertest.TB, q string) int64 { return int64(len(h.contents(t, q))) },
		Contents: h.contents,
		Settle:   10 * time.Second, // the file is the truth at once
	})
}

type archiveHarness struct{ path string }

func (h archiveHarness) make(t brokertest.TB, msgs []brokertest.Fill) string {
	t.Helper()
	q := brokertest.NameTB(t, "q")
	w, err := archive.NewWriter(h.path, archive.WriterOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, m := range msgs {
		if err := w.Write(&broker.Message{ID: "id-" + m.Body, System: broker.RabbitMQ, Queue: q, Body: []byte(m.Body)}); err != nil {
			t.Fatalf("%v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("%v", err)
	}
	return q
}

// contents returns the bodies of the records archived from q, in file
// order, read as JSON lines (the header has no queue).
func (h archiveHarness) contents(t brokertest.TB, q string) []string {
	t.Helper()
	f, err := os.Open(h.path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer f.Close()
	var bodies []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Queue string `json:"queue"`
			Body  string `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", h.path, err)
		}
		if r.Queue == q {
			bodies = append(bodies, r.Body)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", h.path, err)
	}
	return bodies
}
