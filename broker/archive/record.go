package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Version is the archive format version this package writes and the newest
// it reads.
const Version = 1

// Header is the first record of an archive (and of every file that was
// concatenated onto it): the format version and where the messages came
// from.
type Header struct {
	Version int       `json:"dlq_archive"`
	Created time.Time `json:"created"`
	Source  Source    `json:"source,omitzero"`
	// Generator names the program that wrote the file ("dlq 1.2.0").
	Generator string `json:"generator,omitempty"`
}

// Source says where archived messages were read from. Broker is an address
// with its password removed.
type Source struct {
	System broker.System `json:"system,omitempty"`
	Broker string        `json:"broker,omitempty"`
	Queue  string        `json:"queue,omitempty"`
}

// line is the union of a header and a message record, so that each line is
// decoded once. A line is a header when DLQArchive is set.
type line struct {
	DLQArchive *int      `json:"dlq_archive,omitempty"`
	Created    time.Time `json:"created,omitzero"`
	Source     *Source   `json:"source,omitempty"`
	Generator  string    `json:"generator,omitempty"`

	record
}

// record is one archived message. Field names and types are the archive
// format (FormatHelp); change them only with a new Version.
type record struct {
	ID       string        `json:"id,omitempty"`
	System   broker.System `json:"system,omitempty"`
	Queue    string        `json:"queue,omitempty"`
	Broker   string        `json:"broker,omitempty"`
	Archived stamp         `json:"archived,omitzero"`

	// Body is the text of the body, or its base64 when BodyEncoding is
	// "base64". Absent means a nil body, "" an empty one.
	Body         *string `json:"body,omitempty"`
	BodyEncoding string  `json:"body_encoding,omitempty"`
	// text is the body as the fast decoder reads it, instead of Body: the
	// bytes become the message's body without another copy. Never nil
	// when there is a body.
	text []byte
	// headerValues are the headers as the fast decoder reads them, instead
	// of Headers: the map becomes the message's.
	headerValues map[string]any

	Headers          headerMap            `json:"headers,omitzero"`
	Properties       *properties          `json:"properties,omitempty"`
	Attributes       map[string]attribute `json:"attributes,omitzero"`
	SystemAttributes map[string]string    `json:"system_attributes,omitzero"`

	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`

	Death         *death `json:"death,omitempty"`
	DeliveryCount int64  `json:"delivery_count,omitempty"`
	AcquiredCount int64  `json:"acquisitions,omitempty"` // x-acquired-count ("acquired_count" would share routing_key's key bit)
	Redelivered   bool   `json:"redelivered,omitempty"`
	Timestamp     stamp  `json:"timestamp,omitzero"`
	Position      string `json:"position,omitempty"`
	Unreadable    string `json:"unreadable,omitempty"`
}

// properties is the record's "properties" object: broker.Properties, whose
// JSON names are the archive's (TestPropertiesFormat pins them), with its
// timestamp written as a stamp.
type properties broker.Properties

// propertiesJSON is properties as encoding/json writes and reads it: the
// outer Timestamp hides the embedded one.
type propertiesJSON struct {
	plainProperties
	Timestamp stamp `json:"timestamp,omitzero"`
}

// plainProperties has broker.Properties' fields without properties' methods.
type plainProperties broker.Properties

func (p properties) MarshalJSON() ([]byte, error) {
	return marshalLine(propertiesJSON{plainProperties(p), stamp{p.Timestamp}})
}

func (p *properties) UnmarshalJSON(b []byte) error {
	var v propertiesJSON
	if err := json.Unmarshal(b, &v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			// The decoder of the record puts "properties." before it.
			te.Field = strings.TrimPrefix(te.Field, "plainProperties.")
		}
		return err
	}
	*p = properties(v.plainProperties)
	p.Timestamp = v.Timestamp.Time
	return nil
}

// stamp is a time in an archive record: RFC 3339 with nanoseconds in UTC,
// or, outside the years 0 to 9999 that RFC 3339 and encoding/json's
// time.Time allow (an AMQP timestamp of 2^62 seconds), a number of seconds
// since the Unix epoch (broker.AppendTimeJSON). Archives of earlier versions
// hold the RFC 3339 form only, and read the same.
type stamp struct{ time.Time }

func (s stamp) MarshalJSON() ([]byte, error) {
	return broker.AppendTimeJSON(make([]byte, 0, 32), s.Time), nil
}

func (s *stamp) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return s.Time.UnmarshalJSON(b) // a string, null, or its error
	}
	t, err := broker.TimeFromNumber(b)
	if err != nil {
		return &json.UnmarshalTypeError{Value: "number " + string(b), Type: reflect.TypeFor[time.Time](), Offset: 0}
	}
	s.Time = t
	return nil
}

type attribute struct {
	DataType    string  `json:"data_type"`
	StringValue *string `json:"string_value,omitempty"`
	// BinaryValue is base64 (encoding/json's []byte).
	BinaryValue []byte `json:"binary_value,omitzero"`
}

type deathEntry struct {
	Reason      string   `json:"reason"`
	Queue       string   `json:"queue"`
	Exchange    string   `json:"exchange,omitempty"`
	RoutingKeys []string `json:"routing_keys,omitzero"`
	Count       int64    `json:"count"`
	Time        stamp    `json:"time,omitzero"`
}

type death struct {
	Reason      string       `json:"reason"`
	Queue       string       `json:"queue"`
	QueueARN    string       `json:"queue_arn,omitempty"`
	Exchange    string       `json:"exchange,omitempty"`
	RoutingKeys []string     `json:"routing_keys,omitzero"`
	Count       int64        `json:"count"`
	First       stamp        `json:"first,omitzero"`
	Last        stamp        `json:"last,omitzero"`
	FirstReason string       `json:"first_reason,omitempty"`
	FirstQueue  string       `json:"first_queue,omitempty"`
	History     []deathEntry `json:"history,omitzero"`
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// toRecord converts a message. Times become UTC; the broker address loses its
// password.
func toRecord(m *broker.Message, brokerAddr string, archived time.Time) (record, error) {
	r := record{
		ID:               m.ID,
		System:           m.System,
		Queue:            m.Queue,
		Broker:           broker.Redact(brokerAddr),
		Archived:         stamp{utc(archived)},
		SystemAttributes: m.SystemAttributes,
		Exchange:         m.Exchange,
		RoutingKey:       m.RoutingKey,
		DeliveryCount:    m.DeliveryCount,
		AcquiredCount:    m.AcquiredCount,
		Redelivered:      m.Redelivered,
		Timestamp:        stamp{utc(m.Timestamp)},
		Position:         m.Position,
		Unreadable:       m.Unreadable,
	}
	if r.ID == "" {
		r.ID = broker.Fingerprint(m)
	}
	if m.Body != nil {
		var s string
		if broker.IsText(m.Body) {
			s = string(m.Body)
		} else {
			s = base64.StdEncoding.EncodeToString(m.Body)
			r.BodyEncoding = "base64"
		}
		r.Body = &s
	}
	if m.Headers != nil {
		r.Headers = make(headerMap, len(m.Headers))
		for k, v := range m.Headers {
			r.Headers[k] = typedValue{v}
		}
	}
	if p := m.Properties; p != (broker.Properties{}) {
		p.Timestamp = utc(p.Timestamp)
		r.Properties = (*properties)(&p)
	}
	if m.Attributes != nil {
		r.Attributes = make(map[string]attribute, len(m.Attributes))
		for k, a := range m.Attributes {
			ra := attribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
			if a.StringValue != "" {
				s := a.StringValue
				ra.StringValue = &s
			}
			r.Attributes[k] = ra
		}
	}
	if d := m.Death; d != nil {
		rd := &death{
			Reason: d.Reason, Queue: d.Queue, QueueARN: d.QueueARN, Exchange: d.Exchange,
			RoutingKeys: d.RoutingKeys, Count: d.Count, First: stamp{utc(d.First)}, Last: stamp{utc(d.Last)},
			FirstReason: d.FirstReason, FirstQueue: d.FirstQueue,
		}
		if d.History != nil {
			rd.History = make([]deathEntry, len(d.History))
			for i, e := range d.History {
				rd.History[i] = deathEntry{Reason: e.Reason, Queue: e.Queue, Exchange: e.Exchange,
					RoutingKeys: e.RoutingKeys, Count: e.Count, Time: stamp{utc(e.Time)}}
			}
		}
		r.Death = rd
	}
	return r, nil
}

// fromRecord converts a record back into the message it was made from.
func fromRecord(r *record) (*broker.Message, error) {
	m := &broker.Message{}
	if err := fromRecordTo(r, m, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// fromRecordTo converts a record into m, reusing l's memory when l is set.
func fromRecordTo(r *record, m *broker.Message, l *lend) error {
	*m = broker.Message{
		ID:               r.ID,
		System:           r.System,
		Queue:            r.Queue,
		SystemAttributes: r.SystemAttributes,
		Exchange:         r.Exchange,
		RoutingKey:       r.RoutingKey,
		DeliveryCount:    r.DeliveryCount,
		AcquiredCount:    r.AcquiredCount,
		Redelivered:      r.Redelivered,
		Timestamp:        r.Timestamp.Time,
		Position:         r.Position,
		Unreadable:       r.Unreadable,
	}
	body, err := r.body(l)
	if err != nil {
		return err
	}
	m.Body = body
	if r.headerValues != nil {
		m.Headers = r.headerValues
	} else if r.Headers != nil {
		if l != nil {
			if l.mHeaders == nil {
				l.mHeaders = make(map[string]any, len(r.Headers))
			}
			clear(l.mHeaders)
			m.Headers = l.mHeaders
		} else {
			m.Headers = make(map[string]any, len(r.Headers))
		}
		for k, v := range r.Headers {
			m.Headers[k] = v.v
		}
	}
	if p := r.Properties; p != nil {
		m.Properties = broker.Properties(*p)
		if m.Properties.MessageID == m.ID {
			m.Properties.MessageID = m.ID // one string, not two
		}
	}
	if r.Attributes != nil {
		if l != nil {
			if l.mAttrs == nil {
				l.mAttrs = make(map[string]broker.Attribute, len(r.Attributes))
			}
			clear(l.mAttrs)
			m.Attributes = l.mAttrs
		} else {
			m.Attributes = make(map[string]broker.Attribute, len(r.Attributes))
		}
		for k, a := range r.Attributes {
			if a.DataType == "" {
				return fmt.Errorf("attribute %q has no data_type", k)
			}
			ba := broker.Attribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
			if a.StringValue != nil {
				ba.StringValue = *a.StringValue
			}
			m.Attributes[k] = ba
		}
	}
	if d := r.Death; d != nil {
		var md *broker.Death
		if l != nil {
			md = &l.mDeath
		} else {
			md = new(broker.Death)
		}
		*md = broker.Death{
			Reason: d.Reason, Queue: d.Queue, QueueARN: d.QueueARN, Exchange: d.Exchange,
			RoutingKeys: d.RoutingKeys, Count: d.Count, First: d.First.Time, Last: d.Last.Time,
			FirstReason: d.FirstReason, FirstQueue: d.FirstQueue,
		}
		if d.History != nil {
			if l != nil {
				md.History = append(l.mHistory[:0], make([]broker.DeathEntry, len(d.History))...)
				l.mHistory = md.History
			} else {
				md.History = make([]broker.DeathEntry, len(d.History))
			}
			for i, e := range d.History {
				md.History[i] = broker.DeathEntry{Reason: e.Reason, Queue: e.Queue, Exchange: e.Exchange,
					RoutingKeys: e.RoutingKeys, Count: e.Count, Time: e.Time.Time}
			}
		}
		m.Death = md
	}
	if m.ID == "" {
		m.ID = broker.Fingerprint(m)
	}
	return nil
}

// body decodes the record's body: nil when it has none.
func (r *record) body(l *lend) ([]byte, error) {
	text := r.text
	if text == nil && r.Body != nil {
		text = []byte(*r.Body)
	}
	if text == nil {
		if r.BodyEncoding != "" {
			return nil, fmt.Errorf("body_encoding %q without a body", r.BodyEncoding)
		}
		return nil, nil
	}
	switch r.BodyEncoding {
	case "":
		return text, nil
	case "base64":
		n := base64.StdEncoding.DecodedLen(len(text))
		var b []byte
		if l != nil && n <= maxLentBody {
			// After the text in the same buffer: growing it leaves the
			// text where it was.
			from := len(l.arena)
			l.arena = append(l.arena, make([]byte, n)...)
			b = l.arena[from:]
		} else {
			b = make([]byte, n)
		}
		n, err := base64.StdEncoding.Decode(b, text)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		return b[:n:n], nil
	}
	return nil, fmt.Errorf("unknown body_encoding %q (expected \"base64\" or none)", r.BodyEncoding)
}

// normaliseTimes makes every time in a decoded record UTC, so that a round
// trip gives values that compare equal with ==.
func (r *record) normaliseTimes() {
	r.Archived.Time = utc(r.Archived.Time)
	r.Timestamp.Time = utc(r.Timestamp.Time)
	if r.Properties != nil {
		r.Properties.Timestamp = utc(r.Properties.Timestamp)
	}
	if d := r.Death; d != nil {
		d.First.Time, d.Last.Time = utc(d.First.Time), utc(d.Last.Time)
		for i := range d.History {
			d.History[i].Time.Time = utc(d.History[i].Time.Time)
		}
	}
}

// Marshal encodes a message as one archive line (without the newline).
// brokerAddr is recorded with its password removed; archived is the time of
// archiving (zero to leave it out).
func Marshal(m *broker.Message, brokerAddr string, archived time.Time) ([]byte, error) {
	r, err := toRecord(m, brokerAddr, archived)
	if err != nil {
		return nil, err
	}
	return marshalLine(r)
}

func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode adds a newline
}

// Unmarshal decodes one archive line holding a message record.
func Unmarshal(b []byte) (*broker.Message, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	if l.DLQArchive != nil {
		return nil, errors.New("line is an archive header, not a message")
	}
	l.normaliseTimes()
	return fromRecord(&l.record)
}
