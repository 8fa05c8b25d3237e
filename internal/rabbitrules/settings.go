package rabbitrules

import (
	"fmt"
	"strconv"

	"github.com/dlq-tools/dlq/broker"
)

// Sources is what decides a queue's settings: its declared arguments
// (x-message-ttl…), the definition of the policy that applies to it
// (message-ttl…), that of the operator policy that applies to it, its type
// and the server's version. The management API's
// effective_policy_definition already merges the two policies: pass it as
// Policy and leave OperatorPolicy nil.
type Sources struct {
	Args, Policy, OperatorPolicy map[string]any
	Quorum                       bool
	Version                      Version
}

// Settings are the settings that apply to a queue.
type Settings struct {
	// DeadLetterSet says a dead-letter exchange is configured (it may be
	// "", the default exchange).
	DeadLetterSet      bool
	DeadLetterExchange string
	// HasRoutingKey says a dead-letter routing key is configured.
	HasRoutingKey        bool
	DeadLetterRoutingKey string
	// MessageTTL is in milliseconds; nil when none applies.
	MessageTTL *int64
	// MaxLength and MaxLengthBytes are nil when none applies; Overflow is
	// set when one of them is (drop-head when nothing says otherwise).
	MaxLength, MaxLengthBytes *int64
	Overflow                  string
	// DeliveryLimitSet says an argument or a policy sets a delivery limit
	// (quorum queues only); DeliveryLimit is the value that results.
	DeliveryLimitSet bool
	DeliveryLimit    int64
	// Limited says a quorum queue removes a message once it has been
	// returned more than Limit times (dead-letters it, or drops it without
	// a dead-letter exchange); LimitDefault that it is the version's
	// default, set by nobody.
	Limited      bool
	Limit        int64
	LimitDefault bool
	// DelayedRetryType is a quorum queue's native delayed retry (4.3), ""
	// when none is set, and DelayedRetryMin and DelayedRetryMax its delays
	// in milliseconds (nil when not set). Each is the argument's, else the
	// policy's.
	DelayedRetryType                 string
	DelayedRetryMin, DelayedRetryMax *int64
}

// Effective computes a queue's settings as RabbitMQ does
// (rabbit_quorum_queue and rabbit_amqqueue_process, "args_policy_lookup"):
//   - message-ttl, max-length, max-length-bytes, expires: the lower of the
//     argument and the policy;
//   - delivery-limit: the lower too, except on 4.x where a negative one
//     (no limit) wins over a positive one; on 4.x a quorum queue that sets
//     none has a limit of 20; on 3.x a negative limit is below every count,
//     so a message's first return removes it;
//   - dead-letter-exchange and dead-letter-routing-key: the argument wins;
//   - overflow: on a classic queue the argument wins, on a quorum queue the
//     policy does.
//
// The operator policy first merges into the policy as rabbit_policy does:
// the lower value of the numeric keys, the operator's for the others.
// An unknown version reads like 3.x.
func Effective(s Sources) Settings {
	policy := MergeOperatorPolicy(s.Policy, s.OperatorPolicy)
	args := s.Args
	var e Settings
	if v, ok := args["x-dead-letter-exchange"]; ok {
		e.DeadLetterSet, e.DeadLetterExchange = true, String(v)
	} else if v, ok := policy["dead-letter-exchange"]; ok {
		e.DeadLetterSet, e.DeadLetterExchange = true, String(v)
	}
	if v, ok := args["x-dead-letter-routing-key"]; ok {
		e.HasRoutingKey, e.DeadLetterRoutingKey = true, String(v)
	} else if v, ok := policy["dead-letter-routing-key"]; ok {
		e.HasRoutingKey, e.DeadLetterRoutingKey = true, String(v)
	}
	lower := func(arg, pol string) *int64 {
		a, aok := Int(args[arg])
		p, pok := Int(policy[pol])
		switch {
		case aok && pok:
			v := min(a, p)
			return &v
		case aok:
			return &a
		case pok:
			return &p
		}
		return nil
	}
	e.MessageTTL = lower("x-message-ttl", "message-ttl")
	e.MaxLength, e.MaxLengthBytes = lower("x-max-length", "max-length"), lower("x-max-length-bytes", "max-length-bytes")
	if e.MaxLength != nil || e.MaxLengthBytes != nil {
		ao, po := String(args["x-overflow"]), String(policy["overflow"])
		first, second := ao, po
		if s.Quorum {
			first, second = po, ao
		}
		switch {
		case first != "":
			e.Overflow = first
		case second != "":
			e.Overflow = second
		default:
			e.Overflow = broker.OverflowDropHead
		}
	}
	if !s.Quorum {
		return e
	}
	argOr := func(arg, pol string) any {
		if v, ok := args[arg]; ok {
			return v
		}
		return policy[pol]
	}
	e.DelayedRetryType = String(argOr("x-delayed-retry-type", "delayed-retry-type"))
	if n, ok := Int(argOr("x-delayed-retry-min", "delayed-retry-min")); ok {
		e.DelayedRetryMin = &n
	}
	if n, ok := Int(argOr("x-delayed-retry-max", "delayed-retry-max")); ok {
		e.DelayedRetryMax = &n
	}
	v4 := s.Version.AtLeast(4, 0)
	an, aok := Int(args["x-delivery-limit"])
	pn, pok := Int(policy["delivery-limit"])
	var n int64
	switch {
	case !aok && !pok:
		if d, ok := DefaultLimit(s.Version); ok {
			e.Limited, e.Limit, e.LimitDefault = true, d, true
		}
		return e
	case aok && pok && v4 && (an < 0 || pn < 0):
		n = max(an, pn)
	case aok && pok:
		n = min(an, pn)
	case aok:
		n = an
	default:
		n = pn
	}
	e.DeliveryLimitSet, e.DeliveryLimit = true, n
	switch {
	case n >= 0:
		e.Limited, e.Limit = true, n
	case !v4:
		e.Limited = true
	}
	return e
}

// lowerWins lists the policy keys whose lower value wins when a policy and
// an operator policy both set them (rabbit_policy's merge).
var lowerWins = map[string]bool{
	"message-ttl": true, "max-length": true, "max-length-bytes": true, "expires": true,
	"delivery-limit": true, "max-in-memory-length": true, "max-in-memory-bytes": true,
}

// MergeOperatorPolicy is the definition that applies when a policy and an
// operator policy both match a queue: every key of either; where both set
// a key, the lower for the numeric limits and the operator's otherwise.
// It returns policy itself when op is empty.
func MergeOperatorPolicy(policy, op map[string]any) map[string]any {
	if len(op) == 0 {
		return policy
	}
	out := make(map[string]any, len(policy)+len(op))
	for k, v := range policy {
		out[k] = v
	}
	for k, ov := range op {
		pv, ok := out[k]
		if !ok || !lowerWins[k] {
			out[k] = ov
			continue
		}
		a, aok := Int(pv)
		b, bok := Int(ov)
		switch {
		case aok && bok:
			out[k] = min(a, b)
		case bok:
			out[k] = b
		}
	}
	return out
}

// Int reads an integer header, argument or policy value: any number
// broker.Int64 reads, or a string of decimal digits (a spec that quoted its
// number, a header a client wrote as text).
func Int(v any) (int64, bool) {
	if s, ok := v.(string); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	return broker.Int64(v)
}

// String reads a string argument or policy value ([]byte as a string);
// other values are printed; nil is "".
func String(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}
