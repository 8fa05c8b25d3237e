package broker

import "strings"

// MessageTraits are what the libraries need to know about the messages of
// one System, wherever they are read (an archive keeps them): where the
// broker records the source queue outside a death record, which headers
// are the broker's own, and how a queue ID it records is shown. The
// libraries ask RecordedSource, BrokerHeader and SourceName, and never name
// an attribute, a header prefix or an ARN themselves.
type MessageTraits struct {
	// SourceAttribute is the system attribute in which the broker records
	// the queue a message was dead-lettered from ("" when it has none).
	SourceAttribute string
	// OwnHeader reports a header the broker sets itself, which a person
	// may not edit; nil: none.
	OwnHeader func(k string) bool
	// SourceName is how a queue ID the broker records is shown (the name
	// in an SQS queue ARN); nil shows it as it is.
	SourceName func(id string) string
}

// messageTraits holds every System's MessageTraits, in one SDK-free place
// that the adapters, the archive (which keeps any system's messages) and
// the libraries share. A message is read by every system's rules, as it
// may have been exported from another broker.
var messageTraits = []MessageTraits{
	{ // RabbitMQ: x-death, x-rabbitmq-*, x-stream-offset.
		OwnHeader: func(k string) bool {
			return k == "x-death" || strings.HasPrefix(k, "x-rabbitmq-") || k == "x-stream-offset"
		},
	},
	{ // SQS: the DLQ records its source queue's ARN.
		SourceAttribute: "DeadLetterQueueSourceArn",
		SourceName:      arnResource,
	},
}

// arnResource is the last part of an ARN (arn:aws:sqs:REGION:ACCOUNT:NAME):
// what follows its last colon.
func arnResource(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// RecordedSource is the queue ID that m's broker recorded as its source
// outside a death record (SQS's DeadLetterQueueSourceArn), "" when none.
func RecordedSource(m *Message) string {
	for _, t := range messageTraits {
		if t.SourceAttribute != "" {
			if v := m.SystemAttributes[t.SourceAttribute]; v != "" {
				return v
			}
		}
	}
	return ""
}

// BrokerHeader reports a header that a broker sets itself (a death record,
// a stream offset), which a person may not edit.
func BrokerHeader(k string) bool {
	if IsDeathHeader(k) {
		return true
	}
	for _, t := range messageTraits {
		if t.OwnHeader != nil && t.OwnHeader(k) {
			return true
		}
	}
	return false
}

// SourceName is how a queue ID a broker recorded is shown: the queue's
// name.
func SourceName(id string) string {
	for _, t := range messageTraits {
		if t.SourceName != nil {
			if n := t.SourceName(id); n != id {
				return n
			}
		}
	}
	return id
}
