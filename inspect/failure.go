package inspect

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Failure is the normalised record of why and where a message failed, read
// with no configuration from what the framework or service that
// dead-lettered it left on it: headers, SQS message attributes, or a JSON
// envelope around the body. One small decoder per framework fills it (the
// failure_*.go files, each with a table of what it reads).
//
// ExceptionType and Message are the root cause where the framework wraps
// it: the innermost "Caused by:" of a Java trace, the innermost " ---> "
// inner exception of a .NET one. Stack keeps the whole trace.
type Failure struct {
	// Framework names the decoder: spring, masstransit, nservicebus,
	// celery, dramatiq, laravel, shoryuken, spring-cloud-aws, lambda, sns,
	// eventbridge.
	Framework     string `json:"framework"`
	ExceptionType string `json:"exception_type,omitempty"`
	Message       string `json:"message,omitempty"`
	Stack         string `json:"stack,omitempty"`
	// Origin is where the framework says the message came from, nil when
	// it does not say.
	Origin *FailureOrigin `json:"origin,omitempty"`
	// Attempts is the framework's own count of tries or retries (see each
	// decoder's table), 0 when it keeps none.
	Attempts    int64     `json:"attempts,omitempty"`
	FailedAt    time.Time `json:"failed_at,omitzero"`
	Consumer    string    `json:"consumer,omitempty"`
	MessageType string    `json:"message_type,omitempty"`
	// ID is the framework's own id of the message where it keeps one apart
	// from the broker's message id (Celery's task id).
	ID string `json:"id,omitempty"`
	// Envelope is the kind of envelope the body is (masstransit, sns,
	// lambda, nservicebus), "" when the body is the payload itself.
	Envelope string `json:"envelope,omitempty"`
}

