package inspect

// AWS Lambda leaves a failed asynchronous invocation in one of two forms
// (AWS Lambda Developer Guide, "Asynchronous invocation": dead-letter
// queues, and destinations' invocation records):
//
// A dead-letter queue gets the event as the body, with attributes
//
//	attribute      field
//	RequestID      -
//	ErrorCode      exception_type (the function's status code)
//	ErrorMessage   message (its first kilobyte); it beats ErrorCode
//
// An on-failure destination gets a JSON record around the event:
//
//	record field                          field
//	requestContext.functionArn            consumer
//	requestContext.approximateInvokeCount attempts
//	requestContext.condition              exception_type when the response
//	                                      names none (RetriesExhausted,
//	                                      EventAgeExceeded)
//	responsePayload.errorType             exception_type
//	responsePayload.errorMessage          message
//	responsePayload.stackTrace            stack (lines joined)
//	timestamp                             failed_at
//	requestPayload                        the event inside the envelope
const (
	lambdaRequestID    = "RequestID"
	lambdaErrorCode    = "ErrorCode"
	lambdaErrorMessage = "ErrorMessage"
)

func decodeLambda(in *failureInput, f *Failure) bool {
	if rc := in.body[bkRequestContext]; in.envelope == "lambda" {
		f.Framework = "lambda"
		f.Envelope = "lambda"
		f.Consumer = rawText(jsonField(rc, []string{"functionArn"}))
		if n, ok := parseInt(rawText(jsonField(rc, []string{"approximateInvokeCount"}))); ok {
			f.Attempts = n
		}
		rp := in.body[bkResponsePayload]
		f.ExceptionType = rawText(jsonField(rp, []string{"errorType"}))
		f.Message = rawText(jsonField(rp, []string{"errorMessage"}))
		if st := jsonField(rp, []string{"stackTrace"}); st != nil {
			f.Stack = joinLines(st)
		}
		if f.ExceptionType == "" {
			f.ExceptionType = rawText(jsonField(rc, []string{"condition"}))
		}
		f.FailedAt = parseTime(in.field(bkTimestamp))
		return true
	}
	code, msg := in.text(lambdaErrorCode), in.text(lambdaErrorMessage)
	if code == "" && msg == "" {
		return false
	}
	f.Framework = "lambda"
	f.Message = msg
	if msg == "" {
		f.Message = "ErrorCode " + code
	}
	return true
}

// joinLines is a JSON array of strings as lines, any other value as text.
func joinLines(raw []byte) string {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return rawText(raw)
	}
	var out []byte
	i = skipWS(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValue(raw, i)
		if end < 0 {
			break
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, rawText(raw[i:end])...)
		i = skipWS(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return string(out)
}
