package inspect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func gz(t testing.TB, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func rabbitMsg() *broker.Message {
	return &broker.Message{
		ID: "m-1", System: broker.RabbitMQ, Queue: "orders.dlq",
		Body:       []byte(`{"order":42,"big":12345678901234567890,"error":{"message":"card declined"}}`),
		Properties: broker.Properties{ContentType: "application/json", MessageID: "m-1", DeliveryMode: 2, Timestamp: t0.Add(-time.Hour)},
		Headers: map[string]any{
			"tenant":  "acme",
			"n8":      int8(-3),
			"n64":     int64(1 << 40),
			"u32":     uint32(7),
			"f32":     float32(1.5),
			"bytes":   []byte("text"),
			"bin":     []byte{0xff, 0x00},
			"dec":     broker.Decimal{Scale: 2, Value: 1234},
			"when":    t0,
			"x-death": []any{map[string]any{"reason": "rejected", "count": int64(1)}},
			"nested":  map[string]any{"a": []any{int16(1), nil, true}},
		},
		Death: &broker.Death{Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"order.created"}, Count: 2,
			First: t0.Add(-30 * time.Minute), Last: t0.Add(-10 * time.Minute),
			History: []broker.DeathEntry{{Reason: "rejected", Queue: "orders", Count: 2, Time: t0.Add(-30 * time.Minute)}}},
		Redelivered: true,
	}
}

func TestDocumentShape(t *testing.T) {
	doc := DocumentAt(rabbitMsg(), t0)
	for _, k := range []string{"id", "queue", "system", "headers", "properties", "attributes", "system_attributes", "death", "delivery_count", "redelivered", "timestamp", "age_seconds", "size", "reason", "shape", "group", "body"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("document lacks %q", k)
		}
	}
	if got := doc["age_seconds"]; got != 1800.0 {
		t.Errorf("age_seconds = %v, want 1800 (first death 30m ago)", got)
	}
	if doc["reason"] != "card declined" {
		t.Errorf("reason = %v", doc["reason"])
	}
	if doc["shape"] != "card declined" || doc["group"] != GroupID("card declined") {
		t.Errorf("shape = %v, group = %v", doc["shape"], doc["group"])
	}
	h := doc["headers"].(map[string]any)
	want := map[string]any{"tenant": "acme", "n8": -3, "n64": 1 << 40, "u32": 7, "f32": 1.5, "bytes": "text", "bin": "/wA=", "dec": 12.34, "when": "2026-03-01T12:00:00Z"}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("headers.%s = %#v, want %#v", k, h[k], v)
		}
	}
	body := doc["body"].(map[string]any)
	if body["big"] != json.Number("12345678901234567890") {
		t.Errorf("big number lost precision: %#v", body["big"])
	}
	// Every value must be usable by jq: a query touching all of it runs.
	q := MustCompile(`[paths] | length`)
	if _, err := q.Eval(context.Background(), doc); err != nil {
		t.Fatalf("jq over document: %v", err)
	}
	ok, err := MustCompile(`.headers.nested.a[0] == 1 and .death.routing_keys[0] == "order.created" and .body.order == 42 and .headers.dec > 12`).MatchDoc(context.Background(), doc)
	if err != nil || !ok {
		t.Errorf("typed values not comparable in jq: ok=%v err=%v", ok, err)
	}
}

