package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// MaxReasonLen bounds a reason's length in runes; longer reasons are cut
// with an ellipsis so that they group and print on one line.
const MaxReasonLen = 200

// Reason returns the failure reason of m, from the first source that has
// one:
//
//  1. Spring AMQP: header x-exception-message, else the first line of
//     x-exception-stacktrace;
//  2. MassTransit: MT-Fault-ExceptionType and MT-Fault-Message;
//  3. NServiceBus: NServiceBus.ExceptionInfo.ExceptionType and
//     NServiceBus.ExceptionInfo.Message;
//  4. the JSON body's top-level dead_reason, error (a string, or an object's
//     message), or reason;
//  5. an SQS message attribute whose name contains "error" (the first by
//     name);
//  6. the broker's death reason: rejected, expired, maxlen, delivery_limit,
//     max_receives.
//
// The result is one line of at most MaxReasonLen runes; "" when none exists.
func Reason(m *broker.Message) string {
	if r := frameworkReason(m.Headers); r != "" {
		return r
	}
	if r := bodyReason(m); r != "" {
		return r
	}
	if r := attributeReason(m.Attributes); r != "" {
		return r
	}
	if m.Death != nil && m.Death.Reason != "" {
		return m.Death.Reason
	}
	return ""
}

// isFrameworkHeader reports whether frameworkReason reads header k.
func isFrameworkHeader(k string) bool {
	switch k {
	case "x-exception-message", "x-exception-stacktrace", "MT-Fault-ExceptionType", "MT-Fault-Message",
		"NServiceBus.ExceptionInfo.ExceptionType", "NServiceBus.ExceptionInfo.Message":
		return true
	}
	return false
}

func frameworkReason(h map[string]any) string {
	if len(h) == 0 {
		return ""
	}
	if len(h) <= 4 {
		// Cheaper than six look-ups when a message has a few headers.
		found := false
		for k := range h {
			if isFrameworkHeader(k) {
				found = true
				break
			}
		}
		if !found {
			return ""
		}
	}
	if r := headerText(h, "x-exception-message"); r != "" {
		return clean(r)
	}
	if st := headerText(h, "x-exception-stacktrace"); st != "" {
		first, _, _ := strings.Cut(strings.TrimSpace(st), "\n")
		return clean(first)
	}
	if r := typed(headerText(h, "MT-Fault-ExceptionType"), headerText(h, "MT-Fault-Message")); r != "" {
		return r
	}
	return typed(headerText(h, "NServiceBus.ExceptionInfo.ExceptionType"), headerText(h, "NServiceBus.ExceptionInfo.Message"))
}

func typed(typ, msg string) string {
	switch {
	case typ != "" && msg != "":
		return clean(typ + ": " + msg)
	case msg != "":
		return clean(msg)
	default:
		return clean(typ)
	}
}

// headerText returns a header as text when it is a string or byte string.
func headerText(h map[string]any, k string) string {
	switch v := h[k].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

var bodyReasonKeys = [...]string{"dead_reason", "error", "reason"}

func bodyReason(m *broker.Message) string {
	b := m.Body
	if m.Properties.ContentEncoding != "" || isGzip(b) {
		if in, _, err := inflate(strings.ToLower(m.Properties.ContentEncoding), b); err == nil {
			b = in
		}
	}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ""
	}
	var vals [len(bodyReasonKeys)][]byte
	found := 0
	objectFields(b, i, func(key []byte, esc bool, val []byte) bool {
		for j, k := range bodyReasonKeys {
			if vals[j] == nil && keyEquals(key, esc, k) {
				vals[j] = val
				found++
			}
		}
		return found < len(bodyReasonKeys)
	})
	for _, v := range vals {
		if r := reasonValue(v); r != "" {
			return r
		}
	}
	return ""
}

// reasonValue turns a body field into a reason: a string as it is, an
// object by its message (or its compact JSON), other values as JSON text.
func reasonValue(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case 'n', 'f': // null, false: no error
		return ""
	case '{':
		for _, k := range [...]string{"message", "msg", "reason", "error"} {
			if s := jsonField(v, []string{k}); s != nil {
				if r := reasonValue(s); r != "" {
					return r
				}
			}
		}
	}
	return clean(rawText(v))
}

func attributeReason(attrs map[string]broker.Attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var names []string
	for k := range attrs {
		if strings.Contains(strings.ToLower(k), "error") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if s := attrs[k].StringValue; s != "" {
			return clean(s)
		}
	}
	return ""
}

// clean makes a reason one trimmed line of at most MaxReasonLen runes.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxReasonLen && !strings.ContainsAny(s, "\n\r\t\x00") {
		return s
	}
	return oneLine(s, MaxReasonLen)
}

// ReasonFunc computes a message's failure reason.
type ReasonFunc func(ctx context.Context, m *broker.Message) (string, error)

// DefaultReason is Reason as a ReasonFunc.
func DefaultReason(_ context.Context, m *broker.Message) (string, error) { return Reason(m), nil }

// ReasonFrom returns a ReasonFunc that evaluates q (a reason jq expression
// override) over the message's document and uses its first output: strings
// as they are, other values as compact JSON. An empty or null result falls
// back to Reason.
func ReasonFrom(q *Query) ReasonFunc {
	if q == nil {
		return DefaultReason
	}
	return func(ctx context.Context, m *broker.Message) (string, error) {
		v, ok, err := q.First(ctx, Document(m))
		if err != nil {
			return "", err
		}
		if !ok || v == nil {
			return Reason(m), nil
		}
		s := clean(valueText(v))
		if s == "" {
			return Reason(m), nil
		}
		return s, nil
	}
}
