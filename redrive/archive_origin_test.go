package redrive

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// An archive records no origin, but its dead letters carry theirs: a
// redrive of an archive to origin on a broker sends each home by its death
// record (or its framework's), read by that broker; one without any stays.
func TestRedriveFromAnArchiveToOrigin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orders-dlq.jsonl")
	w, err := archive.NewWriter(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orphan := dead("orphan", `{"n":3}`)
	orphan.Headers, orphan.Death = map[string]any{"app": "shop"}, nil
	for _, m := range []*broker.Message{dead("a", `{"n":1}`), dead("b", `{"n":2}`), orphan, nserviceBusDead("nsb")} {
		m.System, m.Queue = broker.RabbitMQ, "orders.dlq"
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := newFake(t, broker.RabbitMQ)
	dst.declare("orders", broker.KindClassic)
	dst.declare("billing", broker.KindClassic)
	dst.bind("ex", "orders.new", "orders")

	s, err := Run(context.Background(), src, "orders-dlq.jsonl", dst, Options{Dest: broker.Destination{Kind: broker.ToOrigin}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Moved != 3 || s.Failed[ReasonNoOrigin] != 1 {
		t.Fatalf("moved %d, skipped %v, failed %v; want 3, and the one without an origin left", s.Moved, s.Skipped, s.Failed)
	}
	if d := testdiff.Diff([]string{"a", "b"}, dst.readyIDs("orders")); d != "" {
		t.Errorf("orders (-want +got):\n%s", d)
	}
	if d := testdiff.Diff([]string{"nsb"}, dst.readyIDs("billing")); d != "" {
		t.Errorf("billing (-want +got):\n%s", d)
	}
	if d := testdiff.Diff(map[string]int64{"exchange:ex:orders.new": 2, "queue:billing": 1}, s.Destinations); d != "" {
		t.Errorf("destinations (-want +got):\n%s", d)
	}

	// Without a broker to go home on, the archive is refused up front.
	if _, err := Run(context.Background(), src, "orders-dlq.jsonl", src, Options{Dest: broker.Destination{Kind: broker.ToOrigin}}); err == nil ||
		!strings.Contains(err.Error(), "does not record where messages came from") {
		t.Errorf("err %v, want the refusal that names --to", err)
	}
}
