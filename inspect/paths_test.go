package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func missingText(ms []MissingPath) string {
	var lines []string
	for _, m := range ms {
		lines = append(lines, fmt.Sprintf("%s nearest=%s examined=%d", m.Path, strings.Join(m.Nearest, ","), m.Examined))
	}
	return strings.Join(lines, "\n")
}

func TestMissingPaths(t *testing.T) {
	docs := []map[string]any{
		{"reason": "rejected", "body": map[string]any{"amount": 120.0, "currency": "EUR"}, "death": map[string]any{"reason": "rejected"}},
		{"reason": "expired", "body": map[string]any{"amount": 80.0, "amounts": []any{}}, "death": nil},
	}
	for _, tc := range []struct {
		filter string
		want   []MissingPath
	}{
		{`.body.ammount > 100`, []MissingPath{{Path: ".body.ammount", Nearest: []string{".body.amount", ".body.amounts"}, Examined: 2}}},
		{`.body.amount > 100 and .reasn == "x"`, []MissingPath{{Path: ".reasn", Nearest: []string{".reason"}, Examined: 2}}},
		{`select(.death.reason == "rejected") | .nothing`, nil}, // .nothing reads select's output, and .death.reason exists once
		{`.body.amount > 100`, nil},
		{`.body | .ammount`, nil}, // after a pipe: not the document
		{`.headers."x-exception" == null`, []MissingPath{{Path: ".headers.x-exception", Nearest: nil, Examined: 2}}},
	} {
		q, err := Compile(tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if _, err := q.MatchDoc(context.Background(), d); err != nil {
				t.Fatalf("%s: %v", tc.filter, err)
			}
		}
		if got, want := missingText(q.MissingPaths()), missingText(tc.want); got != want {
			t.Errorf("%s: missing paths\n got: %s\nwant: %s", tc.filter, got, want)
		}
	}
	q := MustCompile(".body.ammount > 1")
	if got := q.MissingPaths(); got != nil {
		t.Errorf("no message examined: %v", got)
	}
}
