package cmd

import (
	"context"
	"log/slog"
	"strconv"
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
	AuditLog   string        // --audit-log
	Quiet      bool          // --quiet: no warnings about how dlq is used
	// AdapterFlags are the values of the flags the adapters declare
	// (--region, --management-url, …), by flag name; a switch is "true".
	AdapterFlags map[broker.Option]string
}

// Adapter is the value of the adapters' flag o, "" when not given.
func (o *GlobalOptions) Adapter(opt broker.Option) string { return o.AdapterFlags[opt] }

// SetAdapter sets the adapters' flag opt, as the command line does.
func (o *GlobalOptions) SetAdapter(opt broker.Option, v string) {
	if o.AdapterFlags == nil {
		o.AdapterFlags = map[broker.Option]string{}
	}
	o.AdapterFlags[opt] = v
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

// adapterFlag is the pflag.Value of a flag an adapter declares; it keeps
// its value in GlobalOptions.AdapterFlags.
type adapterFlag struct {
	o  *GlobalOptions
	fl broker.Flag
}

func (a *adapterFlag) String() string { return a.o.Adapter(a.fl.Option) }
func (a *adapterFlag) Type() string {
	if a.fl.Bool {
		return "bool"
	}
	return "string"
}

func (a *adapterFlag) Set(v string) error {
	if a.fl.Bool {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		v = ""
		if b {
			v = "true"
		}
	}
	a.o.SetAdapter(a.fl.Option, v)
	return nil
}
