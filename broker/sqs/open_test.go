package sqs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// openTest opens the fauxqs emulator.
func openTest(t *testing.T) *Broker {
	t.Helper()
	env := brokertest.SQS(t)
	return openAt(t, env.Endpoint)
}

func openAt(t *testing.T, endpoint string) *Broker {
	t.Helper()
	b, err := Open(context.Background(), Config{Endpoint: endpoint, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open(%s): %v", endpoint, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// isolateAWSConfig points the SDK at empty config files so that the
// developer's own ~/.aws never leaks into a test.
func isolateAWSConfig(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_DEFAULT_PROFILE", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
}

func TestOpenString(t *testing.T) {
	env := brokertest.SQS(t)
	b := openAt(t, env.Endpoint)
	if b.System() != broker.SQS {
		t.Errorf("System() = %q", b.System())
	}
	want := "sqs://" + os.Getenv("AWS_REGION") + " (endpoint " + env.Endpoint + ")"
	if b.String() != want {
		t.Errorf("String() = %q, want %q", b.String(), want)
	}
}

func TestOpenHonoursSDKEndpointEnv(t *testing.T) {
	env := brokertest.SQS(t)
	t.Setenv("AWS_ENDPOINT_URL_SQS", env.Endpoint)
	b, err := Open(context.Background(), Config{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open with AWS_ENDPOINT_URL_SQS: %v", err)
	}
	defer b.Close()
	if !strings.Contains(b.String(), env.Endpoint) {
		t.Errorf("String() = %q, want the endpoint of AWS_ENDPOINT_URL_SQS", b.String())
	}
	if _, err := b.queueURL(context.Background(), "dlqt-none-such-queue"); !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("look up a missing queue through AWS_ENDPOINT_URL_SQS: %v, want not found", err)
	}
}

func TestOpenErrors(t *testing.T) {
	env := brokertest.SQS(t)
	tests := []struct {
		name     string
		setenv   map[string]string
		cfg      Config
		kind     error
		contains []string
	}{
		{
			name:     "no region",
			setenv:   map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": ""},
			cfg:      Config{Endpoint: env.Endpoint},
			contains: []string{"`region`", "AWS_REGION"},
		},
		{
			name:     "no credentials",
			setenv:   map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""},
			cfg:      Config{Endpoint: env.Endpoint, Region: "us-east-1"},
			kind:     broker.ErrAccessDenied,
			contains: []string{"AWS_PROFILE", "aws sso login"},
		},
		{
			name:     "unknown profile",
			cfg:      Config{Endpoint: env.Endpoint, Profile: "dlq-no-such-profile"},
			kind:     broker.ErrNotFound,
			contains: []string{"dlq-no-such-profile", "AWS_PROFILE"},
		},
		{
			name:     "unreachable",
			cfg:      Config{Endpoint: "http://127.0.0.1:1", Region: "us-east-1", Timeout: 5 * time.Second},
			kind:     broker.ErrUnreachable,
			contains: []string{"`endpoint-url`"},
		},
		{
			name:     "bad endpoint",
			cfg:      Config{Endpoint: "127.0.0.1:9324", Region: "us-east-1"},
			contains: []string{"`endpoint-url`"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWSConfig(t)
			for k, v := range tt.setenv {
				t.Setenv(k, v)
			}
			if tt.cfg.Timeout == 0 {
				tt.cfg.Timeout = 10 * time.Second
			}
			b, err := Open(context.Background(), tt.cfg)
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %q is not %v", err, tt.kind)
			}
			t.Logf("error: %v", err)
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, c := range tt.contains {
				if !strings.Contains(msg, c) {
					t.Errorf("error %q does not mention %s", msg, c)
				}
			}
		})
	}
}

func TestTranslateErr(t *testing.T) {
	tests := []struct {
		code     string
		kind     error
		contains string
	}{
		{"AWS.SimpleQueueService.NonExistentQueue", broker.ErrNotFound, "`dlq queues`"},
		{"QueueDoesNotExist", broker.ErrNotFound, "`region`"},
		{"com.amazonaws.sqs#QueueDoesNotExist", broker.ErrNotFound, "does not exist"},
		{"AccessDenied", broker.ErrAccessDenied, "permission"},
		{"InvalidClientTokenId", broker.ErrAccessDenied, "aws sso login"},
		{"ExpiredToken", broker.ErrAccessDenied, "aws sso login"},
		{"RequestExpired", broker.ErrAccessDenied, "expired"},
		{"QueueAlreadyExists", broker.ErrConflict, "already exists"},
		{"AWS.SimpleQueueService.PurgeQueueInProgress", broker.ErrConflict, "60 seconds"},
		{"UnknownOperationException", broker.ErrUnsupported, "does not support"},
		{"InvalidParameterValue", nil, "bad value"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			err := translateErr("read queue `q`", &smithy.GenericAPIError{Code: tt.code, Message: "bad value"})
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("%q is not %v", err, tt.kind)
			}
			if !strings.HasPrefix(err.Error(), "read queue `q`: ") || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q lacks the op or %q", err, tt.contains)
			}
			var ae smithy.APIError
			if errors.As(err, &ae) {
				t.Errorf("SDK error type leaked through: %T", ae)
			}
		})
	}
	for _, cause := range []error{
		fmt.Errorf("failed to retrieve credentials: %w", &ssocreds.InvalidTokenError{Err: errors.New("the SSO session has expired")}),
		fmt.Errorf("failed to refresh cached credentials, %w", errors.New("refresh cached SSO token failed")),
	} {
		err := translateErr("open sqs://eu-west-1", cause)
		if !errors.Is(err, broker.ErrAccessDenied) || !strings.Contains(err.Error(), "aws sso login") {
			t.Errorf("expired SSO credentials: %v", err)
		}
	}
	if err := translateErr("open", fmt.Errorf("failed to retrieve credentials: %w", errors.New("no EC2 IMDS role found"))); !errors.Is(err, broker.ErrAccessDenied) || !strings.Contains(err.Error(), "AWS_PROFILE") {
		t.Errorf("missing credentials: %v", err)
	}
	if translateErr("x", nil) != nil {
		t.Error("translateErr(nil) != nil")
	}
	if err := translateErr("x", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancellation lost: %v", err)
	}
}
