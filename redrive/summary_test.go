package redrive

import (
	"encoding/json"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

func TestSummaryCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Summary
		want map[string]int64
	}{
		{"nothing", Summary{}, map[string]int64{"examined": 0, "moved": 0}},
		{"every count", Summary{Examined: 9, Moved: 4, Archived: 4, Resent: 1,
			Skipped: map[string]int64{"filter": 2, "redrive-limit": 1}, Failed: map[string]int64{"unroutable": 2}},
			map[string]int64{"examined": 9, "moved": 4, "archived": 4, "resent": 1, "skipped:filter": 2, "skipped:redrive-limit": 1, "failed:unroutable": 2}},
	} {
		w, _ := json.MarshalIndent(c.want, "", "  ")
		g, _ := json.MarshalIndent(c.s.Counts(), "", "  ")
		if d := udiff.Unified("want", "got", string(w)+"\n", string(g)+"\n"); d != "" {
			t.Errorf("%s: counts differ:\n%s", c.name, d)
		}
	}
}
