package rabbitrules

import "strings"

// Routes reports whether a binding with bindingKey on an exchange of type
// typ takes a message published with key: direct compares the keys, topic
// matches the binding's pattern (TopicMatch), and fanout, headers and
// plugin types (x-delayed-message, consistent hash…), whose routing
// depends on headers or state, are taken to route everything.
func Routes(typ, bindingKey, key string) bool {
	switch typ {
	case "direct":
		return bindingKey == key
	case "topic":
		return TopicMatch(bindingKey, key)
	}
	return true
}

// TopicMatch matches an AMQP topic binding pattern against a routing key:
// words are separated by dots, * matches exactly one word, # zero or more.
// It takes time proportional to the number of pattern words times the
// number of key words, whatever the pattern (no backtracking), and one row
// of memory.
func TopicMatch(pattern, key string) bool {
	if pattern == "#" {
		return true
	}
	p, k := strings.Split(pattern, "."), strings.Split(key, ".")
	// m[j] reports whether the pattern words read so far match k[:j].
	m := make([]bool, len(k)+1)
	m[0] = true
	for _, w := range p {
		if w == "#" {
			for j := 1; j <= len(k); j++ {
				m[j] = m[j] || m[j-1]
			}
			continue
		}
		for j := len(k); j >= 1; j-- {
			m[j] = m[j-1] && (w == "*" || w == k[j-1])
		}
		m[0] = false
	}
	return m[len(k)]
}
