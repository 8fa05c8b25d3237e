package inspect

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestFromDocumentRawValues(t *testing.T) {
	m := &broker.Message{ID: "m", Body: []byte(`{"z":1,"a":2.50}`), Headers: map[string]any{"b": []byte("abc"), "n": int16(2)}}
	before := Document(m)
	canon := Canonical(before)

	// Unchanged, though laid out differently: nothing changes.
	after := maps.Clone(before)
	after["body"] = json.RawMessage("{\n  \"z\": 1,\n  \"a\": 2.50\n}")
	after["headers"] = map[string]any{"b": json.RawMessage(`"abc"`), "n": json.RawMessage(`2`)}
	got, err := FromDocument(m, canon, after)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != string(m.Body) || got.Headers["b"] == nil || got.Headers["n"] != int16(2) {
		t.Errorf("unchanged raw document changed the message: body %s, header b %#v, n %#v; want %s, set, int16(2)", got.Body, got.Headers["b"], got.Headers["n"], m.Body)
	}

	// A changed raw body keeps its key order and numbers as written.
	after["body"] = json.RawMessage(`{"z": 1, "a": 2.50, "new": 1e3}`)
	after["headers"] = map[string]any{"b": json.RawMessage(`"abc"`), "n": json.RawMessage(`3`)}
	got, err = FromDocument(m, canon, after)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z":1,"a":2.50,"new":1e3}`; string(got.Body) != want {
		t.Errorf("body = %s, want %s", got.Body, want)
	}
	if b, ok := got.Headers["b"].([]byte); !ok || string(b) != "abc" {
		t.Errorf("header b = %#v, want []byte(\"abc\")", got.Headers["b"])
	}
	if got.Headers["n"] != int64(3) {
		t.Errorf("header n = %#v, want int64(3)", got.Headers["n"])
	}
}

func TestFromDocumentBinaryBodyToText(t *testing.T) {
	m := &broker.Message{ID: "m", Body: []byte{0xff, 0}}
	before := Document(m)
	after := maps.Clone(before)
	delete(after, "body_base64")
	after["body"] = "fixed"
	got, err := FromDocument(m, Canonical(before), after)
	if err != nil || string(got.Body) != "fixed" {
		t.Errorf("FromDocument = %q, %v; want body \"fixed\"", got.Body, err)
	}
	after = maps.Clone(before)
	after["id"] = "other"
	if _, err := FromDocument(m, Canonical(before), after); err == nil || !strings.Contains(err.Error(), "`.id` is read-only") {
		t.Errorf("changing .id: %v", err)
	}
}

// A body compressed without a content encoding is shown inflated (by
// gzip's magic bytes); an edit of it is compressed again, as the consumer
// reads the body, and an encoded one is compressed as its encoding says.
func TestFromDocumentKeepsCompression(t *testing.T) {
	for _, enc := range []string{"", "gzip"} {
		m := &broker.Message{ID: "m", Body: gz(t, `{"n":1}`), Properties: broker.Properties{ContentEncoding: enc}}
		before := Document(m)
		after := maps.Clone(before)
		after["body"] = map[string]any{"n": 2}
		got, err := FromDocument(m, Canonical(before), after)
		if err != nil {
			t.Fatalf("encoding %q: %v", enc, err)
		}
		if !isGzip(got.Body) {
			t.Errorf("encoding %q: the edited body is no longer gzip: %q", enc, got.Body)
			continue
		}
		if b := BodyBytes(got); string(b) != `{"n":2}` {
			t.Errorf("encoding %q: the edited body inflates to %s, want {\"n\":2}", enc, b)
		}
	}
}
