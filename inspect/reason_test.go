package inspect

import (
	"context"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func TestReason(t *testing.T) {
	death := &broker.Death{Reason: "expired", Queue: "q"}
	cases := []struct {
		name string
		m    broker.Message
		want string
	}{
		{"spring message", broker.Message{Headers: map[string]any{"x-exception-message": "Listener threw", "x-exception-stacktrace": "java.lang.X\n at y"}, Body: []byte(`{"error":"body"}`), Death: death}, "java.lang.X: Listener threw"},
		{"spring stacktrace only", broker.Message{Headers: map[string]any{"x-exception-stacktrace": []byte("org.springframework.X: boom\n\tat a.b")}}, "org.springframework.X: boom"},
		{"masstransit", broker.Message{Headers: map[string]any{"MT-Fault-ExceptionType": "System.TimeoutException", "MT-Fault-Message": "timed out"}}, "System.TimeoutException: timed out"},
		{"nservicebus", broker.Message{Headers: map[string]any{"NServiceBus.ExceptionInfo.ExceptionType": "System.Exception", "NServiceBus.ExceptionInfo.Message": "nope"}}, "System.Exception: nope"},
		{"body dead_reason first", broker.Message{Body: []byte(`{"reason":"r","error":"e","dead_reason":"d"}`), Death: death}, "d"},
		{"body error string", broker.Message{Body: []byte(`{"x":{"reason":"inner"},"error":"e"}`)}, "e"},
		{"body nested error.message", broker.Message{Body: []byte(`{"error":{"code":5,"message":"card declined"}}`)}, "card declined"},
		{"body error null falls to reason", broker.Message{Body: []byte(`{"error":null,"reason":"r"}`)}, "r"},
		{"body escaped key", broker.Message{Body: []byte(`{"re\u0061son":"esc"}`)}, "esc"},
		{"gzip body", broker.Message{Body: gz(t, `{"reason":"zipped"}`), Properties: broker.Properties{ContentEncoding: "gzip"}}, "zipped"},
		{"sqs error attribute", broker.Message{Attributes: map[string]broker.Attribute{"ErrorMessage": {DataType: "String", StringValue: "throttled"}, "other": {DataType: "String", StringValue: "x"}}, Death: &broker.Death{Reason: "max_receives"}}, "throttled"},
		{"death reason", broker.Message{Body: []byte(`{"order":1}`), Death: death}, "expired"},
		{"nothing", broker.Message{Body: []byte("text")}, ""},
		{"multi-line collapsed", broker.Message{Body: []byte(`{"error":"a\nb"}`)}, "a b"},
		{"framework header among others", broker.Message{Headers: map[string]any{"tenant": "t1", "x-retry": int64(2), "MT-Fault-Message": "timed out"}, Body: []byte(`{"error":"body"}`)}, "timed out"},
		{"other headers only", broker.Message{Headers: map[string]any{"tenant": "t1", "x-retry": int64(2)}, Body: []byte(`{"error":"body"}`)}, "body"},
		{"many headers, framework last", broker.Message{Headers: map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "x-exception-message": "many"}}, "many"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reason(&c.m); got != c.want {
				t.Errorf("Reason = %q, want %q", got, c.want)
			}
		})
	}
	long := &broker.Message{Headers: map[string]any{"x-exception-message": strings.Repeat("é", 500)}}
	if n := len([]rune(Reason(long))); n != MaxReasonLen {
		t.Errorf("long reason has %d runes, want %d", n, MaxReasonLen)
	}
}

func TestReasonFrom(t *testing.T) {
	m := &broker.Message{Headers: map[string]any{"err-code": "E42"}, Death: &broker.Death{Reason: "rejected"}}
	ctx := context.Background()
	r, err := ReasonFrom(MustCompile(`.headers["err-code"]`))(ctx, m)
	if err != nil || r != "E42" {
		t.Errorf("override = %q, %v", r, err)
	}
	r, err = ReasonFrom(MustCompile(`.headers.missing`))(ctx, m)
	if err != nil || r != "rejected" {
		t.Errorf("null override falls back: %q, %v", r, err)
	}
	r, _ = ReasonFrom(MustCompile(`{a:1}`))(ctx, m)
	if r != `{"a":1}` {
		t.Errorf("object reason = %q", r)
	}
	if _, err := ReasonFrom(MustCompile(`error("bad")`))(ctx, m); err == nil {
		t.Error("a failing reason expression must report its error")
	}
}
