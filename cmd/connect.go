package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	"github.com/dlq-tools/dlq/broker/sqs"
)

// Broker, queue and destination references (also in `dlq help brokers`).
//
// A BROKER is given by --broker, which takes a URL or a context name:
//
//	amqp://USER@HOST:5672/VHOST    RabbitMQ; amqps:// for TLS (--ca-file,
//	                               --cert-file, --key-file). The password
//	                               comes from the URL, else the environment
//	                               variable the context names (password_env),
//	                               else DLQ_PASSWORD. --auth external logs in
//	                               with the client certificate instead. The
//	                               management API takes --management-user
//	                               (DLQ_MANAGEMENT_PASSWORD) and its own TLS
//	                               files, else the AMQP ones.
//	amqp://USER@H1:5672,H2:5672/VHOST
//	                               several nodes of one broker (a cluster),
//	                               tried in order; a context may list more
//	                               with `nodes:`. --management-url takes one
//	                               URL or one per node, comma-separated.
//	sqs://  sqs://REGION           Amazon SQS with the AWS config chain;
//	                               --region, --endpoint-url.
//	file://PATH                    an archive (.jsonl or .jsonl.gz).
//	demo:                          the embedded sample archive.
//	NAME                           a context from the config file.
//
// Without --broker: --context (or DLQ_CONTEXT), else the config file's
// current-context, else the DLQ_BROKER environment variable. A URL given
// with --broker is used on its own; no context applies to it. Flags
// (--management-url, --region, --endpoint-url, TLS files) override the
// context's values.
//
// A QUEUE (the argument of peek, stats, export, redrive, discard, purge) is:
//
//	NAME                           a queue on the broker above
//	file://PATH                    every message of an archive
//	demo:  demo:NAME               the sample archive, or one queue of it
//	https://sqs.REGION.amazonaws.com/ACCOUNT/NAME
//	arn:aws:sqs:REGION:ACCOUNT:NAME
//	                               an SQS queue in that region, whatever
//	                               --broker says (an http:// URL of an
//	                               emulator uses the URL's host as endpoint)
//
// An amqp:// URL is not a queue reference: name the broker with --broker and
// the queue by name.
//
// A DESTINATION (redrive --to) is:
//
//	origin | queue:NAME | exchange:NAME[:ROUTING-KEY]
//	                               on the source's own broker
//	file://PATH                    appended to an archive (created if missing)
//	BROKER#DEST                    DEST (one of the forms above) on another
//	                               broker, given as a URL or a context name:
//	                                 amqp://ops@rabbit-b:5672/shop#queue:orders
//	                                 sqs://eu-west-1#queue:orders
//	                                 prod-rabbit#exchange:orders.x:order.created
//	an SQS queue URL or ARN        that queue (same as ARN#queue:ARN)

// brokerSpec is a broker reference with the settings to open it.
type brokerSpec struct {
	Ref     string // amqp://…, amqps://…, sqs://…, file://…, demo:
	Context string // the context it came from; "" for a URL
	Via     string // how it was chosen, for messages
	BrokerContext
	fromFlag map[string]bool // the context fields a flag set
}

// knownScheme reports whether s is a broker URL rather than a context name.
func (f *Factory) knownScheme(s string) bool { return f.adapters().IsRef(s) }

// resolveBroker works out the default broker without connecting.
func (f *Factory) resolveBroker() (brokerSpec, error) {
	o := f.Options
	if o.Broker != "" {
		if f.knownScheme(o.Broker) {
			return f.withFlags(brokerSpec{Ref: o.Broker, Via: "--broker"}), nil
		}
		return f.contextSpec(o.Broker, "--broker")
	}
	if o.Context != "" {
		return f.contextSpec(o.Context, "--context")
	}
	cfg, err := f.LoadConfig()
	if err != nil {
		return brokerSpec{}, err
	}
	if cfg.CurrentContext != "" {
		return f.contextSpec(cfg.CurrentContext, "current-context")
	}
	if env := os.Getenv("DLQ_BROKER"); env != "" {
		if f.knownScheme(env) {
			s := brokerSpec{Ref: env, Via: "DLQ_BROKER"}
			for _, fl := range f.adapters().Flags() {
				if v := os.Getenv(fl.Env); fl.Env != "" && v != "" {
					setField(&s.BrokerContext, fl.Field, v)
				}
			}
			return f.withFlags(s), nil
		}
		return f.contextSpec(env, "DLQ_BROKER")
	}
	return brokerSpec{}, fmt.Errorf("no broker given: pass `--broker URL` (%s), choose a context with `--context NAME`, or set current-context in %s", f.adapters().Schemes(), cfg.Path())
}

