package cmd

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// GlobalOptions are the persistent flags every command shares.
type GlobalOptions struct {
	Broker     string        // --broker: amqp(s)://…, sqs://[region], file://…, demo:
	Context    string        // --context / DLQ_CONTEXT
	ConfigPath string        // --config
	Output     string        // --output
	JQ         string        // --jq, on commands that write JSON
	ReadOnly   bool          // --read-only
	Yes        bool          // --yes
	NoColor    bool          // --no-color
	Timeout    time.Duration // --timeout: connecting and each broker call
	Region     string        // --region (SQS)
	Endpoint   string        // --endpoint-url (SQS)
	MgmtURL    string        // --management-url (RabbitMQ)
	CAFile     string        // --ca-file
	CertFile   string        // --cert-file
	KeyFile    string        // --key-file
	Insecure   bool          // --insecure-skip-verify
	AuditLog   string        // --audit-log
	Quiet      bool          // --quiet: no warnings about how dlq is used
	// RabbitMQ login and management API credentials and TLS files.
	Auth         string // --auth plain|external
	MgmtUser     string // --management-user
	MgmtCAFile   string // --management-ca-file
	MgmtCertFile string // --management-cert-file
	MgmtKeyFile  string // --management-key-file
}

// Factory holds what commands share: streams, global options, and the
// functions that open brokers. Tests replace the functions with fakes.
type Factory struct {
	IO      *IOStreams
	Options *GlobalOptions
	Logger  *slog.Logger
	Now     func() time.Time
	// Args is the command line as typed, for the audit log (redacted there).
	Args []string

	// OpenBroker opens the broker named by --broker, the context, or
	// DLQ_BROKER.
	OpenBroker func(ctx context.Context) (broker.Broker, error)
	// OpenQueue opens the broker that a queue reference lives on and returns
	// the queue's name on it. A reference is a queue name on the default
	// broker, a file:// archive, an SQS queue URL or ARN, or demo:.
	OpenQueue func(ctx context.Context, ref string) (broker.Broker, string, error)
	// OpenDestination opens the broker of a redrive destination that names
	// another broker (an amqp:// or sqs:// prefix, a file://); the second
	// result is the rest of the destination.
	OpenDestination func(ctx context.Context, ref string) (broker.Broker, string, error)
	// ReadOnly reports whether mutations are refused (flag or context).
	ReadOnly func() bool
	// Registry lists the broker adapters; nil: dlq's own (adapters).
	Registry *broker.Registry

	jq *jqFilter // while `--jq` holds back the output
	// stdout counts a JSON command's output (countJSON).
	stdout *countingWriter

	urlPasswordWarned atomic.Bool // the password-in-URL warning was printed
}

// CheckWritable refuses op before it changes anything: with an ErrReadOnly
// error when dlq runs read-only, and when the audit log that must record op
// cannot be opened for writing.
func (f *Factory) CheckWritable(op string) error {
	if f.Options.ReadOnly || (f.ReadOnly != nil && f.ReadOnly()) {
		return broker.Errorf(broker.ErrReadOnly, op, "refused in read-only mode: drop `--read-only` or use a context without `read_only: true`")
	}
	return f.checkAuditLog(op)
}
