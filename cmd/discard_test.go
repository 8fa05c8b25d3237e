package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An --archive-to that opens no archive (here: a factory whose destination
// opener returns no broker) is refused with one line naming the flag,
// before anything is taken from the queue, instead of closing a nil broker.
func TestDiscardArchiveThatOpensNoArchive(t *testing.T) {
	b := &moveFake{dlq: fakeDead(3)}
	for _, run := range []func() error{
		func() error {
			f, _ := moveFactory(t, b, true) // answers "y"

			return discardRun(context.Background(), &discardOptions{f: f, Queue: "q", Select: selectFlags{IDs: []string{"m01"}}, Archive: archiveFlags{ArchiveTo: "file:///tmp/x.jsonl"}})
		},
		func() error {
			f, _ := moveFactory(t, b, true)
			return purgeRun(context.Background(), &purgeOptions{f: f, Queue: "q", Archive: archiveFlags{ArchiveTo: "file:///tmp/x.jsonl"}})
		},
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "`--archive-to file:///tmp/x.jsonl` is not an archive") || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v", err)
		}
	}
	if b.consumed || len(b.dlq) != 3 {
		t.Errorf("the queue was touched: consumed %v, %d left", b.consumed, len(b.dlq))
	}
}

// TestRemovalArchivesRecordTheirSource: the archive that discard and purge
// write first says where its messages came from (header and records), as
// an export's does: it is the evidence of what was removed.
func TestRemovalArchivesRecordTheirSource(t *testing.T) {
	dir := t.TempDir()
	src := "file://" + filepath.Join(dir, "src.jsonl")
	audit := filepath.Join(dir, "audit.jsonl")
	if _, stderr, code := runDLQ(t, "export", "demo:orders.dlq", "--to", src, "--audit-log", audit); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"discard", src, "--filter", `.death.reason == "rejected"`},
		{"purge", src},
	} {
		t.Run(args[0], func(t *testing.T) {
			path := filepath.Join(dir, args[0]+".jsonl")
			args = append(args, "--archive-to", "file://"+path, "--yes", "--audit-log", audit)
			if _, stderr, code := runDLQ(t, args...); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			var head struct {
				Source struct{ System, Broker, Queue string }
			}
			var rec struct{ Broker string }
			if err := json.Unmarshal([]byte(lines[0]), &head); err != nil {
				t.Fatal(err)
			}
			if len(lines) < 2 {
				t.Fatalf("no record in the archive: %s", data)
			}
			if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
				t.Fatal(err)
			}
			if head.Source.Broker != src || head.Source.System != "archive" || rec.Broker != src {
				t.Errorf("header source %+v, record broker %q; want %s", head.Source, rec.Broker, src)
			}
		})
	}
}
