package sqs

import "time"

// originCache remembers, per DLQ URL, the source queue URLs that dead-letter
// into it, so that resolving the origin of many messages costs one lookup.
type originCache struct {
	sources []string // source queue URLs
	at      time.Time
}
