package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

var t0 = time.Date(2025, 3, 14, 9, 30, 1, 123456789, time.UTC)

// fullMessage sets every field of a message.
func fullMessage() *broker.Message {
	return &broker.Message{
		ID: "m-1", System: broker.RabbitMQ, Queue: "orders.dlq",
		Body:    []byte(`{"order":1}`),
		Headers: map[string]any{"k": "v"},
		Properties: broker.Properties{
			ContentType: "application/json", ContentEncoding: "utf-8", DeliveryMode: 2, Priority: 9,
			CorrelationID: "c", ReplyTo: "r", Expiration: "60000", MessageID: "m-1", Timestamp: t0,
			Type: "T", UserID: "u", AppID: "a",
		},
		Attributes: map[string]broker.Attribute{
			"s": {DataType: "String", StringValue: "x"},
			"n": {DataType: "Number.int", StringValue: "42"},
			"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 0xff}},
			"e": {DataType: "Binary", BinaryValue: []byte{}},
		},
		SystemAttributes: map[string]string{"ApproximateReceiveCount": "3", "MessageGroupId": "g"},
		Exchange:         "orders.dlx", RoutingKey: "order.created",
		Death: &broker.Death{
			Reason: "rejected", Queue: "orders.q", QueueARN: "arn:aws:sqs:us-east-1:1:q", Exchange: "orders.x",
			RoutingKeys: []string{"a", "b"}, Count: 3, First: t0.Add(-time.Hour), Last: t0,
			FirstReason: "expired", FirstQueue: "orders.retry",
			History: []broker.DeathEntry{
				{Reason: "rejected", Queue: "orders.q", Exchange: "orders.x", RoutingKeys: []string{"a"}, Count: 2, Time: t0},
				{Reason: "expired", Queue: "orders.retry", Count: 1, Time: t0.Add(-time.Hour), RoutingKeys: []string{}},
			},
		},
		DeliveryCount: 7, AcquiredCount: 9, Redelivered: true, Timestamp: t0, Position: "1234",
	}
}

func roundTrip(t *testing.T, m *broker.Message) *broker.Message {
	t.Helper()
	b, err := Marshal(m, "amqp://u:secret@h/", t0)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if bytes.Contains(b, []byte("secret")) {
		t.Fatalf("record holds the password: %s", b)
	}
	if bytes.ContainsRune(b, '\n') {
		t.Fatalf("record spans lines: %s", b)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	return got
}

func TestRoundTripHeaderTypes(t *testing.T) {
	nested := map[string]any{
		"inner": map[string]any{"deep": []any{int8(-1), "x", nil, map[string]any{}}},
		"list":  []any{},
	}
	tests := []struct {
		name string
		v    any
	}{
		{"void", nil},
		{"bool true", true},
		{"bool false", false},
		{"int8", int8(-128)},
		{"int16", int16(-32768)},
		{"int32", int32(5)},
		{"int32 min", int32(math.MinInt32)},
		{"int64", int64(math.MaxInt64)},
		{"int64 min", int64(math.MinInt64)},
		{"uint8", uint8(255)},
		{"uint16", uint16(65535)},
		{"uint32", uint32(math.MaxUint32)},
		{"uint64", uint64(math.MaxUint64)},
		{"float32", float32(3.1415927)},
		{"float32 tiny", float32(math.SmallestNonzeroFloat32)},
		{"float64", 2.718281828459045},
		{"float64 max", math.MaxFloat64},
		{"float64 +inf", math.Inf(1)},
		{"float64 -inf", math.Inf(-1)},
		{"float32 -inf", float32(math.Inf(-1))},
		{"float64 -0", math.Copysign(0, -1)},
		{"decimal", broker.Decimal{Scale: 2, Value: -12345}},
		{"string", "héllo \"world\"\n\x00\u2028<>&"},
		{"string empty", ""},
		{"bytes", []byte{0, 1, 2, 0xfe, 0xff}},
		{"bytes empty", []byte{}},
		{"timestamp", t0},
		{"table", map[string]any{"a": int32(1), "b": "c", "t": t0}},
		{"table empty", map[string]any{}},
		{"array", []any{int64(1), "two", 3.0, []byte("4"), broker.Decimal{Scale: 1, Value: 5}}},
		{"array empty", []any{}},
		{"nested", nested},
		{"x-death", []any{map[string]any{
			"count": int64(1), "reason": "rejected", "queue": "q", "exchange": "x",
			"routing-keys": []any{"rk"}, "time": t0.Truncate(time.Second),
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &broker.Message{ID: "x", Headers: map[string]any{"h": tt.v}}
			got := roundTrip(t, m)
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip changed the message (-want +got):\n%s", testdiff.Diff(m, got))
			}
		})
	}
	t.Run("NaN", func(t *testing.T) {
		for _, v := range []any{math.NaN(), float32(math.NaN())} {
			got := roundTrip(t, &broker.Message{ID: "x", Headers: map[string]any{"h": v}})
			switch x := got.Headers["h"].(type) {
			case float64:
				if !math.IsNaN(x) {
					t.Errorf("got %v, want NaN", x)
				}
			case float32:
				if !math.IsNaN(float64(x)) {
					t.Errorf("got %v, want NaN", x)
				}
			default:
				t.Errorf("NaN came back as %T", x)
			}
		}
	})
}

func TestRoundTripMessages(t *testing.T) {
	tests := []struct {
		name string
		m    func() *broker.Message
	}{
		{"every field", fullMessage},
		{"nil body", func() *broker.Message { return &broker.Message{ID: "a"} }},
		{"empty body", func() *broker.Message { return &broker.Message{ID: "a", Body: []byte{}} }},
		{"binary body", func() *broker.Message { return &broker.Message{ID: "a", Body: []byte{0x1f, 0x8b, 0, 0xff}} }},
		{"invalid utf-8", func() *broker.Message { return &broker.Message{ID: "a", Body: []byte("caf\xe9")} }},
		{"control char", func() *broker.Message { return &broker.Message{ID: "a", Body: []byte("a\x01b")} }},
		{"text with newlines", func() *broker.Message {
			return &broker.Message{ID: "a", Body: []byte("line1\r\nline2\t\u00e9\U0001F600")}
		}},
		{"empty maps", func() *broker.Message {
			return &broker.Message{ID: "a", Headers: map[string]any{}, Attributes: map[string]broker.Attribute{}, SystemAttributes: map[string]string{}}
		}},
		{"empty death", func() *broker.Message { return &broker.Message{ID: "a", Death: &broker.Death{}} }},
		{"sqs", func() *broker.Message {
			return &broker.Message{ID: "5fea7756-0ea4-451a-a703-a558b933e274", System: broker.SQS, Queue: "billing-dlq",
				Body:             []byte("hello"),
				SystemAttributes: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:billing", "SentTimestamp": "1700000000000"},
				Attributes:       map[string]broker.Attribute{"Bin": {DataType: "Binary.gz", BinaryValue: []byte{1, 2}}},
				Death:            &broker.Death{Reason: "max_receives", Queue: "billing", Count: 1}, DeliveryCount: 5}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m()
			got := roundTrip(t, m)
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip changed the message (-want +got):\n%s", testdiff.Diff(m, got))
			}
		})
	}
}