// FailureOrigin is the way home a framework recorded: an exchange and
// routing key (Spring), or a queue (MassTransit, NServiceBus). From names
// the header it was read from.
type FailureOrigin struct {
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`
	Queue      string `json:"queue,omitempty"`
	From       string `json:"from"`
}

// Destination is the origin as a place to publish to: the exchange with
// its routing key, or the queue (the default exchange, an SQS queue name).
func (o *FailureOrigin) Destination() broker.Destination {
	if o.Exchange != "" {
		return broker.Destination{Kind: broker.ToExchange, Exchange: o.Exchange, RoutingKeys: []string{o.RoutingKey}}
	}
	if o.Queue != "" {
		return broker.Destination{Kind: broker.ToQueue, Queue: o.Queue}
	}
	return broker.Destination{Kind: broker.ToQueue, Queue: o.RoutingKey}
}

// Reason is the failure as one line: "Type: message" of the root cause,
// or either alone.
func (f *Failure) Reason() string {
	if f == nil {
		return ""
	}
	return typed(f.ExceptionType, f.Message)
}

// frameworkSet is the decoders that may apply to a message, as a bit set,
// so that a message none of them concerns costs one pass over its header
// names.
type frameworkSet uint16

const (
	fwSpring frameworkSet = 1 << iota
	fwMassTransit
	fwNServiceBus
	fwSpringAWS
	fwLambda
	fwEventBridge
	fwSNS
	fwCelery
	fwDramatiq
	fwLaravel
	fwShoryuken
)

// FailureOf decodes the failure record of m, nil when no known framework or
// service left one. It reads header names once, and scans (never parses)
// the top level of a JSON object body.
func FailureOf(m *broker.Message) *Failure {
	var in failureInput
	in.init(m)
	var f Failure
	if !in.decode(&f) {
		return nil
	}
	return &f
}

// decode runs the decoders that may apply, in this order, until one
// recognises the message. The calls are static, so that the input and the
// record stay on the caller's stack.
func (in *failureInput) decode(f *Failure) bool {
	set := in.set
	switch {
	case set == 0:
		return false
	case set&fwNServiceBus != 0 && decodeNServiceBus(in, f),
		set&fwMassTransit != 0 && decodeMassTransit(in, f),
		set&fwSpring != 0 && decodeSpring(in, f),
		set&fwLambda != 0 && decodeLambda(in, f),
		set&fwEventBridge != 0 && decodeEventBridge(in, f),
		set&fwSpringAWS != 0 && decodeSpringAWS(in, f),
		set&fwCelery != 0 && decodeCelery(in, f),
		set&fwDramatiq != 0 && decodeDramatiq(in, f),
		set&fwLaravel != 0 && decodeLaravel(in, f),
		set&fwShoryuken != 0 && decodeShoryuken(in, f),
		set&fwSNS != 0 && decodeSNS(in, f):
		return true
	}
	return false
}

// bodyKey indexes the top-level body fields the decoders and bodyReason
// read.
type bodyKey int

const (
	bkDeadReason bodyKey = iota
	bkError
	bkReason
	// SNS notification
	bkType
	bkMessageIdSNS
	bkTopicArn
	bkMessageSNS
	bkTimestampSNS
	// MassTransit envelope
	bkMessageIdMT
	bkMessageType
	bkMessage
	bkDestinationAddress
	bkHeaders
	bkHost
	// Lambda on-failure destination record
	bkRequestContext
	bkRequestPayload
	bkResponseContext
	bkResponsePayload
	bkTimestamp
	// NServiceBus on SQS
	bkHeadersNSB
	bkBodyNSB
	bkS3BodyKey
	// Dramatiq
	bkActorName
	bkQueueName
	bkMessageIdDQ
	bkOptions
	// Laravel
	bkDisplayName
	bkJob
	bkData
	bkUUID
	bkCount
)

func bodyKeyOf(k string) (bodyKey, bool) {
	switch k {
	case "dead_reason":
		return bkDeadReason, true
	case "error":
		return bkError, true
	case "reason":
		return bkReason, true
	case "Type":
		return bkType, true
	case "MessageId":
		return bkMessageIdSNS, true
	case "TopicArn":
		return bkTopicArn, true
	case "Message":
		return bkMessageSNS, true
	case "Timestamp":
		return bkTimestampSNS, true
	case "messageId":
		return bkMessageIdMT, true
	case "messageType":
		return bkMessageType, true
	case "message":
		return bkMessage, true
	case "destinationAddress":
		return bkDestinationAddress, true
	case "headers":
		return bkHeaders, true
	case "host":
		return bkHost, true
	case "requestContext":
		return bkRequestContext, true
	case "requestPayload":
		return bkRequestPayload, true
	case "responseContext":
		return bkResponseContext, true
	case "responsePayload":
		return bkResponsePayload, true
	case "timestamp":
		return bkTimestamp, true
	case "Headers":
		return bkHeadersNSB, true
	case "Body":
		return bkBodyNSB, true
	case "S3BodyKey":
		return bkS3BodyKey, true
	case "actor_name":
		return bkActorName, true
	case "queue_name":
		return bkQueueName, true
	case "message_id":
		return bkMessageIdDQ, true
	case "options":
		return bkOptions, true
	case "displayName":
		return bkDisplayName, true
	case "job":
		return bkJob, true
	case "data":
		return bkData, true
	case "uuid":
		return bkUUID, true
	}
	return 0, false
}

// bodyFields are the raw values of the known top-level fields of a JSON
// object body; nil where absent.
type bodyFields [bkCount][]byte

// scan fills fs from b, reporting whether b is a JSON object.
func (fs *bodyFields) scan(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	return objectFields(b, i, func(key []byte, esc bool, val []byte) bool {
		var k bodyKey
		var ok bool
		if esc {
			k, ok = bodyKeyOf(rawText(append(append([]byte{'"'}, key...), '"')))
		} else {
			k, ok = bodyKeyOf(string(key))
		}
		if ok && fs[k] == nil {
			fs[k] = val
		}
		return true
	})
}

// failureInput is what the decoders read: the message, its body's top-level
// fields, and the headers an envelope carries inside the body.
type failureInput struct {
	m     *broker.Message
	set   frameworkSet
	body  bodyFields
	isObj bool
	// envelope is the kind of envelope the body is, "" when none.
	envelope string
	// envHeaders is the raw headers object of a MassTransit envelope or an
	// NServiceBus-on-SQS body, nil when none.
	envHeaders []byte
	// lazy defers the scan of a body that cannot be an envelope until the
	// reason needs its fields (scanBody); pending is that body.
	lazy    bool
	pending []byte
}

// mayBeEnvelope reports whether b may be a body that init recognises: it
// holds a key that every such envelope or job body has ("messageType",
// "Headers", "requestContext", "TopicArn"; Dramatiq's "actor_name",
// Laravel's "displayName"), or an escape that could spell one. It jumps from quote to quote: one pass
// over b, without comparing at every byte.
func mayBeEnvelope(b []byte) bool {
	if bytes.IndexByte(b, '\\') >= 0 {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		if i >= len(b) {
			return false
		}
		var key string
		switch b[i] {
		case 'm':
			key = `messageType"`
		case 'H':
			key = `Headers"`
		case 'r':
			key = `requestContext"`
		case 'T':
			key = `TopicArn"`
		case 'a':
			key = `actor_name"`
		case 'd':
			key = `displayName"`
		default:
			continue
		}
		if bytes.HasPrefix(b[i:], []byte(key)) {
			return true
		}
	}
}

