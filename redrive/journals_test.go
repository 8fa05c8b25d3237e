package redrive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

// Finished journals are pruned (by age); interrupted ones never are.
func TestListAndPruneJournals(t *testing.T) {
	dir := t.TempDir()
	mk := func(key string, finish bool) string {
		j, err := CreateJournal(dir, JournalHeader{Key: key, Source: key})
		if err != nil {
			t.Fatal(err)
		}
		if finish {
			must(t, j.end(Summary{}, nil))
		} else {
			unlockFile(j.f)
		}
		j.f.Close()
		return j.Path()
	}
	oldDone, newDone, interrupted := mk("old", true), mk("new", true), mk("cut", false)
	weekAgo := time.Now().Add(-8 * 24 * time.Hour)
	must(t, os.Chtimes(oldDone, weekAgo, weekAgo))
	must(t, os.Chtimes(interrupted, weekAgo, weekAgo))
	js, err := ListJournals(dir)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, j := range js {
		states = append(states, j.Header.Source+"="+j.State)
	}
	if got := strings.Join(states, " "); !strings.Contains(got, "old=finished") || !strings.Contains(got, "new=finished") || !strings.Contains(got, "cut=interrupted") {
		t.Fatalf("states %s", got)
	}
	removed, err := PruneJournals(dir, JournalMaxAge, time.Now())
	if err != nil || len(removed) != 1 || removed[0] != oldDone {
		t.Fatalf("pruned %v (%v), want only %s", removed, err, filepath.Base(oldDone))
	}
	removed, _ = PruneJournals(dir, 0, time.Now())
	if len(removed) != 1 || removed[0] != newDone {
		t.Fatalf("pruned %v, want only %s", removed, filepath.Base(newDone))
	}
	if _, err := os.Stat(interrupted); err != nil {
		t.Fatalf("the interrupted journal was removed: %v", err)
	}
}

// A journal never holds a password: CreateJournal redacts its header.
func TestJournalHeaderRedacted(t *testing.T) {
	dir := t.TempDir()
	const to = "amqp://ops:Kx9@Zq7Leak@rabbit-b:5672/shop#queue:orders"
	j, err := CreateJournal(dir, JournalHeader{Key: "k", Broker: "amqp://ops:Kx9@Zq7Leak@rabbit-a/", Source: "orders.dlq",
		Destination: to, Plan: map[string]string{"to": to, "filter": ".n > 1"}})
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.record('P', []string{"m1"}))
	must(t, j.Close())
	data, err := os.ReadFile(j.Path())
	must(t, err)
	if strings.Contains(string(data), "Zq7Leak") || strings.Contains(string(data), "Kx9") {
		t.Fatalf("journal holds the password:\n%s", data)
	}
	js, err := ListJournals(dir)
	must(t, err)
	want := "amqp://ops:xxxxx@rabbit-b:5672/shop#queue:orders"
	if len(js) != 1 {
		t.Fatalf("%d journals, want 1", len(js))
	}
	if p := js[0].Header.Plan; p["to"] != want || p["filter"] != ".n > 1" {
		t.Errorf("plan to %q filter %q, want to %q filter %q", p["to"], p["filter"], want, ".n > 1")
	}
}

// A journal an earlier version wrote with a password in its header loses
// it on first read, and keeps its steps and its modification time.
func TestOldJournalScrubbedOnRead(t *testing.T) {
	for _, read := range []string{"ListJournals", "LoadInterrupted"} {
		t.Run(read, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "k-0123456789abcdef.journal")
			old := `H {"v":1,"run_id":"0123456789abcdef","key":"k","started":"2026-11-01T10:00:00Z","broker":"amqp://ops@rabbit-a:5672/","source":"orders.dlq","destination":"amqp://ops:xxxxx@Zq7Leak@rabbit-b/#queue:orders","plan":{"to":"amqp://ops:Kx9@Zq7Leak@rabbit-b/#queue:orders","filter":".n \u003e 1"},"pid":4242}` + "\n" +
				"B {\"ack_hold\":0}\nP m1 m2\nC m1\nA m1\n"
			must(t, os.WriteFile(path, []byte(old), 0o600))
			mtime := time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC)
			must(t, os.Chtimes(path, mtime, mtime))
			var plan map[string]string
			switch read {
			case "ListJournals":
				js, err := ListJournals(dir)
				must(t, err)
				if len(js) != 1 {
					t.Fatalf("%d journals", len(js))
				}
				plan = js[0].Header.Plan
			case "LoadInterrupted":
				r, err := LoadInterrupted(dir, "k")
				must(t, err)
				plan = r.Plan().Plan
				if len(r.Unconfirmed) != 1 || r.Unconfirmed[0] != "m2" {
					t.Errorf("unconfirmed %v, want [m2]", r.Unconfirmed)
				}
				r.Release()
			}
			if want := "amqp://ops:xxxxx@rabbit-b/#queue:orders"; plan["to"] != want || plan["filter"] != ".n > 1" {
				t.Errorf("plan to %q filter %q, want to %q", plan["to"], plan["filter"], want)
			}
			data, err := os.ReadFile(path)
			must(t, err)
			if strings.Contains(string(data), "Zq7Leak") || strings.Contains(string(data), "Kx9") {
				t.Fatalf("journal still holds the password:\n%s", data)
			}
			_, steps, _ := strings.Cut(old, "\n")
			if _, got, _ := strings.Cut(string(data), "\n"); got != steps {
				t.Errorf("steps changed:\n%s", testdiff.Text(steps, got))
			}
			if st, err := os.Stat(path); err != nil || !st.ModTime().Equal(mtime) {
				t.Errorf("modified %v (%v), want %v", st.ModTime(), err, mtime)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
				t.Errorf("files left: %v", left)
			}
		})
	}
}

// A journal keeps the messages a confirmed preview chose; a resume of
// journals that all chose moves only their union, and of any journal that
// selected by its plan, by the plan.
func TestJournalChosen(t *testing.T) {
	dir := t.TempDir()
	write := func(chosen []string) {
		t.Helper()
		j, err := CreateJournal(dir, JournalHeader{Key: "k", Source: "q", ChosenIDs: chosen})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.record('P', []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]string, 2500)
	for i := range ids {
		ids[i] = fmt.Sprintf("id %04d", i) // a space: escaped
	}
	write(ids[:2000])
	write(ids[1500:])
	r, err := LoadInterrupted(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := r.Chosen()
	r.Release()
	if d := testdiff.Lines(ids, got); d != "" {
		t.Errorf("chosen:\n%s", d)
	}
	write(nil)
	r, err = LoadInterrupted(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if got := r.Chosen(); got != nil {
		t.Errorf("with a journal that selected by its plan, chosen %d IDs, want none", len(got))
	}
}
