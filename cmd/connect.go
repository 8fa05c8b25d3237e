package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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
}

// knownScheme reports whether s is a broker URL rather than a context name.
func knownScheme(s string) bool {
	return strings.Contains(s, "://") || s == "demo:" || strings.HasPrefix(s, "demo:") || s == "sqs:"
}

// resolveBroker works out the default broker without connecting.
func (f *Factory) resolveBroker() (brokerSpec, error) {
	o := f.Options
	if o.Broker != "" {
		if knownScheme(o.Broker) {
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
		if knownScheme(env) {
			s := brokerSpec{Ref: env, Via: "DLQ_BROKER"}
			s.ManagementURL = os.Getenv("DLQ_MANAGEMENT_URL")
			return f.withFlags(s), nil
		}
		return f.contextSpec(env, "DLQ_BROKER")
	}
	return brokerSpec{}, fmt.Errorf("no broker given: pass `--broker URL` (amqp://, sqs://, file://, demo:), choose a context with `--context NAME`, or set current-context in %s", cfg.Path())
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
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&s.ManagementURL, o.MgmtURL)
	set(&s.Region, o.Region)
	set(&s.Endpoint, o.Endpoint)
	set(&s.CAFile, o.CAFile)
	set(&s.CertFile, o.CertFile)
	set(&s.KeyFile, o.KeyFile)
	set(&s.Auth, o.Auth)
	set(&s.ManagementUser, o.MgmtUser)
	set(&s.ManagementCAFile, o.MgmtCAFile)
	set(&s.ManagementCertFile, o.MgmtCertFile)
	set(&s.ManagementKeyFile, o.MgmtKeyFile)
	if o.Insecure {
		s.InsecureSkipVerify = true
	}
	return s
}

// specFor resolves a URL or context name given somewhere other than
// --broker (a destination's broker part).
func (f *Factory) specFor(ref, via string) (brokerSpec, error) {
	if knownScheme(ref) {
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
	scheme, rest, _ := strings.Cut(ref, ":")
	switch strings.ToLower(scheme) {
	case "amqp", "amqps":
		f.warnURLPassword(s)
		pw, err := f.password(s)
		if err != nil {
			return nil, err
		}
		mgmtPW, err := f.managementPassword(s)
		if err != nil {
			return nil, err
		}
		return rabbitmq.Open(ctx, rabbitmq.Config{
			URL: ref, Nodes: s.Nodes, ManagementURL: s.ManagementURL, Password: pw,
			Auth: s.Auth, ManagementUser: s.ManagementUser, ManagementPassword: mgmtPW,
			CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile,
			ManagementCAFile: s.ManagementCAFile, ManagementCertFile: s.ManagementCertFile, ManagementKeyFile: s.ManagementKeyFile,
			InsecureSkipVerify: s.InsecureSkipVerify, Timeout: f.timeout(), Logger: f.Logger,
			ReadOnly: f.CheckWritable("") != nil,
		})
	case "sqs":
		region, err := sqsRegion(ref)
		if err != nil {
			return nil, err
		}
		if s.Region != "" && region != "" && s.Region != region && f.Options.Region != "" {
			return nil, fmt.Errorf("`--region %s` contradicts the broker %s: drop one of them", s.Region, ref)
		}
		if region == "" {
			region = s.Region
		}
		return sqs.Open(ctx, sqs.Config{Region: region, Endpoint: s.Endpoint, Profile: s.Profile, Timeout: f.timeout(), Logger: f.Logger})
	case "file":
		path, err := filePath(ref)
		if err != nil {
			return nil, err
		}
		return archive.Open(path)
	case "demo":
		if rest != "" {
			return nil, fmt.Errorf("`--broker demo:` takes no queue: pass the queue as the argument (`dlq peek --broker demo: orders.dlq`)")
		}
		return archive.Demo()
	}
	if _, _, ok := sqsQueueRef(ref); ok {
		return nil, fmt.Errorf("%s is an SQS queue, not a broker: pass it as the queue argument, and `--broker sqs://REGION` if needed", broker.Redact(ref))
	}
	return nil, fmt.Errorf("unknown broker %q: use amqp://, amqps://, sqs://, file://, demo: or a context name (`dlq contexts` lists them)", broker.Redact(ref))
}

// openError makes a failed open one line that names the fix.
func (f *Factory) openError(ctx context.Context, s brokerSpec, err error, took time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) || (ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.Canceled)) {
		if !strings.Contains(errorText(err), "--timeout") {
			return fmt.Errorf("%w: no answer within %s: check the host and port, or raise `--timeout`", err, f.timeout())
		}
	}
	if s.Context != "" && !strings.Contains(err.Error(), "context `") {
		return fmt.Errorf("context `%s`: %w", s.Context, err)
	}
	return err
}

