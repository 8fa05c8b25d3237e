package inspect

// Amazon SNS delivers to an SQS subscription, unless raw message delivery is
// on, a JSON envelope around the published message (Amazon SNS Developer
// Guide, "Amazon SNS message and JSON formats"):
//
//	envelope field       field
//	Type                 "Notification" (what recognises the envelope)
//	TopicArn             consumer: the topic the message was published to
//	Subject              -
//	Message              the payload inside the envelope (a string; JSON
//	                     when it parses)
//	Timestamp            -
//	MessageAttributes    - (beside the payload in the document's envelope)
//
// SNS records no failure; the record says only that the body is wrapped.
func decodeSNS(in *failureInput, f *Failure) bool {
	if in.envelope != "sns" {
		return false
	}
	f.Framework = "sns"
	f.Envelope = "sns"
	f.Consumer = in.field(bkTopicArn)
	return true
}
