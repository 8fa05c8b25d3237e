package inspect

// An EventBridge rule target's dead-letter queue gets the event as the body
// with these attributes (Amazon EventBridge User Guide, "Using dead-letter
// queues to process undelivered events"):
//
//	attribute                   field
//	ERROR_CODE                  exception_type
//	ERROR_MESSAGE               message; it beats ERROR_CODE
//	RETRY_ATTEMPTS              attempts
//	TARGET_ARN                  consumer
//	RULE_ARN                    -
//	EXHAUSTED_RETRY_CONDITION   exception_type when there is no ERROR_CODE
const (
	ebRuleARN       = "RULE_ARN"
	ebTargetARN     = "TARGET_ARN"
	ebErrorCode     = "ERROR_CODE"
	ebErrorMessage  = "ERROR_MESSAGE"
	ebExhausted     = "EXHAUSTED_RETRY_CONDITION"
	ebRetryAttempts = "RETRY_ATTEMPTS"
)

func decodeEventBridge(in *failureInput, f *Failure) bool {
	code, msg, rule := in.text(ebErrorCode), in.text(ebErrorMessage), in.text(ebRuleARN)
	if code == "" && msg == "" && rule == "" {
		return false
	}
	f.Framework = "eventbridge"
	f.ExceptionType, f.Message = code, msg
	if f.ExceptionType == "" {
		f.ExceptionType = in.text(ebExhausted)
	}
	f.Attempts = in.int(ebRetryAttempts)
	f.Consumer = in.text(ebTargetARN)
	return true
}
