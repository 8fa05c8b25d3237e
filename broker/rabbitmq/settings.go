package rabbitmq

import (
	"encoding/json"

	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// DefaultQuorumDeliveryLimit is the delivery limit RabbitMQ 4.x gives a
// quorum queue that sets none.
const DefaultQuorumDeliveryLimit = rabbitrules.DefaultDeliveryLimit

// deadLetter is what applies to a queue from its arguments, its effective
// policy (the management API's effective_policy_definition, which merges
// the policy and the operator policy) and the server's defaults.
type deadLetter = rabbitrules.Settings

// settingsOf reads a queue's settings by RabbitMQ's rules
// (rabbitrules.Effective). Only the server's major version matters to
// them; serverMajor 0 (unknown) reads like 3.x.
func settingsOf(args, policy map[string]any, quorum bool, serverMajor int) deadLetter {
	return rabbitrules.Effective(rabbitrules.Sources{Args: args, Policy: policy, Quorum: quorum,
		Version: rabbitrules.Version{Major: serverMajor, Known: serverMajor > 0}})
}

// normalizeJSON turns the json.Number values of a decoded management answer
// into int64 (or float64) so that arguments print as the user declared them.
func normalizeJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = normalizeJSONValue(v)
	}
	return out
}

func normalizeJSONValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		return normalizeJSON(x)
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = normalizeJSONValue(e)
		}
		return a
	}
	return v
}
