package redrive

import (
	"context"
	"fmt"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// Evaluator runs a compiled jq query over a document; inspect.Query is one.
type Evaluator interface {
	Eval(ctx context.Context, doc any) ([]any, error)
}

// JQTransform builds a Transform from a jq query run over the document
// filters see (inspect.Document). The query must produce exactly one
// object; its body, body_base64, headers, properties and attributes become
// the message to publish (inspect.FromDocument). Values that did not change
// keep their original bytes and AMQP types. A result that cannot be mapped
// back faithfully refuses the message with the reason; nothing half-made is
// ever published.
func JQTransform(q Evaluator) Transform {
	return func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		doc := inspect.Document(m)
		// Keep a canonical copy: jq may share structure with its input.
		before := inspect.Canonical(doc)
		outs, err := q.Eval(ctx, doc)
		if err != nil {
			return nil, err
		}
		switch len(outs) {
		case 0:
			return nil, broker.Hintf("the transform produced no result: select messages with %s, not in %s", broker.OptFilter, broker.OptTransform)
		case 1:
		default:
			return nil, fmt.Errorf("the transform produced %d results: it must produce exactly one object", len(outs))
		}
		res, ok := outs[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the transform produced %s, not an object: update fields in place, e.g. `.body.retry = 0`", inspect.JSONKind(outs[0]))
		}
		return inspect.FromDocument(m, before, res)
	}
}
