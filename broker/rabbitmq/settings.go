package rabbitmq

import (
	"encoding/json"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// DefaultQuorumDeliveryLimit is the delivery limit RabbitMQ 4.x gives a
// quorum queue that sets none.
const DefaultQuorumDeliveryLimit = 20

type deadLetter struct {
	set        bool // a dead-letter exchange is configured (it may be "")
	exchange   string
	routingKey string
	hasKey     bool
	// limited says a quorum queue removes a message once it has been
	// returned more than limit times (dead-letters it, or drops it without
	// a dead-letter exchange); limitDefault that no argument or policy set
	// it (RabbitMQ 4.x's default).
	limited      bool
	limit        int64
	limitDefault bool
}

// deadLetterOf reads the dead-letter settings: queue arguments first
// (x-dead-letter-exchange, x-dead-letter-routing-key), then the effective
// policy (dead-letter-exchange, dead-letter-routing-key); RabbitMQ lets
// arguments win over policies for these keys.
//
// The delivery limit (quorum queues only) is the lower of x-delivery-limit
// and the policy's delivery-limit when both are set, on 3.x and 4.x alike.
// On 4.x a quorum queue without one has a limit of 20, and a negative one
// turns the limit off (and wins over a positive one); on 3.x a negative
// limit is below every count, so the first return removes the message.
// serverMajor 0 (unknown) reads like 3.x.
func deadLetterOf(args, policy map[string]any, quorum bool, serverMajor int) deadLetter {
	var d deadLetter
	if v, ok := args["x-dead-letter-exchange"]; ok {
		d.set, d.exchange = true, headerString(v)
	} else if v, ok := policy["dead-letter-exchange"]; ok {
		d.set, d.exchange = true, headerString(v)
	}
	if v, ok := args["x-dead-letter-routing-key"]; ok {
		d.routingKey, d.hasKey = headerString(v), true
	} else if v, ok := policy["dead-letter-routing-key"]; ok {
		d.routingKey, d.hasKey = headerString(v), true
	}
	if !quorum {
		return d
	}
	v4 := serverMajor >= 4
	an, aok := toInt64(args["x-delivery-limit"])
	pn, pok := toInt64(policy["delivery-limit"])
	var n int64
	switch {
	case !aok && !pok:
		if v4 {
			d.limited, d.limit, d.limitDefault = true, DefaultQuorumDeliveryLimit, true
		}
		return d
	case aok && pok && v4 && (an < 0 || pn < 0):
		n = max(an, pn)
	case aok && pok:
		n = min(an, pn)
	case aok:
		n = an
	default:
		n = pn
	}
	switch {
	case n >= 0:
		d.limited, d.limit = true, n
	case !v4:
		d.limited = true
	}
	return d
}

// messageTTL is the queue's message TTL: x-message-ttl or the policy's
// message-ttl (milliseconds), the lower when both are set, as RabbitMQ
// applies it; 0 when neither is.
func messageTTL(args, policy map[string]any) time.Duration {
	a, aok := toInt64(args["x-message-ttl"])
	p, pok := toInt64(policy["message-ttl"])
	ms := int64(0)
	switch {
	case aok && pok:
		ms = min(a, p)
	case aok:
		ms = a
	case pok:
		ms = p
	}
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// lengthLimit is a queue's length limit from its arguments and its policy
// (the lower of the two applies, as RabbitMQ applies it) and its overflow
// behaviour (the argument's, else the policy's, else drop-head).
func lengthLimit(args, policy map[string]any) (maxLen, maxBytes *int64, overflow string) {
	lower := func(arg, pol string) *int64 {
		a, aok := toInt64(args[arg])
		p, pok := toInt64(policy[pol])
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
	maxLen, maxBytes = lower("x-max-length", "max-length"), lower("x-max-length-bytes", "max-length-bytes")
	if maxLen == nil && maxBytes == nil {
		return nil, nil, ""
	}
	switch {
	case headerString(args["x-overflow"]) != "":
		overflow = headerString(args["x-overflow"])
	case headerString(policy["overflow"]) != "":
		overflow = headerString(policy["overflow"])
	default:
		overflow = broker.OverflowDropHead
	}
	return maxLen, maxBytes, overflow
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
