package broker

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

// messageTraits holds every registered System's MessageTraits, in the
// order they register, in one SDK-free place that the adapters, the archive
// (which keeps any system's messages) and the libraries share. A message is
// read by every system's rules, as it may have been exported from another
// broker.
var messageTraits []systemTraits

type systemTraits struct {
	System System
	MessageTraits
}

// RegisterMessageTraits adds what the libraries need to know of the
// messages of System s. Each system's file calls it from its init
// (system_rabbitmq.go, system_sqs.go), and so may the package of an
// adapter of another system; a System registered twice keeps its first.
func RegisterMessageTraits(s System, t MessageTraits) {
	for _, r := range messageTraits {
		if r.System == s {
			return
		}
	}
	messageTraits = append(messageTraits, systemTraits{s, t})
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
