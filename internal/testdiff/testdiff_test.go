package testdiff

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

type inner struct {
	N    int
	tags []string
}

type outer struct {
	Name    string
	Count   int64
	Headers map[string]any
	Body    []byte
	In      *inner
	At      time.Time
	Err     error
	skipped string
}

func TestDiffShowsOnlyTheChangedField(t *testing.T) {
	want := outer{Name: "orders", Count: 3, Headers: map[string]any{"x-death": int64(1), "a": "b"}, Body: []byte("hi"), In: &inner{N: 1, tags: []string{"a"}}}
	got := want
	got.Count = 2
	d := Diff(want, got)
	if !strings.Contains(d, "- \x20 Count: 3,") || !strings.Contains(d, "+ \x20 Count: 2,") {
		t.Errorf("Diff does not show the changed count:\n%s", d)
	}
	if strings.Contains(d, `Body:`) || !strings.Contains(d, "unchanged lines") {
		t.Errorf("Diff shows an unchanged field more than %d lines from the change:\n%s", context, d)
	}
	if d := Diff(want, want); d != "" {
		t.Errorf("Diff of equal values = %q, want \"\"", d)
	}
}

func TestRender(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	got := Render(outer{Name: "q", Headers: map[string]any{"b": int32(2), "a": "x"}, Body: []byte{0xff}, In: &inner{tags: []string{"t"}}, At: at, Err: errors.New("boom")})
	want := `testdiff.outer{
  Name: "q",
  Headers: map[string]interface {}{
    "a": "x",
    "b": int32(2),
  },
  Body: []uint8{ff},
  In: &testdiff.inner{
    tags: []string{
      "t",
    },
  },
  At: time.Time("2026-03-01T12:00:00Z"),
  Err: *errors.errorString("boom"),
}`
	if got != want {
		t.Errorf("Render:\n%s", Text(want, got))
	}
}

func TestDiffTellsApartWhatRendersAlike(t *testing.T) {
	if d := Diff([]float64{math.NaN()}, []float64{math.NaN()}); d == "" {
		t.Error("Diff of two NaN slices = \"\", want a note that they differ")
	}
	if d := Diff([]int(nil), []int{}); d == "" {
		t.Error("Diff of a nil and an empty slice = \"\", want a diff")
	}
}

func TestText(t *testing.T) {
	if d := Text("a\n", "a"); !strings.Contains(d, `- "a\n"`) {
		t.Errorf("Text of texts that differ in a trailing newline:\n%s", d)
	}
	if d := Text("a\nb\nc", "a\nB\nc"); d != "--- want\n+++ got\n  a\n- b\n+ B\n  c\n" {
		t.Errorf("Text = %q", d)
	}
	if d := Lines([]string{"a"}, []string{"a", ""}); d == "" {
		t.Error("Lines of lists that differ in a trailing empty line = \"\"")
	}
}

func TestJSON(t *testing.T) {
	type doc struct {
		ID   string `json:"id"`
		Size int    `json:"size"`
	}
	if d := JSON(t, doc{"a", 1}, doc{"a", 2}); !strings.Contains(d, `-   "size": 1`) || !strings.Contains(d, `+   "size": 2`) {
		t.Errorf("JSON:\n%s", d)
	}
	if d := JSON(t, doc{"a", 1}, doc{"a", 1}); d != "" {
		t.Errorf("JSON of equal values = %q", d)
	}
}

func TestLinesNilIsEmpty(t *testing.T) {
	if d := Lines(nil, []string{}); d != "" {
		t.Errorf("Lines(nil, []string{}) = %q, want \"\"", d)
	}
}

func TestPick(t *testing.T) {
	got := Pick([]inner{{N: 1}, {N: 2}}, func(i inner) int { return i.N })
	if d := Diff([]int{1, 2}, got); d != "" {
		t.Errorf("Pick (-want +got):\n%s", d)
	}
}