func TestDocumentBodies(t *testing.T) {
	cases := []struct {
		name   string
		m      broker.Message
		body   any
		base64 string
	}{
		{"json", broker.Message{Body: []byte(` {"a":1} `)}, map[string]any{"a": json.Number("1")}, ""},
		{"text", broker.Message{Body: []byte("hello {")}, "hello {", ""},
		{"json scalar", broker.Message{Body: []byte(`"x"`)}, "x", ""},
		{"trailing garbage is text", broker.Message{Body: []byte(`{"a":1} x`)}, `{"a":1} x`, ""},
		{"binary", broker.Message{Body: []byte{0xff, 0xfe, 0x00}}, nil, "//4A"},
		{"gzip by encoding", broker.Message{Body: gz(t, `{"z":true}`), Properties: broker.Properties{ContentEncoding: "gzip"}}, map[string]any{"z": true}, ""},
		{"gzip by magic", broker.Message{Body: gz(t, `plain`)}, "plain", ""},
		{"empty", broker.Message{}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := DocumentAt(&c.m, t0)
			got, _ := json.Marshal(doc["body"])
			want, _ := json.Marshal(c.body)
			if string(got) != string(want) {
				t.Errorf("body = %s, want %s", got, want)
			}
			b64, _ := doc["body_base64"].(string)
			if b64 != c.base64 {
				t.Errorf("body_base64 = %q, want %q", b64, c.base64)
			}
		})
	}
}

func TestJQValueBigUint(t *testing.T) {
	v := jqValue(uint64(1<<63 + 5))
	if _, ok := v.(*big.Int); !ok {
		t.Fatalf("uint64 beyond int: %T", v)
	}
}

func TestDecode(t *testing.T) {
	d := Decode(&broker.Message{Body: gz(t, `{"b":[1,2],"a":"x"}`), Properties: broker.Properties{ContentEncoding: "GZIP"}})
	if d.Kind != BodyJSON || d.Encoding != "gzip" || d.Size == len(d.Bytes) {
		t.Fatalf("decode gzip json: kind %v, encoding %q, size %d of %d decoded bytes; want %v, gzip, a size that differs", d.Kind, d.Encoding, d.Size, len(d.Bytes), BodyJSON)
	}
	if got := d.Pretty(false); got != "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}" {
		t.Errorf("pretty keeps key order and indents: %q", got)
	}
	col := d.Pretty(true)
	if !strings.Contains(col, ansiKey+`"b"`+ansiReset) || !strings.Contains(col, ansiString+`"x"`+ansiReset) {
		t.Errorf("colour: %q", col)
	}
	if p := d.Preview(12); p != `{"b":[1,2],…` {
		t.Errorf("preview = %q", p)
	}
	bin := Decode(&broker.Message{Body: []byte{0, 1, 2, 0xff}})
	if bin.Kind != BodyBinary || !strings.Contains(bin.Pretty(false), "00 01 02 ff") || bin.Base64() != "AAEC/w==" {
		t.Errorf("binary: kind %v, base64 %q, pretty %q; want %v, AAEC/w==, 00 01 02 ff", bin.Kind, bin.Base64(), bin.Pretty(false), BodyBinary)
	}
	if p := bin.Preview(40); p != "<binary 4 bytes> 000102ff" {
		t.Errorf("binary preview %q", p)
	}
	txt := Decode(&broker.Message{Body: []byte("line one\n\tline two")})
	if txt.Kind != BodyText || txt.Preview(0) != "line one line two" {
		t.Errorf("text preview %q", txt.Preview(0))
	}
	bad := Decode(&broker.Message{Body: []byte("not gzip"), Properties: broker.Properties{ContentEncoding: "gzip"}})
	if bad.Err == nil || bad.Kind != BodyText {
		t.Errorf("broken gzip should be reported and shown raw: err %v, kind %v", bad.Err, bad.Kind)
	}
	defl := Decode(&broker.Message{Body: []byte("abc"), Properties: broker.Properties{ContentEncoding: "utf-8"}})
	if defl.Err != nil || defl.Kind != BodyText || defl.Encoding != "" {
		t.Errorf("unknown encoding must pass through: err %v, kind %v, encoding %q", defl.Err, defl.Kind, defl.Encoding)
	}
}

func TestInflateBomb(t *testing.T) {
	big := gz(t, strings.Repeat("a", MaxInflated+10))
	d := Decode(&broker.Message{Body: big, Properties: broker.Properties{ContentEncoding: "gzip"}})
	if d.Err == nil {
		t.Fatal("inflating beyond MaxInflated must fail")
	}
}
