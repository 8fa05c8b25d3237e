package rabbitmq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// DefaultTimeout bounds connecting and each management API call when
// Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says how to reach one RabbitMQ broker.
type Config struct {
	// URL is amqp://user:password@host:port/vhost or amqps://…; the path is
	// the vhost ("/" or empty for the default vhost "/", "%2F" escaped).
	URL string
	// ManagementURL is the management HTTP API base (http://host:15672). When
	// empty it is derived from URL: http://HOST:15672, or https://HOST:15671
	// for amqps. Credentials in it, if any, are used for the API instead of
	// the AMQP ones.
	ManagementURL string
	// Password overrides the URL's password when non-empty (contexts read it
	// from an environment variable so that config files hold no secret).
	Password string
	// CAFile, CertFile and KeyFile are PEM files: the CA that signed the
	// server certificate, and a client certificate and key for mutual TLS.
	CAFile, CertFile, KeyFile string
	// InsecureSkipVerify turns off server certificate verification.
	InsecureSkipVerify bool
	// Timeout bounds connecting and each management API call; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
}

// Broker is an open connection to one RabbitMQ vhost. It implements
// broker.Broker and the capability interfaces QueueLister, QueueInspector,
// Peeker, Consumer, Publisher, OriginResolver, Purger and FlowWatcher.
type Broker struct {
	log      *slog.Logger
	timeout  time.Duration
	scheme   string // amqp or amqps
	host     string // host:port
	user     string
	password string
	vhost    string
	redacted string // the URL without the password, safe to print
	tls      *tls.Config
	amqpURI  string // for amqp.DialConfig; holds the password: never printed

	mgmtBase *url.URL // without credentials
	mgmtUser string
	mgmtPass string
	http     *http.Client

	mu      sync.Mutex
	conn    *amqp.Connection
	closed  bool
	major   int // RabbitMQ major version, 0 until known
	flowFns []func(blocked bool, reason string)
	blocked bool
	reason  string
	// unblocked is closed when the connection is (or becomes) unblocked; a
	// new one is made each time the broker blocks the connection.
	unblocked chan struct{}
	// pubPool keeps Publish's confirm channels between calls.
	pubPool publishPool
}

var (
	_ broker.Broker = (*Broker)(nil)
)

// Open connects to the broker within cfg.Timeout (and ctx) and checks the
// login and the vhost. Every failure is one line naming the problem and the
// fix, wrapped in a broker error value: malformed URL (no kind), unreachable
// host or TLS failure (ErrUnreachable), wrong password (ErrAccessDenied),
// missing vhost (ErrNotFound).
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	b, err := newBroker(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	b.setConn(conn)
	b.log.Debug("connected", "broker", b.redacted)
	return b, nil
}

// newBroker parses and checks cfg without connecting.
func newBroker(cfg Config) (*Broker, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, fmt.Errorf("no broker URL: pass `--broker amqp://user@host:5672/vhost` or choose a context with `--context`")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// url.Parse quotes the whole URL, password included: never pass it on.
		return nil, fmt.Errorf("malformed broker URL: want amqp://user:password@host:5672/vhost (percent-encode reserved characters such as @ : / in the user or password): check `--broker`")
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return nil, fmt.Errorf("malformed broker URL: scheme %q is not amqp:// or amqps://: check `--broker`", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("malformed broker URL: no host: want %s://user@host:port/vhost: check `--broker`", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("malformed broker URL: port %q is not a number between 1 and 65535: check `--broker`", p)
		}
	}
	if cfg.Password != "" {
		name := "guest"
		if u.User != nil {
			name = u.User.Username()
		}
		u.User = url.UserPassword(name, cfg.Password)
	}
	uri, err := amqp.ParseURI(u.String())
	if err != nil {
		return nil, fmt.Errorf("malformed broker URL: %s: check `--broker`", safeURIError(err))
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Broker{
		log:       log,
		timeout:   timeout,
		scheme:    uri.Scheme,
		host:      net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port)),
		user:      uri.Username,
		password:  uri.Password,
		vhost:     uri.Vhost,
		amqpURI:   u.String(),
		unblocked: make(chan struct{}),
	}
	close(b.unblocked)
	red := url.URL{Scheme: uri.Scheme, Host: b.host, Path: "/" + uri.Vhost}
	if uri.Vhost == "/" {
		red.Path = "/"
	}
	red.User = url.User(uri.Username)
	b.redacted = red.String()

	if uri.Scheme == "amqps" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.InsecureSkipVerify {
		tc, err := tlsConfig(cfg, uri.Host)
		if err != nil {
			return nil, err
		}
		b.tls = tc
	}
	if err := b.setManagement(cfg.ManagementURL, uri.Host); err != nil {
		return nil, err
	}
	return b, nil
}

