package rabbitmq

import (
	"strconv"
	"strings"
)

// parseVersion reads the major and minor numbers of a RabbitMQ version
// ("4.3.6", "4.3.0-rc.1"); ok is false when s is not one.
func parseVersion(s string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimSpace(s), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil || major < 0 {
		return 0, 0, false
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	minor, err = strconv.Atoi(digits)
	if err != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// requeueCounts reports whether RabbitMQ version counts a requeue (a
// basic.nack or basic.reject with requeue) as a delivery of a quorum queue's
// message, raising its x-delivery-count towards the queue's delivery limit.
// Every version before 4.3 does; from 4.3 only failed deliveries count (a
// reject without requeue, a closed channel or connection), and
// x-acquired-count counts every delivery. An unknown version counts: the
// guess that never makes a read riskier than it is.
func requeueCounts(version string) bool {
	major, minor, ok := parseVersion(version)
	if !ok {
		return true
	}
	return major < 4 || major == 4 && minor < 3
}

// requeueCounts is requeueCounts of the server: the version the AMQP
// connection announced in its server properties, else the one the
// management API reported.
func (b *Broker) requeueCounts() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	v := b.amqpVersion
	if v == "" {
		v = b.version
	}
	b.mu.Unlock()
	return requeueCounts(v)
}
