package inspect

import (
	"encoding/base64"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/broker"
)

// envelopePayload names the field of each envelope that holds the payload.
var envelopePayload = map[string]string{
	"masstransit": "message",
	"lambda":      "requestPayload",
	"sns":         "Message",
	"nservicebus": "Body",
}

// unwrapEnvelope splits a parsed envelope body into the payload inside it
// and the envelope's other fields. The payload of SNS is a string, JSON
// when it parses; that of NServiceBus on SQS is base64 (empty when the
// body is in S3).
func unwrapEnvelope(kind string, body any) (inner any, env map[string]any, ok bool) {
	obj, isObj := body.(map[string]any)
	field := envelopePayload[kind]
	if !isObj || field == "" {
		return nil, nil, false
	}
	v, present := obj[field]
	if !present {
		return nil, nil, false
	}
	switch kind {
	case "sns":
		s, isStr := v.(string)
		if !isStr {
			return nil, nil, false
		}
		v = textOrJSON([]byte(s))
	case "nservicebus":
		s, _ := v.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, nil, false
		}
		v = textOrJSON(b)
	}
	env = maps.Clone(obj)
	delete(env, field)
	return v, env, true
}

// textOrJSON is b parsed when it is JSON, else as text when it is UTF-8,
// else in base64.
func textOrJSON(b []byte) any {
	if v, ok := parseJSON(b); ok {
		return v
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// failureDoc is the failure record as document values, nil without one.
func failureDoc(f *Failure) any {
	if f == nil {
		return nil
	}
	d := map[string]any{
		"framework":      f.Framework,
		"exception_type": f.ExceptionType,
		"message":        f.Message,
		"stack":          f.Stack,
		"attempts":       int(f.Attempts),
		"consumer":       f.Consumer,
		"message_type":   f.MessageType,
		"id":             f.ID,
		"envelope":       f.Envelope,
		"origin":         nil,
		"failed_at":      nil,
	}
	if !f.FailedAt.IsZero() {
		d["failed_at"] = f.FailedAt.UTC().Format(time.RFC3339Nano)
	}
	if o := f.Origin; o != nil {
		d["origin"] = map[string]any{"exchange": o.Exchange, "routing_key": o.RoutingKey, "queue": o.Queue, "from": o.From}
	}
	return d
}

// innerBody is the raw payload inside m's envelope, or m's body (inflated)
// when it is none.
func innerBody(m *broker.Message) []byte {
	var in failureInput
	in.init(m)
	f := &in.body
	switch in.envelope {
	case "masstransit":
		return f[bkMessage]
	case "nservicebus":
		if d, err := base64.StdEncoding.DecodeString(rawText(f[bkBodyNSB])); err == nil {
			return d
		}
	case "lambda":
		if f[bkRequestPayload] != nil {
			return f[bkRequestPayload]
		}
	case "sns":
		return []byte(rawText(f[bkMessageSNS]))
	}
	return jsonBody(m)
}

// DecodePayload is Decode of the payload inside m's envelope (MassTransit,
// SNS, a Lambda on-failure record, NServiceBus on SQS), or of m's body
// when it is none: what a person wants to see of a message.
func DecodePayload(m *broker.Message) Decoded {
	d := Decode(m)
	if d.Kind != BodyJSON {
		return d
	}
	p := innerBody(m)
	if len(p) == len(d.Bytes) {
		return d
	}
	c := *m
	c.Body, c.Properties.ContentEncoding = p, ""
	return Decode(&c)
}

// Unwrap returns a copy of m whose body is the payload inside its envelope,
// for the envelopes whose payload is the original message on its own: a
// Lambda on-failure record (requestPayload, the event the function was
// invoked with) and an SNS notification (Message, as raw delivery would
// have sent it). ok is false, and m is returned, for any other message:
// MassTransit and NServiceBus consumers read their envelopes.
func Unwrap(m *broker.Message) (*broker.Message, bool) {
	var in failureInput
	in.init(m)
	var p []byte
	switch in.envelope {
	case "lambda":
		p = in.body[bkRequestPayload]
	case "sns":
		p = []byte(rawText(in.body[bkMessageSNS]))
	}
	if p == nil {
		return m, false
	}
	c := *m
	c.Body = append([]byte(nil), p...)
	c.Properties.ContentEncoding = ""
	return &c, true
}