// safeURIError keeps only the parts of an amqp.ParseURI error that cannot
// hold the password.
func safeURIError(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "heartbeat"):
		return "query parameter `heartbeat` is not a number of seconds"
	case strings.Contains(s, "connection_timeout"):
		return "query parameter `connection_timeout` is not a number of milliseconds"
	case strings.Contains(s, "channel_max"):
		return "query parameter `channel_max` is not a number"
	case strings.Contains(s, "whitespace"):
		return "it contains whitespace"
	}
	return "it cannot be parsed"
}

func tlsConfig(cfg Config, host string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // explicit user choice
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file %s: %v: check `--ca-file`", cfg.CAFile, pathError(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate: check `--ca-file`", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		if cfg.CertFile == "" || cfg.KeyFile == "" {
			return nil, fmt.Errorf("a client certificate needs both `--cert-file` and `--key-file`")
		}
		pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s and key %s: %v: check `--cert-file` and `--key-file`", cfg.CertFile, cfg.KeyFile, pathError(err))
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (b *Broker) setManagement(raw, host string) error {
	b.mgmtUser, b.mgmtPass = b.user, b.password
	var u *url.URL
	if raw == "" {
		u = &url.URL{Scheme: "http", Host: net.JoinHostPort(host, "15672")}
		if b.scheme == "amqps" {
			u = &url.URL{Scheme: "https", Host: net.JoinHostPort(host, "15671")}
		}
	} else {
		var err error
		u, err = url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("malformed management URL: want http://host:15672 or https://host:15671: check `--management-url`")
		}
		if u.User != nil {
			b.mgmtUser = u.User.Username()
			if p, ok := u.User.Password(); ok {
				b.mgmtPass = p
			}
			u.User = nil
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.Path = strings.TrimSuffix(u.Path, "/api")
		u.RawPath = ""
		u.RawQuery, u.Fragment = "", ""
	}
	b.mgmtBase = u
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" && b.tls != nil {
		tc := b.tls.Clone()
		tc.ServerName = u.Hostname()
		tr.TLSClientConfig = tc
	}
	b.http = &http.Client{Transport: tr}
	return nil
}

// dial opens a new AMQP connection within b.timeout and ctx.
func (b *Broker) dial(ctx context.Context) (*amqp.Connection, error) {
	deadline := time.Now().Add(b.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("dlq")
	var (
		ncMu sync.Mutex
		nc   net.Conn
	)
	cfg := amqp.Config{
		Properties: props,
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Dial: func(network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bound the TLS and AMQP handshakes; amqp091 clears the deadline
			// once the connection is open.
			_ = c.SetDeadline(deadline)
			ncMu.Lock()
			nc = c
			ncMu.Unlock()
			return coalesceWrites(c), nil
		},
	}
	if b.tls != nil {
		cfg.TLSClientConfig = b.tls.Clone()
	}
	// Close the socket when ctx is cancelled mid-handshake.
	stop := context.AfterFunc(dctx, func() {
		ncMu.Lock()
		defer ncMu.Unlock()
		if nc != nil && ctx.Err() != nil {
			_ = nc.Close()
		}
	})
	defer stop()
	uri := b.amqpURI
	if b.scheme == "amqp" && b.tls != nil {
		// TLS files given with amqp://: the user asked for TLS.
		uri = "amqps" + strings.TrimPrefix(uri, "amqp")
	}
	conn, err := amqp.DialConfig(uri, cfg)
	if err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, b.dialError(ctx, err)
	}
	return conn, nil
}

