// Package testdiff renders what differs between a wanted and a got value,
// so that a failing test shows the changed lines rather than two whole
// structs.
package testdiff

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/internal/textdiff"
)

// context is how many unchanged lines are kept around each change.
const context = 3

// Text is a line diff from want to got ("- " wanted, "+ " got), with long
// unchanged runs folded; "" when the texts are equal.
func Text(want, got string) string {
	if want == got {
		return ""
	}
	lines := textdiff.Lines(want, got)
	changed := false
	for _, l := range lines {
		if !strings.HasPrefix(l, "  ") {
			changed = true
			break
		}
	}
	if !changed {
		// The texts differ only in trailing newlines, which Lines ignores.
		return fmt.Sprintf("- %q\n+ %q\n", want, got)
	}
	return "--- want\n+++ got\n" + strings.Join(textdiff.Fold(lines, context), "\n") + "\n"
}

// Lines is Text of two lists of lines; "" when they hold the same lines
// (a nil and an empty list are alike).
func Lines(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	if d := Text(strings.Join(want, "\n")+"\n", strings.Join(got, "\n")+"\n"); d != "" {
		return d
	}
	return fmt.Sprintf("- %q\n+ %q\n", want, got)
}

// JSON is Text of the indented JSON of want and got; "" when both encode
// the same. Use it for values whose JSON form is what the test is about.
func JSON(t testing.TB, want, got any) string {
	t.Helper()
	w, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatalf("testdiff: encode want: %v", err)
	}
	g, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("testdiff: encode got: %v", err)
	}
	return Text(string(w), string(g))
}

// Diff is Text of want and got rendered one field, element or map entry a
// line, in Go-like syntax that includes unexported fields; "" when the two
// render the same. Zero-valued struct fields are left out, and map entries
// are sorted, so that the diff shows only what a test could care about.
func Diff(want, got any) string {
	if w, g := Render(want), Render(got); w != g {
		return Text(w, g)
	}
	if !reflect.DeepEqual(want, got) {
		// Values that render alike but are not deeply equal: a NaN,
		// different funcs, or pointers to equal values in a cycle.
		return fmt.Sprintf("values render alike but differ:\n%s\n", Render(got))
	}
	return ""
}

// Render writes v one field, element or map entry a line.
func Render(v any) string {
	var b strings.Builder
	r := renderer{b: &b, seen: map[uintptr]bool{}}
	r.value(reflect.ValueOf(v), 0, true)
	return b.String()
}

type renderer struct {
	b    *strings.Builder
	seen map[uintptr]bool
}

var timeType = reflect.TypeFor[time.Time]()
var errorType = reflect.TypeFor[error]()

func (r renderer) indent(depth int) {
	r.b.WriteString(strings.Repeat("  ", depth))
}

// value writes v; typed says whether a scalar needs its type spelled out
// because nothing around it names it (an interface or the top level).
func (r renderer) value(v reflect.Value, depth int, typed bool) {
	if !v.IsValid() {
		r.b.WriteString("nil")
		return
	}
	if v.Type() == timeType && v.CanInterface() {
		t := v.Interface().(time.Time)
		fmt.Fprintf(r.b, "time.Time(%q)", t.Format(time.RFC3339Nano))
		return
	}
	if v.Kind() != reflect.Interface && v.Type().Implements(errorType) && v.CanInterface() &&
		(v.Kind() != reflect.Pointer || !v.IsNil()) {
		fmt.Fprintf(r.b, "%s(%q)", v.Type(), v.Interface().(error).Error())
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			r.b.WriteString("nil")
			return
		}
		r.value(v.Elem(), depth, true)
	case reflect.Pointer:
		if v.IsNil() {
			r.b.WriteString("nil")
			return
		}
		if r.seen[v.Pointer()] {
			fmt.Fprintf(r.b, "&%s{…cycle…}", v.Type().Elem())
			return
		}
		r.seen[v.Pointer()] = true
		defer delete(r.seen, v.Pointer())
		r.b.WriteString("&")
		r.value(v.Elem(), depth, true)
	case reflect.Struct:
		r.structure(v, depth)
	case reflect.Map:
		r.mapping(v, depth)
	case reflect.Slice:
		if v.IsNil() {
			r.b.WriteString("nil")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			r.bytes(v)
			return
		}
		r.list(v, depth)
	case reflect.Array:
		r.list(v, depth)
	case reflect.String:
		if typed && v.Type().Name() != "string" {
			fmt.Fprintf(r.b, "%s(%q)", v.Type(), v.String())
			return
		}
		fmt.Fprintf(r.b, "%q", v.String())
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			r.b.WriteString("nil")
			return
		}
		fmt.Fprintf(r.b, "%s(%#x)", v.Type(), v.Pointer())
	default:
		s := scalar(v)
		if typed && !(v.Kind() == reflect.Bool && v.Type().Name() == "bool") {
			fmt.Fprintf(r.b, "%s(%s)", v.Type(), s)
			return
		}
		r.b.WriteString(s)
	}
}