// scanBody scans a body whose scan init deferred.
func (in *failureInput) scanBody() {
	if in.pending != nil {
		in.isObj = in.body.scan(in.pending)
		in.pending = nil
	}
}

// init reads header and attribute names and the body's top level, and
// reports whether any decoder may apply.
func (in *failureInput) init(m *broker.Message) bool {
	in.m = m
	for k := range m.Headers {
		in.set |= headerFrameworks(k)
	}
	for k := range m.Attributes {
		in.set |= headerFrameworks(k) | attributeFrameworks(k)
	}
	b := jsonBody(m)
	switch {
	case len(b) == 0:
	case in.lazy && !mayBeEnvelope(b):
		in.pending = b
	default:
		in.isObj = in.body.scan(b)
	}
	if in.isObj {
		f := &in.body
		switch {
		case f[bkMessageType] != nil && f[bkMessage] != nil:
			in.set |= fwMassTransit
			in.envelope = "masstransit"
			in.envHeaders = objectOrNil(f[bkHeaders])
		case f[bkHeadersNSB] != nil && (f[bkBodyNSB] != nil || f[bkS3BodyKey] != nil):
			in.set |= fwNServiceBus
			in.envelope = "nservicebus"
			in.envHeaders = objectOrNil(f[bkHeadersNSB])
		case f[bkRequestContext] != nil && (f[bkRequestPayload] != nil || f[bkResponsePayload] != nil):
			in.set |= fwLambda
			in.envelope = "lambda"
		case f[bkTopicArn] != nil && f[bkMessageSNS] != nil && string(f[bkType]) == `"Notification"`:
			in.set |= fwSNS
			in.envelope = "sns"
		case f[bkActorName] != nil && f[bkQueueName] != nil:
			in.set |= fwDramatiq
		case f[bkDisplayName] != nil && f[bkJob] != nil:
			in.set |= fwLaravel
		}
		if in.envHeaders != nil {
			objectFields(in.envHeaders, 0, func(key []byte, _ bool, _ []byte) bool {
				in.set |= headerFrameworks(string(key))
				return true
			})
		}
	}
	return in.set != 0
}

func objectOrNil(v []byte) []byte {
	if len(v) > 0 && v[0] == '{' {
		return v
	}
	return nil
}

// headerFrameworks is the frameworks a header (or attribute) name may
// belong to.
func headerFrameworks(k string) frameworkSet {
	if len(k) < 3 {
		return 0
	}
	switch k[0] {
	case 'x':
		if strings.HasPrefix(k, "x-exception-") || strings.HasPrefix(k, "x-original-") {
			return fwSpring
		}
	case 'r':
		if k == springRetryCount {
			return fwSpring
		}
	case 'M':
		if strings.HasPrefix(k, "MT-") {
			return fwMassTransit
		}
	case 'N':
		if strings.HasPrefix(k, "NServiceBus.") {
			return fwNServiceBus
		}
	case 't':
		if k == celeryTask {
			return fwCelery
		}
	}
	return 0
}

// attributeFrameworks is the AWS services and SQS frameworks an SQS
// attribute name may belong to.
func attributeFrameworks(k string) frameworkSet {
	switch k {
	case lambdaRequestID, lambdaErrorCode, lambdaErrorMessage:
		return fwLambda
	case ebRuleARN, ebTargetARN, ebErrorCode, ebErrorMessage, ebExhausted, ebRetryAttempts:
		return fwEventBridge
	case springAWSJavaType:
		return fwSpringAWS
	case shoryukenClass:
		return fwShoryuken
	}
	return 0
}

// text is a header's value as text: an AMQP header, else an SQS attribute
// of that name, else the envelope's header of that name.
func (in *failureInput) text(name string) string {
	if v, ok := in.m.Headers[name]; ok {
		return headerValueText(v)
	}
	if a, ok := in.m.Attributes[name]; ok {
		if a.StringValue != "" {
			return a.StringValue
		}
		return string(a.BinaryValue)
	}
	if in.envHeaders != nil {
		if v := jsonField(in.envHeaders, []string{name}); v != nil {
			return rawText(v)
		}
	}
	return ""
}