func TestRoundTripFillsMissingID(t *testing.T) {
	m := &broker.Message{Body: []byte("x"), Properties: broker.Properties{AppID: "a"}}
	got := roundTrip(t, m)
	if want := broker.Fingerprint(m); got.ID != want {
		t.Errorf("ID = %q, want the fingerprint %q", got.ID, want)
	}
}

func TestBodyEncoding(t *testing.T) {
	text, _ := Marshal(&broker.Message{ID: "a", Body: []byte(`{"a":1}`)}, "", time.Time{})
	if !strings.Contains(string(text), `"body":"{\"a\":1}"`) || strings.Contains(string(text), "body_encoding") {
		t.Errorf("text body not stored as text: %s", text)
	}
	bin, _ := Marshal(&broker.Message{ID: "a", Body: []byte{0, 1}}, "", time.Time{})
	if !strings.Contains(string(bin), `"body":"AAE=","body_encoding":"base64"`) {
		t.Errorf("binary body not stored as base64: %s", bin)
	}
}

func TestLocalTimesBecomeUTC(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	m := &broker.Message{ID: "a", Timestamp: t0.In(loc), Headers: map[string]any{"t": t0.In(loc)}}
	got := roundTrip(t, m)
	if got.Timestamp != t0 || got.Headers["t"] != t0 {
		t.Errorf("times: got %v and %v, want %v in UTC", got.Timestamp, got.Headers["t"], t0)
	}
}

func TestUnsupportedHeaderType(t *testing.T) {
	_, err := Marshal(&broker.Message{ID: "a", Headers: map[string]any{"c": complex(1, 2)}}, "", time.Time{})
	if err == nil || !strings.Contains(err.Error(), "complex128") {
		t.Errorf("err = %v, want a refusal naming the type", err)
	}
}

