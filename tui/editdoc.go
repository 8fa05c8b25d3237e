package tui

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// The edit document is what the editor shows: the message's editable parts
// as one JSON object.
//
//	{
//	  "headers": { ...application headers, AMQP... },
//	  "attributes": { ...SQS message attributes (string values)... },
//	  "body": <the body: a JSON value when the body is JSON, else a string>
//	}
//
// A binary body is "body_base64" instead. System headers (death records,
// delivery counts, dlq's own x-dlq-*) are locked: they are not in the
// document, and adding one is refused.

// lockedHeader reports headers the user may not edit.
func lockedHeader(k string) bool {
	return broker.IsDeathHeader(k) || strings.HasPrefix(k, "x-dlq-") || k == "x-delivery-count" ||
		k == "x-death" || strings.HasPrefix(k, "x-rabbitmq-") || k == "x-stream-offset"
}

func jsonMarshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// bodyForEdit returns the body to edit (gzip undone) and whether it was
// gzipped, so that saving can compress it again.
func bodyForEdit(m *broker.Message) ([]byte, bool) {
	if strings.EqualFold(m.Properties.ContentEncoding, "gzip") {
		if zr, err := gzip.NewReader(bytes.NewReader(m.Body)); err == nil {
			if b, err := io.ReadAll(io.LimitReader(zr, 64<<20)); err == nil {
				return b, true
			}
		}
	}
	return m.Body, false
}

// headerJSON converts a header value to something JSON shows faithfully.
func headerJSON(v any) any {
	switch x := v.(type) {
	case []byte:
		if isText(x) {
			return string(x)
		}
		return "base64:" + base64.StdEncoding.EncodeToString(x)
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			o[k] = headerJSON(e)
		}
		return o
	case []any:
		o := make([]any, len(x))
		for i, e := range x {
			o[i] = headerJSON(e)
		}
		return o
	case broker.Decimal:
		return float64(x.Value) * math.Pow10(-int(x.Scale))
	}
	return v
}

// editDocument builds the document to edit, pretty-printed.
func editDocument(m *broker.Message) (string, error) {
	var b strings.Builder
	b.WriteString("{\n")
	var parts []string
	if m.System != broker.SQS || len(m.Headers) > 0 {
		h := map[string]any{}
		for k, v := range m.Headers {
			if !lockedHeader(k) {
				h[k] = headerJSON(v)
			}
		}
		hb, err := json.MarshalIndent(h, "  ", "  ")
		if err != nil {
			return "", fmt.Errorf("headers cannot be edited as JSON: %w", err)
		}
		parts = append(parts, `  "headers": `+string(hb))
	}
	if len(m.Attributes) > 0 || m.System == broker.SQS {
		a := map[string]string{}
		for k, v := range m.Attributes {
			if v.BinaryValue == nil {
				a[k] = v.StringValue
			}
		}
		ab, _ := json.MarshalIndent(a, "  ", "  ")
		parts = append(parts, `  "attributes": `+string(ab))
	}
	body, _ := bodyForEdit(m)
	switch {
	case len(body) > 0 && json.Valid(body):
		var ind bytes.Buffer
		_ = json.Indent(&ind, body, "  ", "  ")
		parts = append(parts, `  "body": `+ind.String())
	case isText(body):
		s, _ := jsonMarshal(string(body))
		parts = append(parts, `  "body": `+string(s))
	default:
		parts = append(parts, `  "body_base64": "`+base64.StdEncoding.EncodeToString(body)+`"`)
	}
	b.WriteString(strings.Join(parts, ",\n"))
	b.WriteString("\n}\n")
	return b.String(), nil
}

// editError is a validation failure with where it is.
type editError struct {
	Line, Col int
	Msg       string
}

func (e *editError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	}
	return e.Msg
}

func position(text string, off int64) (int, int) {
	off = max(0, min(off, int64(len(text))))
	before := text[:off]
	line := strings.Count(before, "\n") + 1
	col := int(off) - strings.LastIndexByte(before, '\n')
	return line, col
}

