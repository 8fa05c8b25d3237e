package redrive

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

func jq(t *testing.T, expr string) Transform {
	t.Helper()
	q, err := inspect.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return JQTransform(q)
}

func TestJQTransform(t *testing.T) {
	orig := dead("m1", `{ "order" : 17, "retry": 3, "big": 12345678901234567890 }`)
	orig.ID = "m1"
	orig.Headers["attempt"] = int32(4)
	orig.Headers["raw"] = []byte{0xff, 0x00}
	tests := []struct {
		name, expr string
		check      func(t *testing.T, m *broker.Message)
		err        string
	}{
		{name: "body field", expr: `.body.retry = 0`, check: func(t *testing.T, m *broker.Message) {
			if !strings.Contains(string(m.Body), `"retry":0`) || !strings.Contains(string(m.Body), `"big":12345678901234567890`) {
				t.Errorf("body %s", m.Body)
			}
			if m.Headers["attempt"] != int32(4) || string(m.Headers["raw"].([]byte)) != "\xff\x00" {
				t.Errorf("untouched headers lost their types: attempt %#v, raw %#v; want int32(4), []byte(\"\\xff\\x00\")", m.Headers["attempt"], m.Headers["raw"])
			}
		}},
		{name: "header only keeps body bytes", expr: `.headers.fixed = "yes" | .headers.attempt = 5`, check: func(t *testing.T, m *broker.Message) {
			if string(m.Body) != string(orig.Body) {
				t.Errorf("body re-encoded: %s", m.Body)
			}
			if m.Headers["fixed"] != "yes" || m.Headers["attempt"] != int64(5) {
				t.Errorf("headers fixed %#v, attempt %#v; want \"yes\", int64(5)", m.Headers["fixed"], m.Headers["attempt"])
			}
		}},
		{name: "property", expr: `.properties.priority = 9 | .properties.content_type = "text/plain"`, check: func(t *testing.T, m *broker.Message) {
			if m.Properties.Priority != 9 || m.Properties.ContentType != "text/plain" || m.Properties.MessageID != "m1" {
				t.Errorf("properties: priority %d, content type %q, message id %q; want 9, text/plain, m1", m.Properties.Priority, m.Properties.ContentType, m.Properties.MessageID)
			}
		}},
		{name: "replace body with text", expr: `.body = "plain"`, check: func(t *testing.T, m *broker.Message) {
			if string(m.Body) != `"plain"` {
				t.Errorf("a JSON body stays JSON: %s", m.Body)
			}
		}},
		{name: "not an object", expr: `.body.retry`, err: "not an object"},
		{name: "two results", expr: `., .`, err: "2 results"},
		{name: "no result", expr: `empty`, err: "no result"},
		{name: "read-only id", expr: `.id = "other"`, err: "`.id` is read-only"},
		{name: "bad priority", expr: `.properties.priority = 300`, err: "priority"},
		{name: "unknown property", expr: `.properties.colour = "red"`, err: "not an AMQP property"},
		{name: "headers not an object", expr: `.headers = 3`, err: "must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := jq(t, tt.expr)(context.Background(), orig)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, m)
			if orig.Headers["attempt"] != int32(4) {
				t.Fatal("transform modified the original")
			}
		})
	}
}

func TestJQTransformSQSAttributes(t *testing.T) {
	m := &broker.Message{ID: "x", System: broker.SQS, Body: []byte("plain text"),
		Attributes: map[string]broker.Attribute{"n": {DataType: "Number", StringValue: "1"}, "b": {DataType: "Binary", BinaryValue: []byte{1, 2}}}}
	got, err := jq(t, `.attributes.n.string_value = "2" | .body = "changed"`)(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["n"].StringValue != "2" || string(got.Attributes["b"].BinaryValue) != "\x01\x02" || string(got.Body) != "changed" {
		t.Fatalf("attribute n %q, b %q, body %q; want 2, \"\\x01\\x02\", changed", got.Attributes["n"].StringValue, got.Attributes["b"].BinaryValue, got.Body)
	}
}

func FuzzJQTransformNeverPanics(f *testing.F) {
	f.Add(`{"a":1}`, `.body.a = 2`)
	f.Add(`text`, `.headers.x = [1,{"y":null}]`)
	f.Add(`{}`, `.properties = {}`)
	f.Fuzz(func(t *testing.T, body, expr string) {
		q, err := inspect.Compile(expr)
		if err != nil {
			return
		}
		m := dead("id", body)
		m.ID = "id"
		nm, err := JQTransform(q)(context.Background(), m)
		if err == nil && nm == nil {
			t.Fatal("nil message without error")
		}
	})
}

// A transform that changes one header keeps the AMQP types of the others,
// byte strings that are text included.
func TestJQTransformKeepsOtherHeaderTypes(t *testing.T) {
	m := dead("m1", `{"a":1}`)
	m.Headers = map[string]any{"text": []byte("abc"), "n": uint8(3), "d": broker.Decimal{Scale: 1, Value: 5}}
	nm, err := jq(t, `.headers.new = "x"`)(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range m.Headers {
		if got := nm.Headers[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("header %s = %#v, want %#v", k, got, want)
		}
	}
	if nm.Headers["new"] != "x" {
		t.Errorf("header new = %#v, want \"x\"", nm.Headers["new"])
	}
}

// Dry-run diffs show a binary body the way filters and transforms see it:
// as body_base64.
func TestViewBinaryBody(t *testing.T) {
	v := View(&broker.Message{ID: "b", Body: []byte{0xff, 0}})
	if v["body"] != nil || v["body_base64"] != "/wA=" {
		t.Errorf("View of a binary body = %v, want body null and body_base64 \"/wA=\"", v)
	}
	if _, ok := v["headers"]; ok {
		t.Errorf("View of a message without headers has headers: %v", v)
	}
	d := makeDiff(&broker.Message{ID: "b", Body: []byte("a\nb")}, &broker.Message{ID: "b", Body: []byte("a\nc")})
	if want := "  {\n-   \"body\": \"a\\nb\"\n+   \"body\": \"a\\nc\"\n  }"; d.Lines != want {
		t.Errorf("diff lines:\n%s\nwant them to hold:\n%s", d.Lines, want)
	}
}
