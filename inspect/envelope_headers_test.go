package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// Bodies that look like an NServiceBus envelope but are not one a redrive
// may rewrite stay byte for byte as they came.
func TestEditEnvelopeHeadersLeavesHostileBodiesAlone(t *testing.T) {
	drop := func(string, json.RawMessage) json.RawMessage { return nil }
	deep := strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000)
	for name, body := range map[string]string{
		"headers not an object": `{"Headers":"NServiceBus.ExceptionInfo.Message","Body":"eA=="}`,
		"headers null":          `{"Headers":null,"Body":"eA=="}`,
		"truncated":             `{"Headers":{"NServiceBus.FailedQ":"q@h"},"Body":"eA==`,
		"not an envelope":       `{"Headers":{"NServiceBus.FailedQ":"q@h"}}`,
		"deeply nested header":  `{"Headers":{"NServiceBus.FailedQ":` + deep + `},"Body":"eA=="}`,
		"not JSON":              "\x00\xff{\"Headers\"",
	} {
		t.Run(name, func(t *testing.T) {
			m := &broker.Message{Body: []byte(body)}
			changed := EditEnvelopeHeaders(m, drop)
			if name == "deeply nested header" {
				// A valid envelope: its failure header goes, whatever it holds.
				if !changed || bytes.Contains(m.Body, []byte("FailedQ")) {
					t.Errorf("changed %v: %.80s", changed, m.Body)
				}
				return
			}
			if changed || string(m.Body) != body {
				t.Errorf("changed %v, body %.80q; want it as it came", changed, m.Body)
			}
		})
	}
	gz := &broker.Message{Body: []byte(`{"Headers":{"NServiceBus.FailedQ":"q@h"},"Body":"eA=="}`)}
	gz.Properties.ContentEncoding = "gzip"
	if EditEnvelopeHeaders(gz, drop) {
		t.Error("an encoded body was rewritten")
	}
}