func scalar(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Bool:
		return fmt.Sprint(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprint(v.Uint())
	case reflect.Float32, reflect.Float64:
		return fmt.Sprint(v.Float())
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprint(v.Complex())
	}
	return v.Kind().String()
}

func (r renderer) bytes(v reflect.Value) {
	b := make([]byte, v.Len())
	reflect.Copy(reflect.ValueOf(b), v)
	if utf8.Valid(b) {
		fmt.Fprintf(r.b, "%s(%q)", v.Type(), b)
		return
	}
	fmt.Fprintf(r.b, "%s{% x}", v.Type(), b)
}

func (r renderer) structure(v reflect.Value, depth int) {
	t := v.Type()
	fmt.Fprintf(r.b, "%s{", t)
	wrote := false
	for i := range t.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		r.b.WriteString("\n")
		r.indent(depth + 1)
		r.b.WriteString(t.Field(i).Name + ": ")
		r.value(f, depth+1, f.Kind() == reflect.Interface)
		r.b.WriteString(",")
		wrote = true
	}
	if wrote {
		r.b.WriteString("\n")
		r.indent(depth)
	}
	r.b.WriteString("}")
}

func (r renderer) mapping(v reflect.Value, depth int) {
	if v.IsNil() {
		r.b.WriteString("nil")
		return
	}
	type entry struct{ k, v string }
	entries := make([]entry, 0, v.Len())
	elemTyped := v.Type().Elem().Kind() == reflect.Interface
	for it := v.MapRange(); it.Next(); {
		var k, e strings.Builder
		renderer{b: &k, seen: r.seen}.value(it.Key(), depth+1, false)
		renderer{b: &e, seen: r.seen}.value(it.Value(), depth+1, elemTyped)
		entries = append(entries, entry{k.String(), e.String()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
	fmt.Fprintf(r.b, "%s{", v.Type())
	for _, e := range entries {
		r.b.WriteString("\n")
		r.indent(depth + 1)
		r.b.WriteString(e.k + ": " + e.v + ",")
	}
	if len(entries) > 0 {
		r.b.WriteString("\n")
		r.indent(depth)
	}
	r.b.WriteString("}")
}

func (r renderer) list(v reflect.Value, depth int) {
	fmt.Fprintf(r.b, "%s{", v.Type())
	typed := v.Type().Elem().Kind() == reflect.Interface
	for i := range v.Len() {
		r.b.WriteString("\n")
		r.indent(depth + 1)
		r.value(v.Index(i), depth+1, typed)
		r.b.WriteString(",")
	}
	if v.Len() > 0 {
		r.b.WriteString("\n")
		r.indent(depth)
	}
	r.b.WriteString("}")
}

// Pick is one field (or any value) of each element, for a message that
// names the elements of a list rather than printing them whole:
// testdiff.Pick(qs, func(q broker.Queue) string { return q.Name }).
func Pick[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, e := range s {
		out[i] = f(e)
	}
	return out
}
