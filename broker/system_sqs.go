package broker

import "strings"

// SQS, its queue kinds and what its messages carry.
const (
	SQS System = "sqs"

	KindSQSStandard QueueKind = "sqs-standard"
	KindSQSFIFO     QueueKind = "sqs-fifo"
)

func init() {
	RegisterMessageTraits(SQS, MessageTraits{
		// The DLQ records its source queue's ARN.
		SourceAttribute: "DeadLetterQueueSourceArn",
		SourceName:      arnResource,
	})
}

// arnResource is the last part of an ARN (arn:aws:sqs:REGION:ACCOUNT:NAME):
// what follows its last colon.
func arnResource(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}
