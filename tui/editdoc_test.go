package tui

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// messageDiff names the parts of two messages that differ.
func messageDiff(got, want *broker.Message) string {
	var d []string
	if !bytes.Equal(got.Body, want.Body) {
		d = append(d, "body "+strings.TrimSpace(string(got.Body))+" ≠ "+string(want.Body))
	}
	for k := range mergeKeys(got.Headers, want.Headers) {
		if !reflect.DeepEqual(got.Headers[k], want.Headers[k]) {
			d = append(d, "header "+k+": "+typed(got.Headers[k])+" ≠ "+typed(want.Headers[k]))
		}
	}
	if !reflect.DeepEqual(got.Attributes, want.Attributes) {
		d = append(d, "attributes differ")
	}
	if got.Properties != want.Properties {
		d = append(d, "properties differ")
	}
	return strings.Join(d, "\n")
}

func mergeKeys(a, b map[string]any) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func typed(v any) string { return strings.TrimSpace(reflect.TypeOf(v).String() + " " + jsonOr(v)) }

func jsonOr(v any) string {
	b, err := jsonMarshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func editMsg() *broker.Message {
	return &broker.Message{
		ID: "m-1", System: broker.RabbitMQ, Queue: "orders.dlq",
		Body: []byte(`{"z":1,"a":{"y":2,"b":1.50}}`),
		Headers: map[string]any{
			"n": int32(5), "raw": []byte("text"), "when": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			"dec": broker.Decimal{Scale: 2, Value: 105}, "x-death": []any{map[string]any{"count": int64(1)}},
		},
		Properties: broker.Properties{ContentType: "application/json", DeliveryMode: 2},
	}
}

func TestEditUnchangedKeepsTheMessage(t *testing.T) {
	for _, m := range []*broker.Message{
		editMsg(),
		{ID: "bin", Body: []byte{0xff, 0, 1}},
		{ID: "text", Body: []byte("plain text")},
		{ID: "sqs", System: broker.SQS, Body: []byte("x"), Attributes: map[string]broker.Attribute{
			"s": {DataType: "String", StringValue: "v"}, "b": {DataType: "Binary", BinaryValue: []byte{1}}}},
	} {
		doc, err := editDocument(m, m.Attributes != nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := applyEdit(m, doc)
		if err != nil {
			t.Fatalf("%s: applyEdit of the unchanged document: %v\n%s", m.ID, err, doc)
		}
		if d := messageDiff(got, m); d != "" {
			t.Errorf("%s: the unchanged document changed the message:\n%s", m.ID, d)
		}
	}
}

func TestEditBinaryBodyIsBodyBase64(t *testing.T) {
	m := &broker.Message{ID: "bin", Body: []byte{0xff, 0, 1}}
	doc, _ := editDocument(m, false)
	if !strings.Contains(doc, `"body_base64": "/wAB"`) || strings.Contains(doc, `"body":`) {
		t.Fatalf("edit document of a binary body:\n%s", doc)
	}
	got, err := applyEdit(m, strings.Replace(doc, "/wAB", "AAEC", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, []byte{0, 1, 2}) {
		t.Errorf("body = %x, want 000102", got.Body)
	}
	got, err = applyEdit(m, `{"body": "now text"}`)
	if err != nil || string(got.Body) != "now text" {
		t.Errorf("replacing a binary body with text: %q, %v", got.Body, err)
	}
}

func TestEditKeepsKeyOrderAndHeaderTypes(t *testing.T) {
	m := editMsg()
	doc, _ := editDocument(m, false)
	edited := strings.Replace(doc, `"y": 2`, `"y": 3`, 1)
	edited = strings.Replace(edited, `"n": 5`, `"n": 6`, 1)
	if edited == doc {
		t.Fatalf("edit document has no \"y\": 2 or \"n\": 5:\n%s", doc)
	}
	got, err := applyEdit(m, edited)
	if err != nil {
		t.Fatal(err)
	}
	want := m.Clone()
	want.Body = []byte(`{"z":1,"a":{"y":3,"b":1.50}}`)
	want.Headers["n"] = int64(6)
	if d := messageDiff(got, want); d != "" {
		t.Errorf("edited message differs:\n%s", d)
	}
}

func TestEditAttributesAsInTheDocument(t *testing.T) {
	m := &broker.Message{ID: "sqs", System: broker.SQS, Body: []byte("x"), Attributes: map[string]broker.Attribute{
		"s": {DataType: "String.custom", StringValue: "v"}, "b": {DataType: "Binary", BinaryValue: []byte{1}}}}
	doc, _ := editDocument(m, true)
	if !strings.Contains(doc, `"data_type": "String.custom"`) || !strings.Contains(doc, `"binary_value": "AQ=="`) {
		t.Fatalf("attributes in the edit document:\n%s", doc)
	}
	got, err := applyEdit(m, strings.Replace(doc, `"string_value": "v"`, `"string_value": "w"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := m.Clone()
	want.Attributes["s"] = broker.Attribute{DataType: "String.custom", StringValue: "w"}
	if d := messageDiff(got, want); d != "" {
		t.Errorf("edited message differs:\n%s", d)
	}
}

// TestEditOffersTheMetadataTheMessageKeeps: a message that keeps attributes
// is offered an attributes object to fill even when it has none, and no
// headers; one that keeps headers the other way round.
func TestEditOffersTheMetadataTheMessageKeeps(t *testing.T) {
	for _, tc := range []struct {
		attrs      bool
		want, none string
	}{
		{attrs: true, want: `"attributes": {}`, none: `"headers"`},
		{attrs: false, want: `"headers": {}`, none: `"attributes"`},
	} {
		m := &broker.Message{ID: "bare", Body: []byte("x")}
		doc, err := editDocument(m, tc.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(doc, tc.want) || strings.Contains(doc, tc.none) {
			t.Errorf("attrs=%v: the document should have %s and no %s:\n%s", tc.attrs, tc.want, tc.none, doc)
		}
		if _, err := applyEdit(m, doc); err != nil {
			t.Errorf("attrs=%v: applyEdit of the unchanged document: %v", tc.attrs, err)
		}
	}
}

func TestEditRefusesLockedHeaders(t *testing.T) {
	m := editMsg()
	_, err := applyEdit(m, `{"headers": {"x-death": []}, "body": {}}`)
	if err == nil || !strings.Contains(err.Error(), `header "x-death" is a system header and is locked`) {
		t.Errorf("adding x-death: %v", err)
	}
	_, err = applyEdit(m, `{"body": 1, "body_base64": "AA=="}`)
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("body and body_base64: %v", err)
	}
}