// dialError turns a connection failure into one line with the fix.
func (b *Broker) dialError(ctx context.Context, err error) error {
	op := "connect to " + b.redacted
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		reason := cleanReason(ae.Reason)
		switch {
		case ae.Code == amqp.AccessRefused && !ae.Server:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("login refused for user `%s`: wrong username or password; check the credentials of `--broker` or the context's password variable", b.user)}
		case ae.Code == amqp.AccessRefused:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("login refused for user `%s` (%s): check the username and password", b.user, reason)}
		case ae.Code == amqp.NotAllowed && strings.Contains(reason, "not found"):
			return &broker.Error{Kind: broker.ErrNotFound, Op: op,
				Msg: fmt.Sprintf("vhost `%s` not found: check the path of `--broker` (use /%%2F for the default vhost `/`), or list vhosts with `rabbitmqctl list_vhosts`", b.vhost)}
		case ae.Code == amqp.NotAllowed && strings.Contains(reason, "access to vhost"):
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("user `%s` has no access to vhost `%s`: grant it with `rabbitmqctl set_permissions -p %s %s '.*' '.*' '.*'`", b.user, b.vhost, b.vhost, b.user)}
		case ae.Code == amqp.NotAllowed && !ae.Server:
			return &broker.Error{Kind: broker.ErrNotFound, Op: op,
				Msg: fmt.Sprintf("vhost `%s` refused: it does not exist or user `%s` may not use it; check the path of `--broker`", b.vhost, b.user)}
		case ae.Code == amqp.NotAllowed:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op, Msg: reason}
		case !ae.Server && strings.Contains(reason, "timeout"):
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Msg: fmt.Sprintf("no AMQP answer from %s within %s: is it a RabbitMQ AMQP port? check the port of `--broker`, or raise `--timeout`", b.host, b.timeout)}
		case !ae.Server && (strings.Contains(reason, "EOF") || strings.Contains(reason, "reset")):
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Msg: fmt.Sprintf("%s closed the connection during the handshake: check the port of `--broker` (amqp:// 5672, amqps:// 5671)", b.host)}
		case !ae.Server && ae.Code == amqp.FrameError:
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Msg: fmt.Sprintf("%s does not speak AMQP 0-9-1: check the host and port of `--broker`", b.host)}
		}
		return translateErr(op, err)
	}
	if isTLSError(err) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Msg: fmt.Sprintf("tls handshake with %s failed: %s", b.host, tlsHint(err))}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Msg: fmt.Sprintf("no answer from %s within %s: check the host and port of `--broker`, firewalls, or raise `--timeout`", b.host, b.timeout)}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Msg: fmt.Sprintf("cannot resolve host %q: check the host of `--broker`", dnsErr.Name)}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Msg: fmt.Sprintf("cannot reach %s (%s): check the host and port of `--broker` and that RabbitMQ is running", b.host, opErrText(oe))}
	}
	if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF") {
		hint := "check the port of `--broker`"
		if b.scheme == "amqp" {
			hint = "is it a TLS port? use amqps:// — or " + hint
		}
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Msg: fmt.Sprintf("%s closed the connection during the handshake: %s", b.host, hint)}
	}
	return translateErr(op, err)
}

func opErrText(oe *net.OpError) string {
	if oe.Err == nil {
		return oe.Op + " failed"
	}
	s := oe.Err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func isTLSError(err error) bool {
	var (
		rh  tls.RecordHeaderError
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		alt tls.AlertError
	)
	return errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &ua) ||
		errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &alt) ||
		strings.HasPrefix(err.Error(), "tls: ")
}

