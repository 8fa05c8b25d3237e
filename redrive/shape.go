package redrive

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// RedriveHeader is the header (SQS: message attribute) that records that a
// message was redriven: {count, time, source, id} (id: the run and a
// sequence number, unique per publish). RabbitMQ carries it as a
// table; SQS as a String attribute holding the same JSON object.
const RedriveHeader = inspect.RedriveHeader

// shape makes nm (a copy of orig, maybe transformed) ready for the
// destination: death metadata stripped unless kept, --set-header applied,
// the redrive record added, and headers mapped to attributes (or back) as
// the source's and the destination's traits say.
func (e *engine) shape(nm, orig *broker.Message) error {
	if !e.opts.KeepDeathHeaders {
		for k := range nm.Headers {
			if broker.IsDeathHeader(k) {
				delete(nm.Headers, k)
			}
		}
	}
	if !e.opts.KeepFailureHeaders {
		for k := range nm.Headers {
			if broker.IsFailureHeader(k) {
				delete(nm.Headers, k)
			}
		}
		for k := range nm.Attributes {
			if broker.IsFailureHeader(k) {
				delete(nm.Attributes, k)
			}
		}
	}
	e.resetCounters(nm)
	e.shapeEnvelope(nm)
	fromAttrs := e.traits.Attributes != nil && e.traits.Attributes(orig)
	maxAttrs := e.dstTraits.MaxAttributes
	toAttrs := maxAttrs > 0
	// Attributes → headers for a destination that keeps headers here.
	// Headers → attributes: the publisher of a destination that keeps
	// attributes maps headers and properties itself (losslessly, see
	// broker/sqs), so they stay headers.
	if !toAttrs && fromAttrs {
		attributesToHeaders(nm)
	}
	asAttr := toAttrs && fromAttrs
	set := func(k string, v any) {
		if asAttr {
			if nm.Attributes == nil {
				nm.Attributes = map[string]broker.Attribute{}
			}
			nm.Attributes[k] = broker.Attribute{DataType: "String", StringValue: fmt.Sprint(v)}
			return
		}
		if nm.Headers == nil {
			nm.Headers = map[string]any{}
		}
		nm.Headers[k] = v
	}
	for k, v := range e.opts.SetHeaders {
		set(k, v)
	}
	if !e.opts.NoRedriveHeader && e.mode == modeRedrive {
		count := previousRedrives(orig) + 1
		now := e.now().UTC().Truncate(time.Second)
		// id names this one publish: the run and a sequence number. It
		// also lets RabbitMQ's returns be told apart for messages that are
		// otherwise identical, so those need not wait on each other.
		id := e.runID + "-" + strconv.FormatInt(e.seq.Add(1), 10)
		if toAttrs {
			_, had := nm.Attributes[RedriveHeader]
			if asAttr && !had && len(nm.Attributes) >= maxAttrs {
				// Never dropped silently: the message is refused and
				// counted, and the user chooses what gives way.
				return broker.Hintf("%w: the message has %d message attributes and the %s record needs one more (SQS allows %d): drop one with %s, or pass %s",
					errAttributeLimit, len(nm.Attributes), RedriveHeader, maxAttrs, broker.OptTransform.With("'del(.attributes.NAME)'"), broker.OptNoRedriveHeader)
			}
			b, _ := json.Marshal(map[string]any{"count": count, "time": now.Format(time.RFC3339), "source": e.opts.SourceName, "id": id})
			set(RedriveHeader, string(b))
		} else {
			set(RedriveHeader, map[string]any{"count": count, "time": now, "source": e.opts.SourceName, "id": id})
		}
	}
	if asAttr && len(nm.Attributes) > maxAttrs {
		return broker.Hintf("%w: %d message attributes, SQS allows %d: drop some with %s", errAttributeLimit, len(nm.Attributes), maxAttrs, broker.OptTransform.With("'del(.attributes.NAME)'"))
	}
	return nil
}

// errAttributeLimit marks a message refused for having more SQS message
// attributes than SQS allows.
var errAttributeLimit = errors.New("too many message attributes")

// previousRedrives reads the count of an earlier x-dlq-redrive record.
func previousRedrives(m *broker.Message) int64 { return inspect.Redrives(m) }