// applyEdit validates the edited document and returns the message to
// publish. Unchanged headers keep their AMQP types; properties, death
// metadata and system attributes are carried over untouched.
func applyEdit(orig *broker.Message, text string) (*broker.Message, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var doc map[string]json.RawMessage
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			l, c := position(text, se.Offset-1)
			return nil, &editError{Line: l, Col: c, Msg: "invalid JSON: " + se.Error()}
		case errors.As(err, &te):
			return nil, &editError{Msg: "the document must be a JSON object with \"headers\" and \"body\""}
		case errors.Is(err, io.EOF):
			return nil, &editError{Msg: "the document is empty"}
		}
		return nil, &editError{Msg: "invalid JSON: " + err.Error()}
	}
	if dec.More() {
		l, c := position(text, dec.InputOffset())
		return nil, &editError{Line: l, Col: c, Msg: "unexpected text after the document"}
	}
	for k := range doc {
		if !slices.Contains([]string{"headers", "attributes", "body", "body_base64"}, k) {
			return nil, &editError{Msg: fmt.Sprintf("unknown field %q: only \"headers\", \"attributes\" and \"body\" can be edited", k)}
		}
	}
	out := orig.Clone()

	// Body.
	origBody, gz := bodyForEdit(orig)
	var newBody []byte
	rawBody, hasBody := doc["body"]
	b64, hasB64 := doc["body_base64"]
	switch {
	case hasBody && hasB64:
		return nil, &editError{Msg: "give either \"body\" or \"body_base64\", not both"}
	case hasB64:
		var s string
		if err := json.Unmarshal(b64, &s); err != nil {
			return nil, &editError{Msg: "\"body_base64\" must be a string"}
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, &editError{Msg: "\"body_base64\" is not valid base64: " + err.Error()}
		}
		newBody = b
	case hasBody:
		trimmed := bytes.TrimSpace(rawBody)
		if json.Valid(origBody) && len(origBody) > 0 {
			// A JSON body stays JSON; keep the original bytes when the
			// value did not change.
			if jsonEqual(trimmed, origBody) {
				newBody = origBody
			} else {
				var c bytes.Buffer
				if err := json.Compact(&c, trimmed); err != nil {
					return nil, &editError{Msg: "body: " + err.Error()}
				}
				newBody = c.Bytes()
			}
		} else {
			var s string
			if err := json.Unmarshal(trimmed, &s); err != nil {
				// A text body edited into JSON: publish the JSON.
				var c bytes.Buffer
				if err := json.Compact(&c, trimmed); err != nil {
					return nil, &editError{Msg: "body: " + err.Error()}
				}
				newBody = c.Bytes()
			} else {
				newBody = []byte(s)
			}
		}
	default:
		return nil, &editError{Msg: "the document has no \"body\""}
	}
	if gz && !bytes.Equal(newBody, origBody) {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(newBody)
		_ = zw.Close()
		out.Body = zb.Bytes()
	} else if !bytes.Equal(newBody, origBody) {
		out.Body = newBody
	}

	// Headers.
	if raw, ok := doc["headers"]; ok {
		var h map[string]json.RawMessage
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, &editError{Msg: "\"headers\" must be an object"}
		}
		headers := map[string]any{}
		for k, v := range orig.Headers {
			if lockedHeader(k) {
				headers[k] = v
			}
		}
		for k, rv := range h {
			if lockedHeader(k) {
				return nil, &editError{Msg: fmt.Sprintf("header %q is a system header and is locked", k)}
			}
			if ov, ok := orig.Headers[k]; ok {
				if cur, err := jsonMarshal(headerJSON(ov)); err == nil && jsonEqual(rv, cur) {
					headers[k] = ov // unchanged: keep its AMQP type
					continue
				}
			}
			v, err := headerValue(rv)
			if err != nil {
				return nil, &editError{Msg: fmt.Sprintf("header %q: %v", k, err)}
			}
			headers[k] = v
		}
		if len(headers) == 0 {
			headers = nil
		}
		out.Headers = headers
	} else if len(orig.Headers) > 0 {
		// Headers left out of the document are kept as they were.
		out.Headers = orig.Clone().Headers
	}

	// SQS attributes.
	if raw, ok := doc["attributes"]; ok {
		var a map[string]json.RawMessage
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, &editError{Msg: "\"attributes\" must be an object of strings"}
		}
		attrs := map[string]broker.Attribute{}
		for k, v := range orig.Attributes {
			if v.BinaryValue != nil {
				attrs[k] = v
			}
		}
		for k, rv := range a {
			var s string
			if err := json.Unmarshal(rv, &s); err != nil {
				var n json.Number
				d := json.NewDecoder(bytes.NewReader(rv))
				d.UseNumber()
				if d.Decode(&n) != nil {
					return nil, &editError{Msg: fmt.Sprintf("attribute %q must be a string or a number", k)}
				}
				s = n.String()
			}
			at := broker.Attribute{DataType: "String", StringValue: s}
			if ov, ok := orig.Attributes[k]; ok {
				at.DataType = ov.DataType
			}
			attrs[k] = at
		}
		if len(attrs) == 0 {
			attrs = nil
		}
		out.Attributes = attrs
	}
	return out, nil
}

// headerValue converts an edited JSON header value to an AMQP-typed value:
// integers become int64, other numbers float64, objects tables.
func headerValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return fromJSON(v), nil
}

func fromJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = fromJSON(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = fromJSON(e)
		}
		return x
	}
	return v
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
