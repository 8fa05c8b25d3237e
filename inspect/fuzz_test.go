package inspect

import (
	"context"
	"encoding/json"
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