// contextSpec resolves a context name, with flags overriding its values.
func (f *Factory) contextSpec(name, via string) (brokerSpec, error) {
	cfg, err := f.LoadConfig()
	if err != nil {
		return brokerSpec{}, err
	}
	c, err := cfg.Context(name)
	if err != nil {
		return brokerSpec{}, err
	}
	return f.withFlags(brokerSpec{Ref: c.Broker, Context: name, Via: via, BrokerContext: *c}), nil
}

func (f *Factory) withFlags(s brokerSpec) brokerSpec {
	o := f.Options
	s.fromFlag = map[string]bool{}
	for _, fl := range f.adapters().Flags() {
		if v := o.Adapter(fl.Option); v != "" {
			setField(&s.BrokerContext, fl.Field, v)
			s.fromFlag[fl.Field] = true
		}
	}
	return s
}

// specFor resolves a URL or context name given somewhere other than
// --broker (a destination's broker part).
func (f *Factory) specFor(ref, via string) (brokerSpec, error) {
	if f.knownScheme(ref) {
		return f.withFlags(brokerSpec{Ref: ref, Via: via}), nil
	}
	return f.contextSpec(ref, via)
}

// readOnly reports whether the default broker's context is read-only. A
// broker that cannot be resolved is not read-only here: opening it fails.
func (f *Factory) contextReadOnly() bool {
	s, err := f.resolveBroker()
	return err == nil && s.ReadOnly
}

// wireBrokers sets the factory's Open functions to the real adapters.
func wireBrokers(f *Factory) {
	f.OpenBroker = func(ctx context.Context) (broker.Broker, error) {
		s, err := f.resolveBroker()
		if err != nil {
			return nil, err
		}
		return f.openSpec(ctx, s)
	}
	f.OpenQueue = f.openQueue
	f.OpenDestination = f.openDestination
	f.ReadOnly = f.contextReadOnly
}

func (f *Factory) timeout() time.Duration {
	if f.Options.Timeout > 0 {
		return f.Options.Timeout
	}
	return 30 * time.Second
}

// openSpec connects to a resolved broker within --timeout.
func (f *Factory) openSpec(ctx context.Context, s brokerSpec) (broker.Broker, error) {
	ref := strings.TrimSpace(s.Ref)
	if ref == "" {
		return nil, fmt.Errorf("context `%s` has no broker URL: add `broker:` in %s", s.Context, f.ConfigPath())
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	start := time.Now()
	b, err := f.openRef(ctx, s, ref)
	if err != nil {
		return nil, f.openError(ctx, s, err, time.Since(start))
	}
	f.Logger.Debug("broker opened", "broker", b.String(), "via", s.Via, "took", time.Since(start))
	return b, nil
}

func (f *Factory) openRef(ctx context.Context, s brokerSpec, ref string) (broker.Broker, error) {
	reg := f.adapters()
	if a, ok := reg.Lookup(ref); ok {
		if a.URLSecrets {
			f.warnURLPassword(s, a)
		}
		set := f.settings(s)
		set.Ref = ref
		return a.Open(ctx, set)
	}
	if a, _, ok := reg.QueueRef(ref, f.defaultSettings); ok {
		return nil, fmt.Errorf("%s is %s, not a broker: pass it as the queue argument, and `--broker %s` if needed", broker.Redact(ref), a.QueueNoun, a.Example)
	}
	return nil, fmt.Errorf("unknown broker %q: use %s or a context name (`dlq contexts` lists them)", broker.Redact(ref), reg.Schemes())
}

// openError makes a failed open one line that names the fix.
func (f *Factory) openError(ctx context.Context, s brokerSpec, err error, took time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) || (ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.Canceled)) {
		if !broker.NamesOption(err, broker.OptTimeout) {
			return fmt.Errorf("%w: no answer within %s: check the host and port, or raise `--timeout`", err, f.timeout())
		}
	}
	if ce := (*broker.ContextError)(nil); s.Context != "" && !errors.As(err, &ce) {
		return fmt.Errorf("context `%s`: %w", s.Context, err)
	}
	return err
}

