package inspect

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"

	"github.com/dlq-tools/dlq/broker"
)

func FuzzCompile(f *testing.F) {
	for _, s := range []string{`.reason == "rejected"`, `.body | }`, `"\q"`, `.a[`, `select(.x) | .y`, `def f: .; f`, `'x'`, `.[] as [$a] | $a`, "\x00", `"\(`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		q, err := Compile(expr)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error for %q: %q", expr, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		// Evaluation may fail but must not panic or hang.
		q.Eval(ctx, DocumentAt(rabbitMsg(), t0))
	})
}

func FuzzDocument(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"x"},"a":[1,2]}`), "", "x-exception-message")
	f.Add([]byte(`{"reason":"\u00e9\"","re\u0061son":1}`), "gzip", "MT-Fault-Message")
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0}, "", "")
	f.Add([]byte(`[{"a":`), "deflate", "NServiceBus.ExceptionInfo.Message")
	f.Add([]byte("\xff\xfe"), "identity", "x")
	f.Fuzz(func(t *testing.T, body []byte, enc, header string) {
		m := &broker.Message{
			ID: "x", Body: body,
			Properties: broker.Properties{ContentEncoding: enc},
			Headers:    map[string]any{header: body, "n": int64(len(body))},
			Attributes: map[string]broker.Attribute{"error-" + header: {DataType: "String", StringValue: string(body)}},
		}
		doc := DocumentAt(m, t0)
		if _, err := gojq.Marshal(doc); err != nil {
			t.Fatalf("document not a jq value: %v", err)
		}
		r := Reason(m)
		if strings.ContainsAny(r, "\n\r") || len([]rune(r)) > MaxReasonLen {
			t.Fatalf("reason not one short line: %q", r)
		}
		d := Decode(m)
		_ = d.Pretty(true)
		if p := d.Preview(40); len([]rune(p)) > 40 {
			t.Fatalf("preview too long: %q", p)
		}
		if d.Kind == BodyJSON && !json.Valid(d.Bytes) {
			t.Fatalf("classified as JSON but invalid: %q", d.Bytes)
		}
		// The scanner agrees with encoding/json on valid objects without
		// duplicate keys.
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) == nil && len(obj) > 0 && !strings.Contains(string(body), "\\") {
			for k, v := range obj {
				raw := jsonField(body, []string{k})
				if raw == nil || rawText(raw) != rawText(v) {
					if strings.Count(string(body), `"`+k+`"`) == 1 {
						t.Fatalf("scanner disagrees on %q: %q vs %q", k, raw, v)
					}
				}
			}
		}
	})
}

// extremeTimes are Unix seconds at the ends of what a message can carry:
// zero, negative, an AMQP timestamp of 2^62, the int64 limits.
var extremeTimes = []int64{0, -1, 1 << 62, -1 << 62, math.MaxInt64, math.MinInt64, 1<<63 - 2, 253402300799, -62135596800}

// FuzzStats counts two messages with fuzzed times, sizes and counts under
// every grouping: the aggregation, its trend and its groups never panic,
// and counts and shares stay sane.
func FuzzStats(f *testing.F) {
	for _, a := range extremeTimes {
		for _, b := range []int64{0, 1 << 62, math.MinInt64, 1772366400} {
			f.Add(a, b, int64(math.MaxInt64), uint16(0))
		}
	}
	f.Add(int64(1772366400), int64(1772366401), int64(-1), uint16(1<<15))
	f.Fuzz(func(t *testing.T, ta, tb, count int64, size uint16) {
		msg := func(id string, sec int64, first bool) *broker.Message {
			m := &broker.Message{ID: id, Body: make([]byte, size), Timestamp: time.Unix(sec, 0),
				Headers: map[string]any{"x-exception-message": "Customer cus_" + id + " not found", RedriveHeader: map[string]any{"count": count}},
				Death:   &broker.Death{Reason: "rejected", Queue: "orders", Count: count, Last: time.Unix(sec, 0)}}
			if first {
				m.Death.First = time.Unix(sec, 0)
			}
			return m
		}
		msgs := []*broker.Message{msg("1", ta, true), msg("2", tb, false), msg("3", ta, false), {ID: "4"}}
		for _, spec := range []string{"reason", "age,day,hour", "source,redrives,exchange,routing-key"} {
			gs, err := ParseGroupBy(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, now := range []time.Time{t0, {}} {
				s := NewStats("orders.dlq", StatsOptions{GroupBy: gs, Now: now, Examples: 1, MaxGroups: 2})
				for _, m := range msgs {
					if err := s.Add(context.Background(), m); err != nil {
						t.Fatal(err)
					}
				}
				res := s.Result()
				if _, err := json.Marshal(res); err != nil {
					t.Fatalf("%s: result cannot be written as JSON: %v", spec, err)
				}
				var sum int64
				for _, g := range res.Groups {
					sum += g.Count
					if g.Share < 0 || g.Share > 1 {
						t.Fatalf("%s: share %v", spec, g.Share)
					}
					var trend int64
					for _, c := range g.Trend {
						if c < 0 {
							t.Fatalf("%s: negative trend bucket %v", spec, g.Trend)
						}
						trend += c
					}
					_ = Sparkline(g.Trend)
				}
				if sum != int64(len(msgs)) || res.Total != int64(len(msgs)) {
					t.Fatalf("%s: groups count %d of %d messages", spec, sum, res.Total)
				}
				if _, _, err := GroupMessages(context.Background(), spec, msgs, now); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// FuzzFailureOf decodes any body and any value of a framework's headers and
// attributes: never a panic, a reason of one line, a document that
// marshals.
func FuzzFailureOf(f *testing.F) {
	f.Add([]byte(`{"messageType":["urn:message:A"],"message":{"a":1},"headers":{"MT-Fault-InputAddress":"rabbitmq://h/q"}}`), "MT-Fault-StackTrace", " ---> X: y\n", "ErrorMessage")
	f.Add([]byte(`{"Headers":{"NServiceBus.FailedQ":"q@m"},"Body":"e30=","S3BodyKey":null}`), "NServiceBus.TimeOfFailure", "2014-11-11 02:26:58:000462 Z", "RETRY_ATTEMPTS")
	f.Add([]byte(`{"Type":"Notification","TopicArn":"t","Message":"{\"a\":1}"}`), "x-exception-stacktrace", "Caused by: \nCaused by: : ", "JavaType")
	f.Add([]byte(`{"requestContext":{"approximateInvokeCount":"x"},"requestPayload":1,"responsePayload":{"stackTrace":[1,"a",{}]}}`), "x-original-routingKey", "", "ERROR_CODE")
	f.Add([]byte(`{"messageType":1,"message":2,"Headers":"x","Body":"!!"}`), "MT-Fault-RetryCount", "99999999999999999999", "ErrorCode")
	f.Add([]byte(`{"dead_reason":"stock \"low\"","note":"x"}`), "x-exception-message", "Listener threw", "other")
	f.Add([]byte(`{"\u0054ype":"Notification","Top\u0069cArn":"t","Message":"m","error":"e"}`), "a", "b", "c")
	f.Add([]byte(`{"error":{"message":"card declined"}}`), "MT-Reason", "", "ErrorCode")
	f.Add([]byte(`{"queue_name":"q.XQ","actor_name":"a","message_id":"m","options":{"retries":"x","traceback":"Traceback (most recent call last):\nE: m\n\nDuring handling of the above exception"}}`), "task", "t", "shoryuken_class")
	f.Add([]byte(`{"displayName":["x"],"job":{},"data":null,"uuid":1}`), "lang", "py", "JavaType")
	f.Fuzz(func(t *testing.T, body []byte, header, value, attr string) {
		m := &broker.Message{Body: body, Headers: map[string]any{header: value},
			Attributes: map[string]broker.Attribute{attr: {DataType: "String", StringValue: value}}}
		_ = FailureOf(m)
		// Deferring the scan of a body that cannot be an envelope changes
		// neither the reason nor the record.
		var lazy, eager Failure
		rl, okl := reasonScan(m, &lazy, true)
		re, oke := reasonScan(m, &eager, false)
		if rl != re || okl != oke || !reflect.DeepEqual(lazy, eager) {
			t.Fatalf("deferred body scan: reason %q (%v) %+v, eager %q (%v) %+v", rl, okl, lazy, re, oke, eager)
		}
		if r := Reason(m); strings.ContainsAny(r, "\n\r") || len([]rune(r)) > MaxReasonLen {
			t.Fatalf("reason %q is not one line of at most %d runes", r, MaxReasonLen)
		}
		if _, err := json.Marshal(DocumentAt(m, t0)); err != nil {
			t.Fatalf("document: %v", err)
		}
		_ = innerBody(m)
		_, _ = Unwrap(m)
	})
}
