package tui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// The edit document is what the editor shows: the editable part of the
// message document that filters and transforms see (inspect.Document).
//
//	{
//	  "headers": { ...application headers, AMQP... },
//	  "attributes": { name: {"data_type": …, "string_value" or "binary_value": …} },
//	  "body": <the body: a JSON value when the body is JSON, else its text>
//	}
//
// A binary body is "body_base64" instead, as in the document. System
// headers (death records, delivery counts, dlq's own x-dlq-*) are locked:
// they are not in the document, and adding one is refused. Saving maps the
// document back with inspect.FromDocument, as a transform does.

// lockedHeader reports headers the user may not edit.
func lockedHeader(k string) bool {
	return broker.BrokerHeader(k) || strings.HasPrefix(k, "x-dlq-") || k == "x-delivery-count"
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

// editDocument builds the document to edit, pretty-printed. A JSON body is
// shown as written, keeping the order of its keys. The document offers the
// metadata the message keeps (attributes when attrs, else headers), and the
// other kind only when the message carries some.
func editDocument(m *broker.Message, attrs bool) (string, error) {
	doc := inspect.Document(m)
	var parts []string
	if !attrs || len(m.Headers) > 0 {
		h := map[string]any{}
		for k, v := range doc["headers"].(map[string]any) {
			if !lockedHeader(k) {
				h[k] = v
			}
		}
		hb, err := json.MarshalIndent(h, "  ", "  ")
		if err != nil {
			return "", fmt.Errorf("headers cannot be edited as JSON: %w", err)
		}
		parts = append(parts, `  "headers": `+string(hb))
	}
	if attrs || len(m.Attributes) > 0 {
		ab, err := json.MarshalIndent(doc["attributes"], "  ", "  ")
		if err != nil {
			return "", fmt.Errorf("attributes cannot be edited as JSON: %w", err)
		}
		parts = append(parts, `  "attributes": `+string(ab))
	}
	if b64, ok := doc["body_base64"]; ok {
		parts = append(parts, fmt.Sprintf(`  "body_base64": %q`, b64))
	} else if body := inspect.BodyBytes(m); len(body) > 0 && json.Valid(body) {
		var ind bytes.Buffer
		_ = json.Indent(&ind, bytes.TrimSpace(body), "  ", "  ")
		parts = append(parts, `  "body": `+ind.String())
	} else {
		s, err := jsonMarshal(doc["body"])
		if err != nil {
			return "", fmt.Errorf("the body cannot be edited as JSON: %w", err)
		}
		parts = append(parts, `  "body": `+string(s))
	}
	return "{\n" + strings.Join(parts, ",\n") + "\n}\n", nil
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
	before := inspect.Document(orig)
	after := maps.Clone(before)

	// Body.
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
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return nil, &editError{Msg: "\"body_base64\" is not valid base64: " + err.Error()}
		}
		after["body_base64"] = s
	case hasBody:
		after["body"] = rawBody
		delete(after, "body_base64")
	default:
		return nil, &editError{Msg: "the document has no \"body\""}
	}

	// Headers: those left out of the document are kept as they were.
	if raw, ok := doc["headers"]; ok {
		var h map[string]json.RawMessage
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, &editError{Msg: "\"headers\" must be an object"}
		}
		headers := map[string]any{}
		for k, v := range before["headers"].(map[string]any) {
			if lockedHeader(k) {
				headers[k] = v
			}
		}
		for k, v := range h {
			if lockedHeader(k) {
				return nil, &editError{Msg: fmt.Sprintf("header %q is a system header and is locked", k)}
			}
			headers[k] = v
		}
		after["headers"] = headers
	}
	if raw, ok := doc["attributes"]; ok {
		after["attributes"] = raw
	}
	out, err := inspect.FromDocument(orig, inspect.Canonical(before), after)
	if err != nil {
		return nil, &editError{Msg: err.Error()}
	}
	return out, nil
}
