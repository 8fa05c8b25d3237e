package cmd

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
)

// A message that carries x-acquired-count (RabbitMQ 4.3) shows it beside
// its delivery count in peek's table, in show and in peek's JSON; one
// without it shows the count alone.
func TestAcquiredCountBesideDeliveries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	w, err := archive.NewWriter(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&broker.Message{ID: "acq", Queue: "q", System: broker.RabbitMQ, Body: []byte("x"), DeliveryCount: 2, AcquiredCount: 9,
		Headers: map[string]any{"x-delivery-count": int64(2), "x-acquired-count": int64(9)}})
	w.Write(&broker.Message{ID: "plain", Queue: "q", System: broker.RabbitMQ, Body: []byte("y"), DeliveryCount: 3})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ref := "file://" + path
	stdout, stderr, code := runDLQ(t, "peek", ref)
	if code != ExitOK {
		t.Fatalf("peek: exit %d %s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{regexp.MustCompile(`(?m)^acq\t[^\t]*\t[^\t]*\t2 \(acq 9\)\t`), regexp.MustCompile(`(?m)^plain\t[^\t]*\t[^\t]*\t3\t`)} {
		if !want.MatchString(stdout) {
			t.Errorf("peek output does not match %s:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = runDLQ(t, "peek", ref, "-o", "jsonl")
	if code != ExitOK || !regexp.MustCompile(`"acquired_count":9`).MatchString(stdout) {
		t.Errorf("peek -o jsonl: exit %d %s, want acquired_count 9 in:\n%s", code, stderr, stdout)
	}
	stdout, stderr, code = runDLQ(t, "show", ref, "acq")
	if code != ExitOK || !regexp.MustCompile(`(?m)^deliveries:  2\nacquired:    9\n`).MatchString(stdout) {
		t.Errorf("show: exit %d %s, want the acquired count after deliveries in:\n%s", code, stderr, stdout)
	}
	stdout, _, _ = runDLQ(t, "show", ref, "plain")
	if regexp.MustCompile(`(?m)^acquired:`).MatchString(stdout) {
		t.Errorf("show of a message without x-acquired-count shows one:\n%s", stdout)
	}
}
