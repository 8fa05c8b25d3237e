package cmd

import (
	"encoding/json"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// diffText is a unified diff from want to got, "" when they are equal.
func diffText(want, got string) string {
	if want == got {
		return ""
	}
	return udiff.Unified("want", "got", want, got)
}

// diffJSON compares two values by their indented JSON, so that a failing
// test shows the fields that differ rather than two whole structs.
func diffJSON(t testing.TB, want, got any) string {
	t.Helper()
	w, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	g, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return diffText(string(w)+"\n", string(g)+"\n")
}
