package inspect

import (
	"bytes"
	"encoding/json"

	"github.com/dlq-tools/dlq/broker"
)

// EditEnvelopeHeaders edits the headers that NServiceBus on SQS keeps
// inside the body ({"Headers": {...}, "Body": "…base64…"}), where a redrive
// cannot reach them as message attributes. edit sees each header with its
// raw JSON value and returns the value to keep (nil drops the header).
// Every other field of the envelope, and every header kept unchanged, keeps
// its bytes; the envelope's fields may come out in another order. It
// returns false, and leaves m alone, when m carries no such envelope, its
// body is encoded (compressed), or no header changed.
func EditEnvelopeHeaders(m *broker.Message, edit func(key string, value json.RawMessage) json.RawMessage) bool {
	if m.Properties.ContentEncoding != "" || isGzip(m.Body) {
		return false
	}
	var in failureInput
	in.init(m)
	if in.envelope != "nservicebus" {
		return false
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(m.Body, &env) != nil {
		return false
	}
	raw, ok := env["Headers"]
	if !ok {
		return false
	}
	var headers map[string]json.RawMessage
	if json.Unmarshal(raw, &headers) != nil || headers == nil {
		return false
	}
	changed := false
	for k, v := range headers {
		nv := edit(k, v)
		switch {
		case nv == nil:
			delete(headers, k)
			changed = true
		case !bytes.Equal(nv, v):
			headers[k] = nv
			changed = true
		}
	}
	if !changed {
		return false
	}
	hb, err := marshalRaw(headers)
	if err != nil {
		return false
	}
	env["Headers"] = hb
	body, err := marshalRaw(env)
	if err != nil {
		return false
	}
	m.Body = body
	return true
}

// marshalRaw encodes v without escaping <, > and & (a header's text stays
// as the framework wrote it) and without a trailing newline.
func marshalRaw(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