func TestNamedTableTypes(t *testing.T) {
	type table map[string]any
	got := roundTrip(t, &broker.Message{ID: "a", Headers: map[string]any{"t": table{"a": int32(1)}, "i": 7}})
	want := map[string]any{"t": map[string]any{"a": int32(1)}, "i": int64(7)}
	if !reflect.DeepEqual(got.Headers, want) {
		t.Errorf("headers (-want +got):\n%s", testdiff.Diff(want, got.Headers))
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"unknown type", `{"id":"a","headers":{"h":{"type":"int128","value":1}}}`, `unknown header type "int128"`},
		{"out of range", `{"id":"a","headers":{"h":{"type":"int8","value":300}}}`, "int8 header value 300"},
		{"no value", `{"id":"a","headers":{"h":{"type":"string"}}}`, "without \"value\""},
		{"bad base64", `{"id":"a","body":"!!","body_encoding":"base64"}`, "body"},
		{"bad encoding", `{"id":"a","body":"x","body_encoding":"hex"}`, `unknown body_encoding "hex"`},
		{"decimal", `{"id":"a","headers":{"h":{"type":"decimal","value":{"scale":1}}}}`, "decimal needs"},
		{"attribute", `{"id":"a","attributes":{"x":{"string_value":"v"}}}`, "no data_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unmarshal([]byte(tt.line))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDeepNestingRefused(t *testing.T) {
	var v any = "leaf"
	for range broker.MaxTypedDepth + 2 {
		v = []any{v}
	}
	if _, err := Marshal(&broker.Message{ID: "a", Headers: map[string]any{"h": v}}, "", time.Time{}); err == nil {
		t.Error("Marshal accepted headers nested beyond the limit")
	}
	line := `{"id":"a","headers":{"h":` + strings.Repeat(`{"type":"array","value":[`, broker.MaxTypedDepth+2) + `{"type":"void"}` + strings.Repeat(`]}`, broker.MaxTypedDepth+2) + `}}`
	if _, err := Unmarshal([]byte(line)); err == nil {
		t.Error("Unmarshal accepted headers nested beyond the limit")
	}
}

// TestPropertiesFormat pins the names and values of the "properties" object
// that doc.go documents: they are the archive format, whatever
// broker.Properties becomes.
func TestPropertiesFormat(t *testing.T) {
	m := fullMessage()
	m.Properties.Timestamp = time.Date(2025, 3, 14, 10, 30, 1, 0, time.FixedZone("CET", 3600))
	line, err := Marshal(m, "amqp://localhost", t0)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"content_type": "application/json", "content_encoding": "utf-8",
		"delivery_mode": 2.0, "priority": 9.0, "correlation_id": "c", "reply_to": "r",
		"expiration": "60000", "message_id": "m-1", "timestamp": "2025-03-14T09:30:01Z",
		"type": "T", "user_id": "u", "app_id": "a",
	}
	if d := testdiff.Diff(want, rec.Properties); d != "" {
		t.Errorf("properties written (-want +got):\n%s", d)
	}
}

// extremeTimes are AMQP timestamps (seconds) a message may legally carry:
// the epoch, just before it, 2^62 and the largest int64. encoding/json's
// time.Time refuses years past 9999, and archiving such a message failed.
var extremeTimes = []int64{0, -1, 1 << 62, math.MaxInt64}

// extremeMessage carries sec in every time of a message.
func extremeMessage(sec int64) *broker.Message {
	ts := time.Unix(sec, 0).UTC()
	m := fullMessage()
	m.ID = "ts-" + strconv.FormatInt(sec, 10)
	m.Properties.MessageID = m.ID
	delete(m.Attributes, "e") // Clone makes an empty binary value nil
	m.Timestamp, m.Properties.Timestamp = ts, ts
	m.Headers = map[string]any{"t": ts, "nested": map[string]any{"t": ts}}
	m.Death.First, m.Death.Last = ts, ts
	for i := range m.Death.History {
		m.Death.History[i].Time = ts
	}
	return m
}

// TestExtremeTimestampsRoundTrip: a message whose times lie anywhere in
// int64 seconds is archived and read back exactly, by Unmarshal, through
// an archive file (the fast reader and encoding/json), and in the queue
// listing; within the years 0 to 9999 the archive keeps the RFC 3339 form.
func TestExtremeTimestampsRoundTrip(t *testing.T) {
	var msgs []*broker.Message
	for _, sec := range extremeTimes {
		m := extremeMessage(sec)
		msgs = append(msgs, m)
		line, err := Marshal(m, "amqp://h/", t0)
		if err != nil {
			t.Fatalf("archive a message with timestamp %d: %v", sec, err)
		}
		if rfc := time.Unix(sec, 0).UTC().Format(time.RFC3339); sec < 1<<40 && !bytes.Contains(line, []byte(`"timestamp":"`+rfc+`"`)) {
			t.Errorf("timestamp %d is not written as %s: %s", sec, rfc, line)
		}
		if got := roundTrip(t, m); !reflect.DeepEqual(got, m) {
			t.Errorf("timestamp %d: round trip changed the message (-want +got):\n%s", sec, testdiff.Diff(m, got))
		}
	}
	path := filepath.Join(t.TempDir(), "extreme.jsonl")
	a, err := Create(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []broker.Outgoing
	for _, m := range msgs {
		out = append(out, broker.Outgoing{Message: m})
	}
	if errs, err := a.Publish(context.Background(), out); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("archive the messages: %v %v", err, errs)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []*broker.Message
	if _, err := r.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error {
		got = append(got, m.Clone())
		return nil
	}); err != nil {
		t.Fatalf("read the archive back: %v", err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("read %d messages, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		got[i].Position, msgs[i].Position = "", ""
		if !reflect.DeepEqual(got[i], msgs[i]) {
			t.Errorf("message %d read back differs (-want +got):\n%s", i, testdiff.Diff(msgs[i], got[i]))
		}
	}
	qs, err := r.Queues(context.Background())
	if err != nil || len(qs) != 1 || qs[0].Depth != int64(len(msgs)) {
		t.Errorf("queue listing of the archive: %+v, %v", qs, err)
	}
}