// warnURLPassword warns, once, on a terminal and without `--quiet`, that a
// password in a URL on the command line shows in the process list.
func (f *Factory) warnURLPassword(s brokerSpec, a broker.Adapter) {
	if f.Options.Quiet || !f.IO.IsStderrTTY() || f.urlPasswordWarned.Load() {
		return
	}
	var flag string
	if (s.Via == "--broker" || s.Via == "--to") && s.Context == "" && urlHasPassword(s.Ref) {
		flag = s.Via
	} else {
		for _, fl := range a.Flags {
			if v := f.Options.Adapter(fl.Option); !fl.Bool && v != "" && urlHasPassword(v) {
				flag = "--" + string(fl.Option)
				break
			}
		}
	}
	if flag == "" {
		return
	}
	if f.urlPasswordWarned.Swap(true) {
		return
	}
	f.IO.Statusf("warning: the password in the `%s` URL shows in the process list and shell history: use DLQ_PASSWORD (DLQ_MANAGEMENT_PASSWORD) or a context's `password_env` instead; `--quiet` hides this", flag)
}

// urlHasPassword reports a URL (or a list of URLs) whose user information
// holds a password.
func urlHasPassword(ref string) bool { return broker.HasPassword(ref) }

// openQueue opens the broker a queue reference lives on.
func (f *Factory) openQueue(ctx context.Context, ref string) (broker.Broker, string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, "", flagErrorf("no queue given: pass a queue name, `file://PATH`, or an SQS queue URL or ARN")
	}
	reg := f.adapters()
	if a, ok := reg.Lookup(ref); ok {
		if a.QueueIn == nil {
			return nil, "", flagErrorf("a queue is named, not given as a broker URL: pass the broker with `--broker %s` and the queue by name", broker.Redact(ref))
		}
		brokerRef, queue, _ := a.QueueIn(ref)
		b, err := f.openSpec(ctx, brokerSpec{Ref: brokerRef, Via: "queue"})
		return b, queue, err
	}
	if _, set, ok := reg.QueueRef(ref, f.defaultSettings); ok {
		b, err := f.openSpec(ctx, f.specOf(set, "queue"))
		return b, ref, err
	}
	b, err := f.OpenBroker(ctx)
	return b, ref, err
}

// localDestination reports a destination on the source's broker, which may
// hold a '#' of its own (a routing key such as "orders.#").
func localDestination(ref string) bool {
	return ref == "origin" || strings.HasPrefix(ref, "queue:") || strings.HasPrefix(ref, "exchange:")
}

// openDestination opens the broker of a redrive destination. A destination
// on the source's own broker (origin, queue:…, exchange:…) returns a nil
// broker and the destination unchanged. See the reference syntax above.
func (f *Factory) openDestination(ctx context.Context, ref string) (broker.Broker, string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, "", flagErrorf("empty `--to`: use origin, queue:NAME, exchange:NAME[:KEY], file://PATH or BROKER#DEST")
	}
	reg := f.adapters()
	if a, ok := reg.Lookup(ref); ok && a.Target != nil {
		return a.Target(broker.Settings{Ref: ref}, "dlq "+versionString())
	}
	if localDestination(ref) {
		return nil, ref, nil
	}
	if brokerPart, dest, ok := strings.Cut(ref, "#"); ok {
		if dest == "" {
			return nil, "", flagErrorf("`--to %s` names no destination after `#`: add queue:NAME, exchange:NAME[:KEY] or origin", broker.Redact(ref))
		}
		if brokerPart == "" {
			return nil, "", flagErrorf("`--to %s` names no broker before `#`: give a broker URL or context name, or drop the `#`", ref)
		}
		s, err := f.specFor(brokerPart, "--to")
		if err != nil {
			return nil, "", err
		}
		if a, ok := reg.Lookup(s.Ref); ok && a.QueueRef != nil {
			if _, isQueue := a.QueueRef(dest, f.settings(s)); isQueue {
				dest = "queue:" + dest
			}
		}
		b, err := f.openSpec(ctx, s)
		return b, dest, err
	}
	if _, set, ok := reg.QueueRef(ref, f.defaultSettings); ok {
		b, err := f.openSpec(ctx, f.specOf(set, "queue"))
		return b, "queue:" + ref, err
	}
	if f.knownScheme(ref) {
		return nil, "", flagErrorf("`--to %s` names a broker but no destination: append `#queue:NAME`, `#exchange:NAME[:KEY]` or `#origin`", broker.Redact(ref))
	}
	return nil, ref, nil
}

