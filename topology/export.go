package topology

import (
	"bytes"
	"context"
	"fmt"
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
	switch b.System() {
	case broker.RabbitMQ:
		r, ok := b.(broker.RabbitTopologyReader)
		if !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "export", "this RabbitMQ connection cannot read topology: it needs the management API (%s)", broker.OptManagementURL)
		}
		t, err := r.ReadRabbitTopology(ctx)
		if err != nil {
			return nil, fmt.Errorf("read topology: %w", err)
		}
		return ExportRabbit(t, opts), nil
	case broker.SQS:
		r, ok := b.(broker.SQSTopologyReader)
		if !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "export", "this SQS connection cannot read queue attributes")
		}
		qs, err := r.ListSQSQueues(ctx, opts.Prefix)
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		return ExportSQS(qs), nil
	}
	return nil, broker.Errorf(broker.ErrUnsupported, "export", "topology needs a RabbitMQ or SQS %s, not %s", broker.OptBroker, b.System())
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
