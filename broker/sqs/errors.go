package sqs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dlq-tools/dlq/broker"
)

// translateErr turns an SDK error from the operation op ("receive from queue
// `orders-dlq`") into a broker error: an *broker.Error whose kind is one of
// broker.ErrNotFound, ErrAccessDenied, ErrConflict, ErrUnreachable or
// ErrUnsupported, and whose text is one lowercase line with the fix.
// Cancellation keeps context.Canceled / DeadlineExceeded in the chain. Other
// API errors keep SQS's code and message, but no SDK type. A nil err is nil;
// an error that is already a broker error is only prefixed with op.
func translateErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*broker.Error](err); ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, context.Canceled)
	}
	if ne := netErr(err); ne != nil && !errors.Is(err, context.DeadlineExceeded) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("cannot reach SQS (%s): check %s, %s and the network", ne.Error(), broker.OptEndpointURL, broker.OptRegion)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return broker.Hintf("%s: timed out (raise %s if the endpoint is slow): %w", op, broker.OptTimeout, context.DeadlineExceeded)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return apiErr(op, ae.ErrorCode(), ae.ErrorMessage())
	}
	if isCredentialsErr(err) {
		return credentialsErr(op, err)
	}
	if ne := netErr(err); ne != nil {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("cannot reach SQS (%s): check %s, %s and the network", ne.Error(), broker.OptEndpointURL, broker.OptRegion)}
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("cannot reach SQS: check %s, %s and the network", broker.OptEndpointURL, broker.OptRegion)}
	}
	return fmt.Errorf("%s: %s", op, lastLine(err))
}

// apiErr maps an SQS error code. JSON-protocol servers answer with the short
// code (QueueDoesNotExist), query-protocol ones with the legacy one
// (AWS.SimpleQueueService.NonExistentQueue); both are handled.
func apiErr(op, code, msg string) error {
	short := code
	if i := strings.LastIndex(short, "#"); i >= 0 {
		short = short[i+1:]
	}
	short = strings.TrimPrefix(short, "AWS.SimpleQueueService.")
	switch short {
	case "NonExistentQueue", "QueueDoesNotExist", "QueueDeletedRecently":
		return &broker.Error{Kind: broker.ErrNotFound, Op: op,
			Hint: broker.Hintf("queue does not exist: check the queue name, URL or ARN and %s, or list queues with %s", broker.OptRegion, broker.Cmd("queues"))}
	case "ResourceNotFoundException":
		return &broker.Error{Kind: broker.ErrNotFound, Op: op, Msg: "not found: " + msg}
	case "AccessDenied", "AccessDeniedException", "KmsAccessDenied", "KmsDisabled", "KmsInvalidKeyUsage", "KmsInvalidState", "KmsNotFound", "KmsOptInRequired":
		return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
			Msg: "permission denied (" + code + "): the credentials in use lack the IAM permission for this; check AWS_PROFILE or the role's policy"}
	case "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "IncompleteSignature", "MissingAuthenticationToken", "InvalidSecurity", "AuthFailure", "OptInRequired":
		return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
			Msg: "credentials rejected (" + code + "): check AWS_PROFILE / AWS_ACCESS_KEY_ID, or run `aws sso login` for SSO profiles"}
	case "ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired":
		return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
			Msg: "AWS credentials have expired (" + code + "): run `aws sso login` (or refresh the credentials of AWS_PROFILE) and retry"}
	case "QueueAlreadyExists", "QueueNameExists":
		return &broker.Error{Kind: broker.ErrConflict, Op: op,
			Msg: "a queue with this name already exists with different attributes: " + msg}
	case "PurgeQueueInProgress":
		return &broker.Error{Kind: broker.ErrConflict, Op: op,
			Msg: "a purge of this queue is already in progress: SQS allows one purge per queue every 60 seconds; wait a minute and retry"}
	case "UnsupportedOperation", "UnknownOperationException", "InvalidAction", "UnknownOperation", "NotImplemented":
		return &broker.Error{Kind: broker.ErrUnsupported, Op: op, Msg: "the SQS endpoint does not support this call (" + code + ")"}
	}
	if msg == "" {
		return fmt.Errorf("%s: %s", op, code)
	}
	return fmt.Errorf("%s: %s (%s)", op, firstLine(msg), code)
}

// isPermissionCode: the caller is known but not allowed (as opposed to
// unknown or expired credentials).
func isPermissionCode(code string) bool {
	return code == "AccessDenied" || code == "AccessDeniedException"
}

func isCredentialsErr(err error) bool {
	var ite *ssocreds.InvalidTokenError
	if errors.As(err, &ite) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "failed to retrieve credentials") ||
		strings.Contains(s, "failed to refresh cached credentials") ||
		strings.Contains(s, "no EC2 IMDS role found") ||
		strings.Contains(s, "anonymous credentials")
}

// credentialsErr explains a failure to load credentials. The SDK's text names
// files and providers, never secret values.
func credentialsErr(op string, err error) error {
	var ite *ssocreds.InvalidTokenError
	s := err.Error()
	switch {
	case errors.As(err, &ite), strings.Contains(s, "expired"), strings.Contains(s, "sso"), strings.Contains(s, "SSO"):
		return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
			Msg: "AWS credentials are missing or expired: run `aws sso login` (with the profile of AWS_PROFILE) and retry"}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: loading AWS credentials: %w", op, err)
	}
	return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
		Msg: "no AWS credentials found: set AWS_PROFILE (run `aws sso login` for SSO profiles) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}
}

// configErr explains a failure of config.LoadDefaultConfig.
func configErr(err error) error {
	var pe config.SharedConfigProfileNotExistError
	if errors.As(err, &pe) {
		return &broker.Error{Kind: broker.ErrNotFound, Op: "open sqs",
			Msg: fmt.Sprintf("AWS profile %q not found in the shared config files: check AWS_PROFILE or the profile of the dlq context, or list profiles with `aws configure list-profiles`", pe.Profile)}
	}
	return fmt.Errorf("open sqs: loading AWS configuration: %s: check AWS_PROFILE and ~/.aws/config", lastLine(err))
}

// netErr finds the network failure under an SDK error, if any.
func netErr(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lastLine keeps the innermost cause of a long SDK error chain readable.
func lastLine(err error) string {
	s := firstLine(err.Error())
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
