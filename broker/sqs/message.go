package sqs

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// System attribute names (types.MessageSystemAttributeName values).
const (
	sysReceiveCount      = "ApproximateReceiveCount"
	sysFirstReceive      = "ApproximateFirstReceiveTimestamp"
	sysSentTimestamp     = "SentTimestamp"
	sysDLQSourceArn      = "DeadLetterQueueSourceArn"
	sysGroupID           = "MessageGroupId"
	sysDeduplicationID   = "MessageDeduplicationId"
	sysSequenceNumber    = "SequenceNumber"
	sysMessageID         = "MessageId"
	maxMessageBytes      = 256 * 1024
	reasonMaxReceives    = "max_receives"
	bodyEncodingBase64   = "base64"
	bodyEncodingEmpty    = "empty"
	emptyBody            = "(empty)"
	attrTypeBinaryPrefix = "Binary"
)

// fromSQS converts a received message. queue is the name it was read from.
//
//   - ID and Properties.MessageID are the SQS MessageId, stable across
//     receives (a redrive to another queue gives the copy a new one).
//   - DeliveryCount is ApproximateReceiveCount − 1: the receives before the
//     one that produced this copy (SystemAttributes keep the raw count).
//   - Timestamp and Properties.Timestamp are SentTimestamp.
//   - DeadLetterQueueSourceArn becomes Death{Reason: "max_receives", Queue:
//     the source queue's name, QueueARN}.
//   - SequenceNumber (FIFO) is Position.
//   - A body sent by dlq as base64 (dlq-body-encoding) is decoded.
func fromSQS(m types.Message, queue string) *broker.Message {
	out := &broker.Message{
		System:           broker.SQS,
		Queue:            queue,
		Body:             []byte(aws.ToString(m.Body)),
		SystemAttributes: make(map[string]string, len(m.Attributes)+1),
	}
	for k, v := range m.Attributes {
		out.SystemAttributes[k] = v
	}
	id := aws.ToString(m.MessageId)
	out.SystemAttributes[sysMessageID] = id
	out.ID = id
	out.Properties.MessageID = id
	if len(m.MessageAttributes) > 0 {
		out.Attributes = make(map[string]broker.Attribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			a := broker.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue)}
			if v.BinaryValue != nil {
				a.BinaryValue = append([]byte(nil), v.BinaryValue...)
			}
			out.Attributes[k] = a
		}
		switch a := out.Attributes[attrBodyEncoding]; a.StringValue {
		case bodyEncodingBase64:
			if b, err := base64.StdEncoding.DecodeString(string(out.Body)); err == nil {
				out.Body = b
			}
		case bodyEncodingEmpty:
			if string(out.Body) == emptyBody {
				out.Body = []byte{}
			}
		}
	}
	if n, err := strconv.ParseInt(m.Attributes[sysReceiveCount], 10, 64); err == nil && n > 0 {
		out.DeliveryCount = n - 1
		out.Redelivered = n > 1
	}
	if t, ok := millis(m.Attributes[sysSentTimestamp]); ok {
		out.Timestamp = t
		out.Properties.Timestamp = t
	}
	if src := m.Attributes[sysDLQSourceArn]; src != "" {
		out.Death = &broker.Death{
			Reason:   reasonMaxReceives,
			Queue:    nameFromARN(src),
			QueueARN: src,
			Count:    1,
		}
	}
	out.Position = m.Attributes[sysSequenceNumber]
	return out
}

// millis parses an epoch-milliseconds system attribute.
func millis(s string) (time.Time, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}

// outgoing is one message ready for SendMessageBatch.
type outgoing struct {
	entry types.SendMessageBatchRequestEntry
	size  int // bytes SQS counts against the 256 KiB limit
}

// queueInfo is what sending needs to know about the destination.
type queueInfo struct {
	url          string
	name         string
	fifo         bool
	contentDedup bool
}

// toEntry builds the SendMessageBatch entry for o on the queue q.
//
// Message attributes: an SQS message keeps its own; any other message has
// its AMQP properties and headers mapped by AttributesFromHeaders. FIFO
// queues get MessageGroupId from o.GroupID, else the message's own
// MessageGroupId, and MessageDeduplicationId from o.DeduplicationID, else a
// fresh random one unless the queue has content-based deduplication.
// Standard queues get neither, and DelaySeconds is never set.
func toEntry(id string, o broker.Outgoing, q queueInfo) (outgoing, error) {
	m := o.Message
	if m == nil {
		return outgoing{}, errors.New("no message")
	}
	body, encoding := string(m.Body), ""
	switch {
	case body == "":
		// SQS refuses empty bodies; mark the placeholder so it reads back empty.
		body, encoding = emptyBody, bodyEncodingEmpty
	case !validBody(body):
		body, encoding = base64.StdEncoding.EncodeToString(m.Body), bodyEncodingBase64
	}
	room := maxAttributes
	if encoding != "" {
		room--
	}
	var attrs map[string]broker.Attribute
	if m.System == broker.SQS || len(m.Attributes) > 0 {
		attrs = make(map[string]broker.Attribute, len(m.Attributes)+1)
		for k, v := range m.Attributes {
			if k == attrBodyEncoding {
				continue
			}
			attrs[k] = v
		}
	} else {
		var err error
		if attrs, err = attributesFromHeaders(m.Headers, m.Properties, room); err != nil {
			return outgoing{}, err
		}
	}
	if encoding != "" {
		attrs[attrBodyEncoding] = broker.Attribute{DataType: "String", StringValue: encoding}
	}
	if len(attrs) > maxAttributes {
		return outgoing{}, fmt.Errorf("%d message attributes, SQS allows %d", len(attrs), maxAttributes)
	}
	size := len(body)
	e := types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(body)}
	if len(attrs) > 0 {
		e.MessageAttributes = make(map[string]types.MessageAttributeValue, len(attrs))
		for k, a := range attrs {
			if !validAttributeName(k) {
				return outgoing{}, fmt.Errorf("message attribute name %q is not allowed by SQS", k)
			}
			if a.DataType == "" {
				return outgoing{}, fmt.Errorf("message attribute %q has no data type", k)
			}
			v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
			if len(a.DataType) >= len(attrTypeBinaryPrefix) && a.DataType[:len(attrTypeBinaryPrefix)] == attrTypeBinaryPrefix {
				v.BinaryValue = a.BinaryValue
				size += len(a.BinaryValue)
			} else {
				v.StringValue = aws.String(a.StringValue)
				size += len(a.StringValue)
			}
			size += len(k) + len(a.DataType)
			e.MessageAttributes[k] = v
		}
	}
	if size > maxMessageBytes {
		return outgoing{}, fmt.Errorf("message is %d bytes with its attributes, over the SQS limit of %d", size, maxMessageBytes)
	}
	if q.fifo {
		group := o.GroupID
		if group == "" {
			group = m.SystemAttributes[sysGroupID]
		}
		if group == "" {
			return outgoing{}, fmt.Errorf("fifo queue `%s` needs a message group id and the message has none: redrive it from a fifo queue or give it a group id", q.name)
		}
		e.MessageGroupId = aws.String(group)
		dedup := o.DeduplicationID
		if dedup == "" && !q.contentDedup {
			dedup = newDedupID()
		}
		if dedup != "" {
			e.MessageDeduplicationId = aws.String(dedup)
		}
	}
	return outgoing{entry: e, size: size}, nil
}

// newDedupID is a random 128-bit deduplication id.
func newDedupID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "dlq-" + hex.EncodeToString(b[:])
}
