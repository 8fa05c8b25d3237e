package redrive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
