package topology

import (
	"bytes"
	"context"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
)

// ExportOptions narrow an export.
type ExportOptions struct {
	// Prefix keeps only objects whose names start with it (policies: also
	// those whose pattern matches a kept queue).
	Prefix string
}

// Export reads what the broker has and writes it as a spec in the low-level
// form (exchanges, queues, bindings, policies; SQS queues with their
// attributes). Planning the result against the same broker shows no
// changes.
func Export(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error) {
	t, ok := systemOf(b.System())
	if !ok {
		return nil, unsupported("export", b)
	}
	return t.Export(ctx, b, opts)
}

func boolp(b bool) *bool { return &b }

// MarshalSpec writes a spec as YAML with a header comment.
func MarshalSpec(s *Spec, header string) ([]byte, error) {
	var buf bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if l != "" {
			buf.WriteString("# " + l + "\n")
		}
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