// external reports an EXTERNAL login (the client certificate), by `auth`
// or the URL's auth_mechanism=external.
func (s brokerSpec) external() bool {
	if strings.EqualFold(strings.TrimSpace(s.Auth), rabbitmq.AuthExternal) {
		return true
	}
	return s.Auth == "" && strings.Contains(strings.ToLower(s.Ref), "auth_mechanism=external")
}

// password is the RabbitMQ password when the URL has none: from the
// environment variable the context names, else DLQ_PASSWORD. An EXTERNAL
// login has none.
func (f *Factory) password(s brokerSpec) (string, error) {
	if s.external() {
		return "", nil
	}
	if broker.HasPassword(s.Ref) {
		// Also in a list of hosts url.Parse refuses (amqp://u:p@[::1]:5672,h2/).
		return "", nil
	}
	if s.PasswordEnv != "" {
		return contextSecret(s, s.PasswordEnv, "password_env", "the broker's password")
	}
	pw := os.Getenv("DLQ_PASSWORD")
	if pw == "" {
		// Without a password the AMQP client would try "guest", and the
		// broker's answer (wrong username or password) would hide that
		// none was given. Only guest, or no user, gets that default.
		if u, err := url.Parse(s.Ref); err == nil && u.User != nil && u.User.Username() != "" && u.User.Username() != "guest" {
			return "", fmt.Errorf("no password given for %s: set DLQ_PASSWORD, a context's `password_env`, or put it in the URL", u.User.Username())
		}
	}
	return pw, nil
}

// managementPassword is the management API's own password: from the
// environment variable the context names in management_password_env, else
// DLQ_MANAGEMENT_PASSWORD. A management user needs one; without a
// management user, it replaces the AMQP password for the API.
func (f *Factory) managementPassword(s brokerSpec) (string, error) {
	if s.ManagementPasswordEnv != "" {
		return contextSecret(s, s.ManagementPasswordEnv, "management_password_env", "the management API's password")
	}
	pw := os.Getenv("DLQ_MANAGEMENT_PASSWORD")
	if pw == "" && s.ManagementUser != "" {
		return "", fmt.Errorf("no password given for management user `%s`: set DLQ_MANAGEMENT_PASSWORD, or a context's `management_password_env`", s.ManagementUser)
	}
	return pw, nil
}

// contextSecret is the value of the environment variable env that a
// context names in its key (password_env, management_password_env).
func contextSecret(s brokerSpec, env, key, what string) (string, error) {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return "", fmt.Errorf("context `%s`: environment variable %s (its `%s`) is not set: export it with %s", s.Context, env, key, what)
	}
	return v, nil
}