// attributesToHeaders maps an SQS message for RabbitMQ or an archive:
// String attributes become string headers, Number ones integers (or floats
// when not whole), Binary ones byte strings; the SQS MessageId becomes the
// message-id property, so the message keeps its fingerprint.
func attributesToHeaders(m *broker.Message) {
	if len(m.Attributes) > 0 && m.Headers == nil {
		m.Headers = map[string]any{}
	}
	for k, a := range m.Attributes {
		switch {
		case strings.HasPrefix(a.DataType, "Binary"):
			m.Headers[k] = append([]byte(nil), a.BinaryValue...)
		case strings.HasPrefix(a.DataType, "Number"):
			if n, err := strconv.ParseInt(a.StringValue, 10, 64); err == nil {
				m.Headers[k] = n
			} else if f, err := strconv.ParseFloat(a.StringValue, 64); err == nil {
				m.Headers[k] = f
			} else {
				m.Headers[k] = a.StringValue
			}
		case k == RedriveHeader:
			var rec map[string]any
			if json.Unmarshal([]byte(a.StringValue), &rec) == nil {
				if n, ok := broker.Int64(rec["count"]); ok {
					rec["count"] = n
				}
				m.Headers[k] = rec
			} else {
				m.Headers[k] = a.StringValue
			}
		default:
			m.Headers[k] = a.StringValue
		}
	}
	m.Attributes = nil
	if m.Properties.MessageID == "" {
		m.Properties.MessageID = m.SystemAttributes["MessageId"]
	}
	if m.Properties.Timestamp.IsZero() && !m.Timestamp.IsZero() {
		m.Properties.Timestamp = m.Timestamp
	}
	if m.Properties.DeliveryMode == 0 {
		m.Properties.DeliveryMode = 2
	}
}

// shapeEnvelope does to the headers that NServiceBus on SQS keeps inside
// the body what shape and resetCounters do to a message's own: failure
// headers go unless kept, and the named retry counters become "0".
func (e *engine) shapeEnvelope(nm *broker.Message) {
	if e.opts.KeepFailureHeaders && !e.opts.ResetRetries && len(e.opts.ResetHeaders) == 0 {
		return
	}
	inspect.EditEnvelopeHeaders(nm, func(k string, v json.RawMessage) json.RawMessage {
		if !e.opts.KeepFailureHeaders && broker.IsFailureHeader(k) {
			return nil
		}
		if e.resets(k) && len(v) > 0 {
			switch {
			case v[0] == '"':
				return json.RawMessage(`"0"`)
			case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
				return json.RawMessage(`0`)
			}
		}
		return v
	})
}

// resetCounters sets the retry counters that Options.ResetRetries and
// Options.ResetHeaders name to 0, keeping each one's type; a counter the
// message does not carry is not added.
func (e *engine) resetCounters(nm *broker.Message) {
	if !e.opts.ResetRetries && len(e.opts.ResetHeaders) == 0 {
		return
	}
	for k, v := range nm.Headers {
		if e.resets(k) {
			if z, ok := broker.ZeroCount(v); ok {
				nm.Headers[k] = z
			}
		}
	}
	for k, a := range nm.Attributes {
		if e.resets(k) {
			a.StringValue, a.BinaryValue = "0", nil
			if !strings.HasPrefix(a.DataType, "Number") && !strings.HasPrefix(a.DataType, "String") {
				a.DataType = "Number"
			}
			nm.Attributes[k] = a
		}
	}
}

// resets reports whether Options.ResetRetries or Options.ResetHeaders
// name the counter k.
func (e *engine) resets(k string) bool {
	if e.opts.ResetRetries && broker.IsRetryCounter(k) {
		return true
	}
	for _, n := range e.opts.ResetHeaders {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

// MarkRun is the ID of the run that wrote m's x-dlq-redrive record (the
// record's id without its sequence number), "" without one.
func MarkRun(m *broker.Message) string {
	var id string
	if v, ok := m.Headers[RedriveHeader]; ok {
		switch t := v.(type) {
		case map[string]any:
			id, _ = t["id"].(string)
		case string:
			id = markID(t)
		case []byte:
			id = markID(string(t))
		}
	} else if a, ok := m.Attributes[RedriveHeader]; ok {
		id = markID(a.StringValue)
	}
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return ""
}

func markID(raw string) string {
	var rec struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(raw), &rec) != nil {
		return ""
	}
	return rec.ID
}