func tlsHint(err error) string {
	var (
		rh tls.RecordHeaderError
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &rh):
		return "the server did not answer with TLS: use amqp:// for a plain port, or the TLS port (usually 5671)"
	case errors.As(err, &ua):
		return "certificate signed by an unknown authority: pass the CA with `--ca-file` (or `--insecure-skip-verify`, which turns verification off)"
	case errors.As(err, &hn):
		return "the certificate is not valid for this host name: connect by a name the certificate lists, or pass `--insecure-skip-verify`"
	case errors.As(err, &ci):
		return "the certificate is invalid (" + ci.Error() + "): renew it, or pass `--insecure-skip-verify`"
	}
	s := err.Error()
	if strings.Contains(s, "certificate required") || strings.Contains(s, "bad certificate") {
		return s + ": the server wants a client certificate: pass `--cert-file` and `--key-file`"
	}
	return s + ": check `--ca-file`, `--cert-file`, `--key-file`"
}

func (b *Broker) setConn(c *amqp.Connection) {
	b.mu.Lock()
	b.conn = c
	b.mu.Unlock()
	blocked := c.NotifyBlocked(make(chan amqp.Blocking, 4))
	go func() {
		for bl := range blocked {
			b.setBlocked(bl.Active, bl.Reason)
		}
		// The connection is gone: whatever blocked it no longer applies to
		// the next one.
		b.setBlocked(false, "")
	}()
}

func (b *Broker) setBlocked(blocked bool, reason string) {
	b.mu.Lock()
	if blocked == b.blocked {
		b.mu.Unlock()
		return
	}
	b.blocked, b.reason = blocked, reason
	if blocked {
		b.unblocked = make(chan struct{})
	} else {
		close(b.unblocked)
	}
	fns := append([]func(bool, string){}, b.flowFns...)
	b.mu.Unlock()
	b.log.Debug("flow", "blocked", blocked, "reason", reason)
	for _, fn := range fns {
		fn(blocked, reason)
	}
}

// connection returns the open AMQP connection, dialling a new one when the
// previous one was closed (by the broker, an operator or the network), so
// that one lost connection does not end a long command for good.
func (b *Broker) connection(ctx context.Context) (*amqp.Connection, error) {
	b.mu.Lock()
	c, closed := b.conn, b.closed
	b.mu.Unlock()
	if closed {
		return nil, &broker.Error{Kind: broker.ErrUnreachable, Op: "use " + b.redacted, Msg: "the connection was closed"}
	}
	if c != nil && !c.IsClosed() {
		return c, nil
	}
	b.log.Debug("reconnecting", "broker", b.redacted)
	nc, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = nc.Close()
		return nil, &broker.Error{Kind: broker.ErrUnreachable, Op: "use " + b.redacted, Msg: "the connection was closed"}
	}
	if b.conn != nil && b.conn != c && !b.conn.IsClosed() {
		// Another goroutine reconnected first.
		cur := b.conn
		b.mu.Unlock()
		_ = nc.Close()
		return cur, nil
	}
	b.mu.Unlock()
	b.setConn(nc)
	return nc, nil
}

// System reports broker.RabbitMQ.
func (b *Broker) System() broker.System { return broker.RabbitMQ }

// String is the broker URL without the password.
func (b *Broker) String() string { return b.redacted }

// Vhost is the virtual host this broker works in ("/" for the default).
func (b *Broker) Vhost() string { return b.vhost }

// ManagementURL is the management API base URL in use, without credentials.
func (b *Broker) ManagementURL() string { return b.mgmtBase.String() }

// Close closes the AMQP connection; unsettled deliveries of any open
// subscription return to their queues.
func (b *Broker) Close() error {
	b.mu.Lock()
	c := b.conn
	b.closed = true
	b.mu.Unlock()
	b.http.CloseIdleConnections()
	if c == nil || c.IsClosed() {
		return nil
	}
	if err := c.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return translateErr("close connection to "+b.redacted, err)
	}
	return nil
}