// adapters is the registry of the brokers dlq opens: the only list of
// adapters, and the only place cmd names them.
func (f *Factory) adapters() *broker.Registry {
	if f.Registry == nil {
		f.Registry = dlqAdapters()
	}
	return f.Registry
}

// dlqAdapters is the registry of dlq's own adapters, for what reads the
// config file without a factory.
var dlqAdapters = sync.OnceValue(func() *broker.Registry {
	return broker.NewRegistry(rabbitmq.Adapter(), sqs.Adapter(), archive.Adapter(), archive.DemoAdapter())
})

// settings are s in the neutral words an adapter reads: the context's
// fields by their config keys.
func (f *Factory) settings(s brokerSpec) broker.Settings {
	set := broker.Settings{
		Ref: s.Ref, Context: s.Context, Fields: map[string]string{}, Lists: map[string][]string{},
		FromFlag: s.fromFlag, Timeout: f.timeout(), Logger: f.Logger,
		ReadOnly: func() bool { return f.CheckWritable("") != nil }, LookupEnv: os.LookupEnv,
	}
	v := reflect.ValueOf(s.BrokerContext)
	for i := 0; i < v.NumField(); i++ {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "broker" {
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			if fv.String() != "" {
				set.Fields[key] = fv.String()
			}
		case reflect.Bool:
			if fv.Bool() {
				set.Fields[key] = "true"
			}
		case reflect.Slice:
			if fv.Len() > 0 {
				set.Lists[key] = fv.Interface().([]string)
			}
		}
	}
	return set
}

// setField sets the field of c whose config key is key; a boolean field
// is set by "true".
func setField(c *BrokerContext, key, v string) {
	rv := reflect.ValueOf(c).Elem()
	for i := 0; i < rv.NumField(); i++ {
		if k, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ","); k == key {
			switch fv := rv.Field(i); fv.Kind() {
			case reflect.String:
				fv.SetString(v)
			case reflect.Bool:
				fv.SetBool(v == "true")
			}
			return
		}
	}
}

// specOf is the brokerSpec of settings an adapter made.
func (f *Factory) specOf(set broker.Settings, via string) brokerSpec {
	s := brokerSpec{Ref: set.Ref, Context: set.Context, Via: via, fromFlag: set.FromFlag}
	v := reflect.ValueOf(&s.BrokerContext).Elem()
	for i := 0; i < v.NumField(); i++ {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			if key != "broker" {
				fv.SetString(set.Fields[key])
			}
		case reflect.Bool:
			fv.SetBool(set.Fields[key] == "true")
		case reflect.Slice:
			if l := set.Lists[key]; l != nil {
				fv.Set(reflect.ValueOf(l))
			}
		}
	}
	s.Broker = set.Ref
	return s
}

// defaultSettings are the default broker's settings when a's, else the
// flags' alone: what a queue reference of a's own (an SQS queue URL) is
// opened with.
func (f *Factory) defaultSettings(a broker.Adapter) broker.Settings {
	if def, err := f.resolveBroker(); err == nil {
		if da, ok := f.adapters().Lookup(def.Ref); ok && da.Same(a) {
			return f.settings(def)
		}
	}
	return f.settings(f.withFlags(brokerSpec{Via: "queue"}))
}
