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
//  1. the failure record a framework or AWS service left (FailureOf):
//     "Type: message" of the root cause;
//  2. the JSON body's top-level dead_reason, error (a string, or an object's
//     message), or reason;
//  3. an SQS message attribute whose name contains "error" (names that
//     also contain "message" first, then by name);
//  4. the broker's death reason: rejected, expired, maxlen, delivery_limit,
//     max_receives.
//
// The result is one line of at most MaxReasonLen runes; "" when none exists.
func Reason(m *broker.Message) string {
	var f Failure
	r, _ := reasonOf(m, &f)
	return r
}

// reasonAndFailure is Reason and FailureOf from one read of the message.
func reasonAndFailure(m *broker.Message) (string, *Failure) {
	f := new(Failure)
	r, ok := reasonOf(m, f)
	if !ok {
		f = nil
	}
	return r, f
}

// reasonOf is Reason, filling f with the failure record; ok reports
// whether there is one.
func reasonOf(m *broker.Message, f *Failure) (string, bool) {
	// A body that cannot be an envelope is scanned only when the reason
	// comes from it.
	return reasonScan(m, f, true)
}

// reasonScan is reasonOf, with the body scan deferred when lazy (tests
// compare both).
func reasonScan(m *broker.Message, f *Failure, lazy bool) (string, bool) {
	in := failureInput{lazy: lazy}
	in.init(m)
	ok := in.decode(f)
	if ok {
		if r := f.Reason(); r != "" {
			return r, true
		}
	}
	in.scanBody()
	if in.isObj {
		for _, k := range [...]bodyKey{bkDeadReason, bkError, bkReason} {
			if r := reasonValue(in.body[k]); r != "" {
				return r, ok
			}
		}
	}
	if r := attributeReason(m.Attributes); r != "" {
		return r, ok
	}
	if m.Death != nil && m.Death.Reason != "" {
		return m.Death.Reason, ok
	}
	return "", ok
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
func headerText(h map[string]any, k string) string { return headerValueText(h[k]) }

// headerValueText is a header value as text (headerText).
func headerValueText(v any) string {
	switch v := v.(type) {
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
	// A message beats a code: ErrorMessage before ErrorCode.
	sort.Slice(names, func(i, j int) bool {
		mi, mj := strings.Contains(strings.ToLower(names[i]), "message"), strings.Contains(strings.ToLower(names[j]), "message")
		if mi != mj {
			return mi
		}
		return names[i] < names[j]
	})
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
