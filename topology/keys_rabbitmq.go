package topology

import "strings"

// isWildcardKey reports whether a routing key is a topic binding pattern
// (a `*` or `#` word): as the key a message is published with, it is
// literal text that only wildcard bindings match, and consumers see it.
func isWildcardKey(k string) bool {
	for _, w := range strings.Split(k, ".") {
		if w == "*" || w == "#" {
			return true
		}
	}
	return false
}

// concreteKey turns a binding pattern into a key the pattern matches:
// `#` words are dropped and `*` words become "retry"; a pattern of only
// `#` gives fallback.
func concreteKey(pattern, fallback string) string {
	var words []string
	for _, w := range strings.Split(pattern, ".") {
		switch w {
		case "#":
		case "*":
			words = append(words, "retry")
		default:
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return fallback
	}
	return strings.Join(words, ".")
}

// lintWildcardKeys finds a wildcard used where a message gets its routing
// key: a retry ladder's return key, a queue's dead-letter routing key.
func lintWildcardKeys(m *RabbitModel, effs map[string]effective, add addFunc) {
	for _, l := range m.Ladders {
		if isWildcardKey(l.ReturnRoutingKey) {
			add(SevWarning, "wildcard-routing-key", l.Pos, "retry ladder "+l.Name,
				"retry ladder `%s`: `return_routing_key` `%s` is a binding pattern, and retried messages would carry it as their key: use a concrete key such as `%s`",
				l.Name, l.ReturnRoutingKey, concreteKey(l.ReturnRoutingKey, l.Name))
		}
	}
	for _, q := range m.Queues {
		if strings.HasPrefix(q.From, "retry ladder ") {
			continue // its ladder's finding names it
		}
		if e, ok := effs[q.Name]; ok && e.dlrk != nil && isWildcardKey(*e.dlrk) {
			add(SevWarning, "wildcard-routing-key", q.Pos, q.Name,
				"queue `%s`: dead-letter routing key `%s` is a binding pattern, and dead letters would carry it as their key: use a concrete key such as `%s`",
				q.Name, *e.dlrk, concreteKey(*e.dlrk, q.Name))
		}
	}
}
