package archive

import (
	_ "embed"
	"strconv"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// SampleBase is the time the embedded sample was generated at; the sample's
// messages died in the days before it.
var SampleBase = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)

//go:generate go run ./internal/gensample -o sample/demo.jsonl.gz
//go:embed sample/demo.jsonl.gz
var sample []byte

// Demo opens the embedded sample archive: a few hundred realistic dead
// letters from RabbitMQ (orders.dlq, payments.dlq, a retry ladder) and SQS
// (billing-dlq, events-dlq.fifo). Its times are moved so that the newest
// message died minutes ago. It is read-only except for publishing to other
// files (export).
func Demo() (*Broker, error) {
	return demoAt(time.Now())
}

func demoAt(now time.Time) (*Broker, error) {
	b := &Broker{data: sample, name: "demo", writers: map[string]*Writer{}}
	b.shift = now.UTC().Truncate(time.Minute).Sub(SampleBase)
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// shiftTimes moves every time a message carries by d: properties, death
// record, timestamp headers, and SQS epoch-millisecond system attributes.
func shiftTimes(m *broker.Message, d time.Duration) {
	mv := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(d)
	}
	m.Timestamp = mv(m.Timestamp)
	m.Properties.Timestamp = mv(m.Properties.Timestamp)
	if m.Death != nil {
		m.Death.First, m.Death.Last = mv(m.Death.First), mv(m.Death.Last)
		for i := range m.Death.History {
			m.Death.History[i].Time = mv(m.Death.History[i].Time)
		}
	}
	for k, v := range m.Headers {
		m.Headers[k] = shiftValue(v, d)
	}
	for _, k := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		if s, ok := m.SystemAttributes[k]; ok {
			if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
				m.SystemAttributes[k] = strconv.FormatInt(ms+d.Milliseconds(), 10)
			}
		}
	}
}

func shiftValue(v any, d time.Duration) any {
	switch x := v.(type) {
	case time.Time:
		return x.Add(d)
	case map[string]any:
		for k, e := range x {
			x[k] = shiftValue(e, d)
		}
	case []any:
		for i, e := range x {
			x[i] = shiftValue(e, d)
		}
	}
	return v
}
