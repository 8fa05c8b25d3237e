package broker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// Fingerprint returns the stable ID of a message: the same every time the
// same message is seen, in any session, on any connection.
//
// It is the message-id property (or the SQS MessageId) when there is one.
// Otherwise it is "h-" and 16 hex digits of a SHA-256 over the body and the
// properties and application headers that identify the message; headers and
// flags that the broker changes while the message waits (x-death,
// x-first-death-*, x-last-death-*, x-delivery-count, x-acquired-count,
// redelivered) are left out, so that dead-lettering it again or peeking it
// does not change its ID.
// A delivery tag is never part of it.
func Fingerprint(m *Message) string {
	if m.Properties.MessageID != "" {
		return m.Properties.MessageID
	}
	if id := m.SystemAttributes["MessageId"]; id != "" {
		return id
	}
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(string(m.Body))
	p := m.Properties
	field(p.ContentType)
	field(p.ContentEncoding)
	field(p.CorrelationID)
	field(p.Type)
	field(p.AppID)
	field(p.UserID)
	field(p.ReplyTo)
	if !p.Timestamp.IsZero() {
		field(p.Timestamp.UTC().Format("2006-01-02T15:04:05Z"))
	} else {
		field("")
	}
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		if volatileHeader(k) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field(k)
		field(fmt.Sprintf("%v", m.Headers[k]))
	}
	akeys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		akeys = append(akeys, k)
	}
	sort.Strings(akeys)
	for _, k := range akeys {
		a := m.Attributes[k]
		field(k)
		field(a.DataType)
		field(a.StringValue)
		field(string(a.BinaryValue))
	}
	return "h-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// volatileHeader reports headers the broker sets or changes while a message
// is dead-lettered, requeued or redelivered.
func volatileHeader(k string) bool {
	return k == "x-death" || k == "x-delivery-count" || k == "x-acquired-count" ||
		strings.HasPrefix(k, "x-first-death-") || strings.HasPrefix(k, "x-last-death-")
}

// IsDeathHeader reports whether a header is broker death metadata, which a
// redrive strips by default.
func IsDeathHeader(k string) bool { return volatileHeader(k) }