// int is a header's value as an integer, 0 when absent or not a number.
func (in *failureInput) int(name string) int64 {
	if v, ok := in.m.Headers[name]; ok {
		if n, ok := broker.Int64(v); ok {
			return n
		}
	}
	n, _ := parseInt(in.text(name))
	return n
}

// field is a top-level body field as text.
func (in *failureInput) field(k bodyKey) string { return rawText(in.body[k]) }

// javaRootCause returns the type and message of the innermost "Caused by:"
// of a Java stack trace, else of its first line; "" when the trace has no
// such line.
func javaRootCause(stack string) (typ, msg string) {
	line := ""
	if i := strings.LastIndex(stack, "Caused by: "); i >= 0 {
		line = stack[i+len("Caused by: "):]
	} else {
		line = strings.TrimSpace(stack)
	}
	line, _, _ = strings.Cut(line, "\n")
	return splitTyped(strings.TrimSpace(line))
}

// dotnetInnerCause returns the type and message of the innermost inner
// exception of a .NET Exception.ToString() (" ---> Type: message"), "" when
// it has none.
func dotnetInnerCause(stack string) (typ, msg string) {
	i := strings.LastIndex(stack, "---> ")
	if i < 0 {
		return "", ""
	}
	line, _, _ := strings.Cut(stack[i+len("---> "):], "\n")
	return splitTyped(strings.TrimSpace(line))
}

// splitTyped splits "pkg.Type: message" into its type and message; a line
// whose first word is not a type name is all message.
func splitTyped(line string) (typ, msg string) {
	if line == "" {
		return "", ""
	}
	t, m, ok := strings.Cut(line, ": ")
	if !ok {
		t, m = line, ""
	}
	if t == "" || strings.ContainsAny(t, " \t(") {
		return "", line
	}
	return t, strings.TrimSpace(m)
}

// queueOfAddress is the queue of a transport address: the last path
// segment of a URI (MassTransit's rabbitmq://host/vhost/queue?opts,
// amazonsqs://region/scope/queue), the queue of queue@machine
// (NServiceBus).
func queueOfAddress(addr string) string {
	addr = strings.TrimSpace(addr)
	if i := strings.IndexAny(addr, "?#"); i >= 0 {
		addr = addr[:i]
	}
	if strings.Contains(addr, "://") {
		addr = strings.TrimRight(addr, "/")
		if i := strings.LastIndexByte(addr, '/'); i >= 0 && !strings.HasSuffix(addr[:i], ":/") {
			return addr[i+1:]
		}
		return ""
	}
	q, _, _ := strings.Cut(addr, "@")
	return q
}

// parseTime reads the time formats frameworks use: RFC 3339 and
// NServiceBus's wire format.
func parseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	layouts := [...]string{time.RFC3339Nano, nsbTimeLayout, "2006-01-02T15:04:05.9999999"}
	if len(s) > 20 && s[10] == ' ' && s[19] == ':' {
		// NServiceBus: yyyy-MM-dd HH:mm:ss:ffffff Z; Go reads a fraction
		// only after a dot. Its layout goes first: a failed time.Parse
		// allocates its error.
		s = s[:19] + "." + s[20:]
		layouts[0], layouts[1] = layouts[1], layouts[0]
	}
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// parseInt reads a decimal integer; without allocating when s is none.
func parseInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// FoldStack keeps of a stack trace its first head lines and each cause (Java's
// "Caused by:", .NET's " ---> ") with the frame after it; each run of
// lines left out becomes one "… N lines" line.
func FoldStack(lines []string, head int) []string {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if i < head || strings.HasPrefix(t, "Caused by:") || strings.HasPrefix(t, "---> ") {
			keep[i] = true
			if i+1 < len(lines) {
				keep[i+1] = true
			}
		}
	}
	var out []string
	skipped := 0
	for i, l := range lines {
		if keep[i] {
			if skipped > 0 {
				out = append(out, fmt.Sprintf("… %d lines", skipped))
				skipped = 0
			}
			out = append(out, l)
			continue
		}
		skipped++
	}
	if skipped > 0 {
		out = append(out, fmt.Sprintf("… %d lines", skipped))
	}
	return out
}
