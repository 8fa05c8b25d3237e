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
	export, ok := exporters[b.System()]
	if !ok {
		return nil, broker.Errorf(broker.ErrUnsupported, "export", "topology needs a RabbitMQ or SQS %s, not %s", broker.OptBroker, b.System())
	}
	return export(ctx, b, opts)
}

// exporters read a broker's topology as a spec, one for each system; each
// lives in its broker's file (export_rabbitmq.go, export_sqs.go).
var exporters = map[broker.System]func(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error){
	broker.RabbitMQ: exportRabbitMQ,
	broker.SQS:      exportSQS,
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