// warnURLPassword warns, once, on a terminal and without `--quiet`, that a
// password in a URL on the command line shows in the process list.
func (f *Factory) warnURLPassword(s brokerSpec) {
	if f.Options.Quiet || !f.IO.IsStderrTTY() || f.urlPasswordWarned.Load() {
		return
	}
	var flag string
	switch {
	case (s.Via == "--broker" || s.Via == "--to") && s.Context == "" && urlHasPassword(s.Ref):
		flag = s.Via
	case f.Options.MgmtURL != "" && urlHasPassword(f.Options.MgmtURL):
		flag = "--management-url"
	default:
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

var regionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`) })

// sqsRegion is the region of sqs://REGION, "" for sqs://.
func sqsRegion(ref string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(ref, "sqs:"), "//")
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return "", nil
	}
	if !regionRE().MatchString(rest) {
		return "", fmt.Errorf("malformed SQS broker %q: want sqs:// or sqs://REGION (e.g. sqs://eu-west-1); give queues by name, URL or ARN as the argument", broker.Redact(ref))
	}
	return rest, nil
}

// filePath is the path of file://PATH (file:///abs, file://rel, file://~/x).
func filePath(ref string) (string, error) {
	p := strings.TrimPrefix(ref, "file://")
	if p == ref || p == "" {
		return "", fmt.Errorf("malformed archive reference %q: want file://PATH (file://dead.jsonl, file:///var/dlq/dead.jsonl.gz)", ref)
	}
	if strings.HasPrefix(p, "localhost/") {
		p = p[len("localhost"):]
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	return p, nil
}

// sqsQueueRef recognises an SQS queue URL or ARN and returns the region it
// names ("" when the URL does not say) and, for a non-AWS URL, the endpoint.
func sqsQueueRef(ref string) (region, endpoint string, ok bool) {
	if strings.HasPrefix(ref, "arn:") {
		parts := strings.SplitN(ref, ":", 6)
		if len(parts) == 6 && parts[2] == "sqs" && parts[5] != "" {
			return parts[3], "", true
		}
		return "", "", false
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", false
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) != 2 || segs[0] == "" || segs[1] == "" {
		return "", "", false
	}
	host := u.Hostname()
	if strings.HasSuffix(host, ".amazonaws.com") {
		labels := strings.Split(host, ".")
		switch {
		case len(labels) >= 4 && labels[0] == "sqs":
			region = labels[1] // sqs.REGION.amazonaws.com
		case len(labels) >= 4 && labels[1] == "queue":
			region = labels[0] // REGION.queue.amazonaws.com
		}
		return region, "", true
	}
	return "", u.Scheme + "://" + u.Host, true
}

// openQueue opens the broker a queue reference lives on.
func (f *Factory) openQueue(ctx context.Context, ref string) (broker.Broker, string, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return nil, "", flagErrorf("no queue given: pass a queue name, `file://PATH`, or an SQS queue URL or ARN")
	case strings.HasPrefix(ref, "file://"):
		b, err := f.openSpec(ctx, brokerSpec{Ref: ref, Via: "queue"})
		return b, "", err
	case strings.HasPrefix(ref, "demo:"):
		b, err := f.openSpec(ctx, brokerSpec{Ref: "demo:", Via: "queue"})
		return b, strings.TrimPrefix(ref, "demo:"), err
	case strings.HasPrefix(ref, "amqp://"), strings.HasPrefix(ref, "amqps://"), strings.HasPrefix(ref, "sqs://"):
		return nil, "", flagErrorf("a queue is named, not given as a broker URL: pass the broker with `--broker %s` and the queue by name", broker.Redact(ref))
	}
	if region, endpoint, ok := sqsQueueRef(ref); ok {
		s, err := f.sqsSpecFor(region, endpoint)
		if err != nil {
			return nil, "", err
		}
		b, err := f.openSpec(ctx, s)
		return b, ref, err
	}
	b, err := f.OpenBroker(ctx)
	return b, ref, err
}

// sqsSpecFor is the default broker's SQS settings (when it is SQS) with the
// region and endpoint a queue URL or ARN names.
func (f *Factory) sqsSpecFor(region, endpoint string) (brokerSpec, error) {
	s := brokerSpec{Ref: "sqs://", Via: "queue"}
	if def, err := f.resolveBroker(); err == nil && strings.HasPrefix(def.Ref, "sqs:") {
		s = def
		s.Ref = "sqs://"
		if r, _ := sqsRegion(def.Ref); r != "" && s.Region == "" {
			s.Region = r
		}
	} else {
		s = f.withFlags(s)
	}
	if region != "" {
		s.Region = region
	}
	if endpoint != "" && s.Endpoint == "" {
		s.Endpoint = endpoint
	}
	return s, nil
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
	if strings.HasPrefix(ref, "file://") {
		path, err := filePath(ref)
		if err != nil {
			return nil, "", err
		}
		b, err := archive.Target(path, archive.WriterOptions{Generator: "dlq " + versionString()})
		if err != nil {
			return nil, "", err
		}
		return b, "file://" + path, nil
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
		if _, _, isQueue := sqsQueueRef(dest); isQueue && strings.HasPrefix(s.Ref, "sqs:") {
			dest = "queue:" + dest
		}
		b, err := f.openSpec(ctx, s)
		return b, dest, err
	}
	if region, endpoint, ok := sqsQueueRef(ref); ok {
		s, err := f.sqsSpecFor(region, endpoint)
		if err != nil {
			return nil, "", err
		}
		b, err := f.openSpec(ctx, s)
		return b, "queue:" + ref, err
	}
	if knownScheme(ref) {
		return nil, "", flagErrorf("`--to %s` names a broker but no destination: append `#queue:NAME`, `#exchange:NAME[:KEY]` or `#origin`", broker.Redact(ref))
	}
	return nil, ref, nil
}
