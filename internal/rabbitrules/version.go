package rabbitrules

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a RabbitMQ server version, major and minor; the zero Version
// is an unknown one.
type Version struct {
	Major, Minor int
	Known        bool
}

// ParseVersion reads the major and minor numbers of a RabbitMQ version
// ("4.3.6", "4.3.0-rc.1"); the result is unknown when s is not one.
func ParseVersion(s string) Version {
	parts := strings.SplitN(strings.TrimSpace(s), ".", 3)
	if len(parts) < 2 {
		return Version{}
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil || major < 0 {
		return Version{}
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	minor, err := strconv.Atoi(digits)
	if err != nil {
		return Version{}
	}
	return Version{Major: major, Minor: minor, Known: true}
}

// AtLeast reports whether v is known and major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Known && (v.Major > major || v.Major == major && v.Minor >= minor)
}

func (v Version) String() string {
	if !v.Known {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// DefaultDeliveryLimit is the delivery limit RabbitMQ 4.x gives a quorum
// queue that sets none.
const DefaultDeliveryLimit = 20

// DefaultLimit is the delivery limit version v gives a quorum queue whose
// arguments and policies set none: 20 from 4.0, none before (and none for
// an unknown version, read like 3.x).
func DefaultLimit(v Version) (int64, bool) {
	if v.AtLeast(4, 0) {
		return DefaultDeliveryLimit, true
	}
	return 0, false
}

// RequeueCounts reports whether version v counts a requeue (a basic.nack or
// basic.reject with requeue) as a delivery of a quorum queue's message,
// raising its x-delivery-count towards the queue's delivery limit. Every
// version before 4.3 does; from 4.3 only failed deliveries count (a reject
// without requeue, a closed channel or connection), and x-acquired-count
// counts every delivery. An unknown version counts: the guess that never
// makes a read riskier than it is.
func RequeueCounts(v Version) bool {
	return !v.AtLeast(4, 3)
}
