// Package sqs is dlq's Amazon SQS adapter. It is the only place that speaks
// aws-sdk-go-v2; everything it returns is in the neutral vocabulary of
// package broker, and every SDK error is translated by translateErr into a
// broker error that names the fix.
//
// Queues are addressed by name, URL or ARN everywhere (see queueURL).
//
// Internals shared by every file of the package:
//
//   - Code in this package calls SQS only through Broker.api, the small
//     sqsAPI interface below (the calls dlq makes, nothing more): the SDK
//     client, or a fake in unit tests.
//   - queueURL resolves a queue name, URL or ARN to its URL.
//   - queueARN and attributes read a queue's ARN and all its attributes.
//   - translateErr turns an SDK error into a broker error with the operation
//     and the fix.
package sqs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/dlq-tools/dlq/broker"
)

// Config selects the AWS account, region and endpoint. Empty fields fall back
// to the standard AWS configuration chain: AWS_PROFILE, AWS_REGION,
// AWS_DEFAULT_REGION, the shared config and credentials files (including SSO
// profiles), environment credentials and instance roles.
type Config struct {
	// Region overrides AWS_REGION and the profile's region.
	Region string
	// Endpoint is the base URL of the SQS service (an emulator or a VPC
	// endpoint). Empty keeps the SDK's own resolution, which honours
	// AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL.
	Endpoint string
	// Profile overrides AWS_PROFILE.
	Profile string
	// Timeout bounds Open (loading credentials and the first call) and
	// establishing each connection. 0 means 15 seconds.
	Timeout time.Duration
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
}

// sqsAPI is the part of the SQS API that this package calls.
type sqsAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListQueues(ctx context.Context, in *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	PurgeQueue(ctx context.Context, in *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	// Server-side moves (movetask.go).
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
	// Topology changes (topology.go).
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	SetQueueAttributes(ctx context.Context, in *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

var _ sqsAPI = (*sqs.Client)(nil)

// Broker is an open SQS client for one account and region.
type Broker struct {
	// api is every call this package makes: the SDK client, or a fake in
	// tests.
	api sqsAPI

	region   string
	endpoint string // the base endpoint in use, "" for the AWS default
	log      *slog.Logger

	mu      sync.Mutex
	urls    map[string]string // queue name or ARN → URL
	arns    map[string]string // URL → ARN
	origins map[string]originCache
	infos   map[string]queueInfo // URL → what sending needs
}

var (
	_ broker.Broker = (*Broker)(nil)
)

const defaultTimeout = 15 * time.Second

// Open loads the AWS configuration, builds the SQS client and checks, within
// cfg.Timeout, that credentials exist and the endpoint answers.
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = timeout }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = timeout
			t.MaxIdleConnsPerHost = 64
		})
	// The SDK logs warnings (IMDS fallbacks, retries) to stderr by default;
	// dlq reports failures itself, one line each, so the SDK stays quiet.
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient), config.WithLogger(logging.Nop{})}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, configErr(err)
	}
	if awsCfg.Region == "" {
		return nil, broker.Hintf("open sqs: no AWS region configured: pass %s, set AWS_REGION, or set a region in the profile of AWS_PROFILE", broker.OptRegion)
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, broker.Hintf("open sqs: invalid endpoint %q: %s must be a URL such as http://127.0.0.1:9324", broker.Redact(cfg.Endpoint), broker.OptEndpointURL)
		}
	}
	client := sqs.NewFromConfig(awsCfg, OwnRequestBodies, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	b := newBroker(client, awsCfg.Region, log)
	if ep := client.Options().BaseEndpoint; ep != nil {
		b.endpoint = *ep
	}

	// Credentials: fail here, with the fix, rather than on the first call.
	if awsCfg.Credentials == nil {
		return nil, broker.Errorf(broker.ErrAccessDenied, "open "+b.String(),
			"no AWS credentials found: set AWS_PROFILE (and run `aws sso login` for SSO profiles) or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return nil, credentialsErr("open "+b.String(), err)
	}
	// One cheap call proves the endpoint answers and the credentials are
	// accepted. AccessDenied is fine here: a role may lack sqs:ListQueues and
	// still be allowed on the queues it names.
	// Not retried: a refused connection should say so at once.
	_, err = b.api.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)},
		func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		terr := translateErr("open "+b.String(), err)
		var ae interface{ ErrorCode() string }
		if errors.Is(terr, broker.ErrAccessDenied) && errors.As(err, &ae) && isPermissionCode(ae.ErrorCode()) {
			b.log.Debug("sqs: ListQueues denied; continuing", "err", terr)
			return b, nil
		}
		return nil, terr
	}
	b.log.Debug("sqs: opened", "broker", b.String())
	return b, nil
}

func newBroker(api sqsAPI, region string, log *slog.Logger) *Broker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Broker{
		api:     api,
		region:  region,
		log:     log,
		urls:    map[string]string{},
		arns:    map[string]string{},
		origins: map[string]originCache{},
		infos:   map[string]queueInfo{},
	}
}

// System is broker.SQS.
func (b *Broker) System() broker.System { return broker.SQS }

// String is "sqs://REGION", plus the endpoint when one is set. It never
// contains credentials.
func (b *Broker) String() string {
	s := "sqs://" + b.region
	if b.endpoint != "" {
		s += " (endpoint " + broker.Redact(b.endpoint) + ")"
	}
	return s
}

// Region is the AWS region in use.
func (b *Broker) Region() string { return b.region }

// Close ends the broker's use. The SDK client holds no connection that
// needs an orderly close; idle HTTP connections time out on their own.
func (b *Broker) Close() error { return nil }

// ownBody gives net/http its own copy of each request body. The SDK may
// close or rewind a request's body once the response has arrived, while
// net/http, having sent the body, still reads it to check for extra bytes;
// that read then fails, the transport closes the connection under the
// response, and the SDK retries a request the server already answered. A
// ReceiveMessage retried that way leaves the first answer's messages hidden
// for their visibility timeout. SQS requests are small (at most 1 MiB).
type ownBody struct{ c sqs.HTTPClient }

// OwnRequestBodies is an SDK client option that wraps the client's HTTP
// client with ownBody. Every SQS client dlq's tests and benchmarks build
// themselves needs it as much as the adapter's.
func OwnRequestBodies(o *sqs.Options) {
	if o.HTTPClient == nil {
		o.HTTPClient = awshttp.NewBuildableClient()
	}
	o.HTTPClient = ownBody{o.HTTPClient}
}

func (o ownBody) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		r.ContentLength = int64(len(b))
	}
	return o.c.Do(r)
}
