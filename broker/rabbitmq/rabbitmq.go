package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
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
	// the vhost ("/" or empty for the default vhost "/", "%2F" escaped). It
	// may list several nodes of the broker (a cluster) as several hosts:
	// amqp://user@h1:5672,h2:5672,h3/vhost.
	URL string
	// Nodes are more addresses of the broker's nodes (HOST or HOST:PORT),
	// tried after the URL's hosts, with the URL's user, vhost and query.
	Nodes []string
	// ManagementURL is the management HTTP API base (http://host:15672). When
	// empty it is derived from each node's host: http://HOST:15672, or
	// https://HOST:15671 for amqps. Credentials in it, if any, are used for
	// the API instead of any other. With several nodes it may be one URL
	// for all of them or a comma-separated list, one per node in order.
	ManagementURL string
	// Password overrides the URL's password when non-empty (contexts read it
	// from an environment variable so that config files hold no secret).
	Password string
	// Auth is the AMQP login's SASL mechanism: AuthPlain (the default; also
	// "") or AuthExternal (the client certificate; amqps:// and CertFile
	// required). The URL query auth_mechanism=external means AuthExternal.
	Auth string
	// ManagementUser and ManagementPassword log in to the management API.
	// Without ManagementUser, a PLAIN login's user and password serve (with
	// ManagementPassword instead of its password when given); an EXTERNAL
	// login has none, so the management API then needs ManagementUser.
	ManagementUser, ManagementPassword string
	// CAFile, CertFile and KeyFile are PEM files: a CA that signed the
	// server certificate (added to the system's roots), and a client
	// certificate and key for mutual TLS. They apply to amqps:// and to an
	// https:// management API; an amqp:// URL stays plain AMQP.
	CAFile, CertFile, KeyFile string
	// ManagementCAFile, ManagementCertFile and ManagementKeyFile replace
	// CAFile, CertFile and KeyFile for the management API.
	ManagementCAFile, ManagementCertFile, ManagementKeyFile string
	// InsecureSkipVerify turns off server certificate verification.
	InsecureSkipVerify bool
	// ReadOnly makes every read publish nothing: a peek that would rotate
	// or rescue messages (republish them) is refused before it takes any,
	// and a quorum queue without a delivery limit is read in hold mode.
	ReadOnly bool
	// Timeout bounds connecting (to all nodes together) and each management
	// API call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
}

// Broker is an open connection to one RabbitMQ vhost. It implements
// broker.Broker and the capability interfaces QueueLister, QueueInspector,
// Peeker, Consumer, Publisher, OriginResolver, Purger and FlowWatcher.
//
// With several nodes it is connected to one at a time: Open dials them in
// order and keeps the first that answers; when that connection is lost, the
// next use dials the following nodes first (wrapping around), and the
// management API follows the node in use.
type Broker struct {
	log      *slog.Logger
	timeout  time.Duration
	scheme   string // amqp or amqps
	user     string // the AMQP user; for EXTERNAL, the certificate's CN
	password string
	external bool // EXTERNAL login: the client certificate, no password
	vhost    string
	redacted string // every node's address without the password, safe to print
	nodes    []node
	http     *http.Client
	amqpTLS  tlsSide // the AMQP TLS files, for errors
	mgmtTLS  tlsSide // the management API's TLS files, for errors

	mu      sync.Mutex
	conn    *amqp.Connection
	cur     int // index of the node in use (or last used) in nodes
	closed  bool
	major   int    // RabbitMQ major version, 0 until known
	version string // RabbitMQ version ("4.0.5"), "" until known
	// amqpVersion is the version the AMQP connection's server properties
	// announced ("4.3.6"), "" when they named none.
	amqpVersion string
	flowFns     []func(blocked bool, reason string)
	blocked     bool
	reason      string
	// unblocked is closed when the connection is (or becomes) unblocked; a
	// new one is made each time the broker blocks the connection.
	unblocked chan struct{}
	// pubPool keeps Publish's confirm channels between calls.
	pubPool publishPool
	// readOnly: nothing is ever published by a read (Config.ReadOnly).
	readOnly bool
	// writeKnown says writeErr holds the answer of writeCheck: nil when the
	// user may publish to the default exchange, *errNoWrite when not.
	writeKnown bool
	writeErr   error
	// notQuorum holds the queues the management API named as not quorum
	// queues: their zero needs no second look (see checkZero).
	notQuorum sync.Map
	// clusterDone says that checkCluster has compared the management API's
	// cluster with the AMQP connection's; clusterErr is its refusal.
	clusterMu   sync.Mutex
	clusterDone bool
	clusterErr  error
}

var (
	_ broker.Broker          = (*Broker)(nil)
	_ broker.ServerVersioner = (*Broker)(nil)
)

// Open connects to the broker within cfg.Timeout (and ctx) and checks the
// login and the vhost. Every failure is one line naming the problem and the
// fix, wrapped in a broker error value: malformed URL (no kind), unreachable
// host or TLS failure (ErrUnreachable), wrong password (ErrAccessDenied),
// missing vhost (ErrNotFound). With several nodes it connects to the first
// that answers; when none does, the error names each node and its reason.
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	b, err := newBroker(cfg)
	if err != nil {
		return nil, err
	}
	conn, idx, err := b.dialAny(ctx, 0)
	if err != nil {
		return nil, err
	}
	b.setConn(conn, idx)
	b.log.Debug("connected", "broker", b.redacted, "node", b.nodes[idx].addr)
	return b, nil
}

// newBroker parses and checks cfg without connecting.
func newBroker(cfg Config) (*Broker, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, broker.Hintf("no broker URL: pass %s or choose a context with %s", broker.OptBroker.With("amqp://user@host:5672/vhost"), broker.OptContext)
	}
	urls, err := nodeURLs(cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Broker{log: log, timeout: timeout, unblocked: make(chan struct{}), amqpTLS: amqpSide(cfg), readOnly: cfg.ReadOnly}
	close(b.unblocked)
	seen := map[string]bool{}
	var uri *amqp.URI
	for _, raw := range urls {
		n, u, err := parseNode(raw, cfg)
		if err != nil {
			return nil, err
		}
		if seen[n.addr] {
			continue
		}
		seen[n.addr] = true
		if uri == nil {
			uri = u
		}
		if uri.Scheme == "amqps" || b.amqpTLS.given() {
			// Files given with amqp:// are read too: a wrong path is an
			// error even where only an https:// management API uses them.
			tc, err := tlsConfig(b.amqpTLS, cfg.InsecureSkipVerify, u.Host)
			if err != nil {
				return nil, err
			}
			if uri.Scheme == "amqps" {
				n.tls = tc
			}
		}
		b.nodes = append(b.nodes, n)
	}
	b.scheme, b.user, b.password, b.vhost = uri.Scheme, uri.Username, uri.Password, uri.Vhost
	if err := b.setAuth(cfg, uri); err != nil {
		return nil, err
	}
	b.redacted = redactedList(b.nodes)
	if err := b.setManagement(cfg); err != nil {
		return nil, err
	}
	return b, nil
}

// setAuth checks the login mechanism. An EXTERNAL login needs TLS and a
// client certificate; its user is the certificate's CN and it has no
// password.
func (b *Broker) setAuth(cfg Config, uri *amqp.URI) error {
	auth := strings.ToLower(strings.TrimSpace(cfg.Auth))
	for _, m := range uri.AuthMechanism {
		if strings.EqualFold(m, "external") && auth == "" {
			auth = AuthExternal
		}
	}
	switch auth {
	case "", AuthPlain:
		return nil
	case AuthExternal:
	default:
		return broker.Hintf("unknown login mechanism %q: use %s (user and password) or %s (the TLS client certificate)", cfg.Auth, broker.OptAuth.With("plain"), broker.OptAuth.With("external"))
	}
	if b.scheme != "amqps" {
		return broker.Hintf("%s logs in with the TLS client certificate, but the broker URL is amqp://: use amqps:// with %s and %s", broker.OptAuth.With("external"), broker.OptCertFile, broker.OptKeyFile)
	}
	if cfg.CertFile == "" {
		return broker.Hintf("%s logs in with a TLS client certificate: pass %s and %s", broker.OptAuth.With("external"), broker.OptCertFile, broker.OptKeyFile)
	}
	b.external = true
	b.password = ""
	if cn := certCN(cfg.CertFile); cn != "" {
		b.user = cn
	}
	// Name the certificate's user, not amqp091's default "guest".
	for i := range b.nodes {
		if u, err := url.Parse(b.nodes[i].redacted); err == nil {
			u.User = url.User(b.user)
			b.nodes[i].redacted = u.String()
		}
	}
	return nil
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

// setManagement sets each node's management API base and credentials (see
// Config.ManagementURL and ManagementUser), and the HTTP client they share.
func (b *Broker) setManagement(cfg Config) error {
	mgmts, err := managementURLs(cfg.ManagementURL, len(b.nodes))
	if err != nil {
		return err
	}
	user, pass := b.user, b.password
	switch {
	case cfg.ManagementUser != "":
		user, pass = cfg.ManagementUser, cfg.ManagementPassword
	case b.external:
		user, pass = "", ""
	case cfg.ManagementPassword != "":
		pass = cfg.ManagementPassword
	}
	https := false
	for i := range b.nodes {
		n := &b.nodes[i]
		n.mgmtUser, n.mgmtPass = user, pass
		host, _, _ := net.SplitHostPort(n.addr)
		var u *url.URL
		if mgmts[i] == "" {
			n.mgmtGuessed = true
			u = &url.URL{Scheme: "http", Host: net.JoinHostPort(host, "15672")}
			if b.scheme == "amqps" {
				u = &url.URL{Scheme: "https", Host: net.JoinHostPort(host, "15671")}
			}
		} else {
			u, err = url.Parse(mgmts[i])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return broker.Hintf("malformed management URL: want http://host:15672 or https://host:15671: check %s", broker.OptManagementURL)
			}
			if u.User != nil {
				n.mgmtUser = u.User.Username()
				if p, ok := u.User.Password(); ok {
					n.mgmtPass = p
				}
				u.User = nil
			}
			u.Path = strings.TrimSuffix(u.Path, "/")
			u.Path = strings.TrimSuffix(u.Path, "/api")
			u.RawPath = ""
			u.RawQuery, u.Fragment = "", ""
		}
		n.mgmt = u
		https = https || u.Scheme == "https"
	}
	b.mgmtTLS = mgmtSide(cfg)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if https || b.mgmtTLS.given() {
		// The server name is left to the transport, which takes it from
		// each request's host.
		tc, err := tlsConfig(b.mgmtTLS, cfg.InsecureSkipVerify, "")
		if err != nil {
			return err
		}
		tr.TLSClientConfig = tc
	}
	b.http = &http.Client{Transport: tr}
	return nil
}

// dialAny dials the nodes in turn, beginning with nodes[start] and
// wrapping around, and returns the first connection and its node's index.
// Together the attempts take at most b.timeout (and ctx); each gets an equal
// share of what is left, so one node that does not answer cannot use up the
// time of the others. A node that refuses the login or the vhost ends the
// search (the other nodes of a cluster would refuse it too); when no node
// answers, the error names every node tried and why.
func (b *Broker) dialAny(ctx context.Context, start int) (*amqp.Connection, int, error) {
	deadline := time.Now().Add(b.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var failed []string
	var last error
	for k := range b.nodes {
		i := (start + k) % len(b.nodes)
		n := b.nodes[i]
		within := time.Until(deadline) / time.Duration(len(b.nodes)-k)
		conn, err := b.dial(ctx, n, time.Now().Add(within))
		if err == nil {
			if k > 0 {
				b.log.Warn("connected to another node", "broker", b.redacted, "node", n.addr, "unreachable", strings.Join(failed, "; "))
			}
			return conn, i, nil
		}
		err = b.dialError(ctx, n, err, within)
		if len(b.nodes) == 1 || ctx.Err() != nil || !errors.Is(err, broker.ErrUnreachable) {
			return nil, i, err
		}
		b.log.Warn("node unreachable", "node", n.addr, "err", err)
		reason := shortReason(err)
		if !strings.Contains(reason, n.addr) {
			reason = n.addr + ": " + reason
		}
		failed = append(failed, reason)
		last = err
	}
	return nil, start, &broker.Error{Kind: broker.ErrUnreachable, Op: "connect to " + b.redacted, Err: last,
		Hint: broker.Hintf("no node answered (%s): check the hosts and ports of %s and the context's `nodes`, and that RabbitMQ runs there, or raise %s", strings.Join(failed, "; "), broker.OptBroker, broker.OptTimeout)}
}

// shortReason is the part of a dial error that says what went wrong with one
// node, without its advice.
func shortReason(err error) string {
	var be *broker.Error
	s := err.Error()
	if errors.As(err, &be) && (be.Msg != "" || be.Hint != nil) {
		s = (&broker.Error{Msg: be.Msg, Hint: be.Hint}).Error()
	}
	for _, advice := range []string{": check ", ": is it ", "? check "} {
		if i := strings.Index(s, advice); i > 0 {
			s = s[:i]
		}
	}
	return s
}

// dial opens a new AMQP connection to node n by deadline (and ctx).
func (b *Broker) dial(ctx context.Context, n node, deadline time.Time) (*amqp.Connection, error) {
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
	if n.tls != nil {
		cfg.TLSClientConfig = n.tls.Clone()
	}
	if b.external {
		cfg.SASL = []amqp.Authentication{&amqp.ExternalAuth{}}
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
	conn, err := amqp.DialConfig(n.uri, cfg)
	if err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, err
	}
	return conn, nil
}

// dialError turns a connection failure to node n into one line with the
// fix; within is the time the attempt had.
func (b *Broker) dialError(ctx context.Context, n node, err error, within time.Duration) error {
	op := "connect to " + n.redacted
	host := n.addr
	within = within.Round(100 * time.Millisecond)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		reason := cleanReason(ae.Reason)
		switch {
		case ae == amqp.ErrSASL && b.external:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Hint: broker.Hintf("the broker does not offer the EXTERNAL login: enable the rabbitmq_auth_mechanism_ssl plugin and list EXTERNAL in its auth_mechanisms, or log in with a password (%s)", broker.OptAuth.With("plain"))}
		case ae == amqp.ErrSASL:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Hint: broker.Hintf("the broker does not offer the PLAIN login: log in with the client certificate (%s), or enable PLAIN in its auth_mechanisms", broker.OptAuth.With("external"))}
		case ae.Code == amqp.AccessRefused && b.external:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("EXTERNAL login refused for the client certificate %s: its CN `%s` must be a RabbitMQ user (`rabbitmqctl add_user %s` then `clear_password %s`, with permissions on vhost `%s`), and the broker must take the user from the CN (ssl_cert_login_from = common_name)", b.amqpTLS.cert, b.user, b.user, b.user, b.vhost)}
		case ae.Code == amqp.AccessRefused && !ae.Server:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Hint: broker.Hintf("login refused for user `%s`: wrong username or password; check the credentials of %s or the context's password variable", b.user, broker.OptBroker)}
		case ae.Code == amqp.AccessRefused:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("login refused for user `%s` (%s): check the username and password", b.user, reason)}
		case ae.Code == amqp.NotAllowed && strings.Contains(reason, "not found"):
			return &broker.Error{Kind: broker.ErrNotFound, Op: op,
				Hint: broker.Hintf("vhost `%s` not found: check the path of %s (use /%%2F for the default vhost `/`), or list vhosts with `rabbitmqctl list_vhosts`", b.vhost, broker.OptBroker)}
		case ae.Code == amqp.NotAllowed && strings.Contains(reason, "access to vhost"):
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
				Msg: fmt.Sprintf("user `%s` has no access to vhost `%s`: grant it with `rabbitmqctl set_permissions -p %s %s '.*' '.*' '.*'`", b.user, b.vhost, b.vhost, b.user)}
		case ae.Code == amqp.NotAllowed && !ae.Server:
			return &broker.Error{Kind: broker.ErrNotFound, Op: op,
				Hint: broker.Hintf("vhost `%s` refused: it does not exist or user `%s` may not use it; check the path of %s", b.vhost, b.user, broker.OptBroker)}
		case ae.Code == amqp.NotAllowed:
			return &broker.Error{Kind: broker.ErrAccessDenied, Op: op, Msg: reason}
		case !ae.Server && strings.Contains(reason, "timeout"):
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Hint: broker.Hintf("no AMQP answer from %s within %s: is it a RabbitMQ AMQP port? check the port of %s, or raise %s", host, within, broker.OptBroker, broker.OptTimeout)}
		case !ae.Server && (strings.Contains(reason, "EOF") || strings.Contains(reason, "reset")):
			if e := b.tlsPortError(ctx, n, op); e != nil {
				return e
			}
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Hint: broker.Hintf("%s closed the connection during the handshake: check the port of %s (amqp:// 5672, amqps:// 5671)", host, broker.OptBroker)}
		case !ae.Server && ae.Code == amqp.FrameError:
			if e := b.tlsPortError(ctx, n, op); e != nil {
				return e
			}
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Hint: broker.Hintf("%s does not speak AMQP 0-9-1: check the host and port of %s", host, broker.OptBroker)}
		}
		return translateErr(op, err)
	}
	if isTLSError(err) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("tls handshake with %s failed: %s", host, tlsHint(err, b.amqpTLS))}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("no answer from %s within %s: check the host and port of %s, firewalls, or raise %s", host, within, broker.OptBroker, broker.OptTimeout)}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("cannot resolve host %q: check the host of %s", dnsErr.Name, broker.OptBroker)}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("cannot reach %s (%s): check the host and port of %s and that RabbitMQ is running", host, opErrText(oe), broker.OptBroker)}
	}
	if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF") {
		if e := b.tlsPortError(ctx, n, op); e != nil {
			return e
		}
		hint := broker.Hintf("check the port of %s", broker.OptBroker)
		if b.scheme == "amqp" {
			hint = broker.Hintf("is it a TLS port? use amqps:// — or %s", hint)
		}
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("%s closed the connection during the handshake: %s", host, hint)}
	}
	return translateErr(op, err)
}

// tlsPortError is the error for an amqp:// URL that names a TLS port, or
// nil when the URL is amqps:// or the port does not speak TLS.
func (b *Broker) tlsPortError(ctx context.Context, n node, op string) error {
	if b.scheme != "amqp" || !speaksTLS(ctx, n.addr, time.Now().Add(min(b.timeout, 5*time.Second))) {
		return nil
	}
	return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
		Hint: broker.Hintf("%s speaks TLS, and the broker URL is amqp://: use amqps:// in %s (with %s for a private CA)", n.addr, broker.OptBroker, broker.OptCAFile)}
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

func (b *Broker) setConn(c *amqp.Connection, node int) {
	b.mu.Lock()
	b.conn, b.cur = c, node
	if v := headerString(c.Properties["version"]); v != "" {
		b.amqpVersion = v
	}
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
// previous one was closed (by the broker, an operator, the network, or a
// node that went down), so that one lost connection does not end a long
// command for good. With several nodes the new connection goes to the next
// node that answers, beginning after the one that was lost.
func (b *Broker) connection(ctx context.Context) (*amqp.Connection, error) {
	b.mu.Lock()
	c, closed, cur := b.conn, b.closed, b.cur
	b.mu.Unlock()
	if closed {
		return nil, &broker.Error{Kind: broker.ErrUnreachable, Op: "use " + b.redacted, Msg: "the connection was closed"}
	}
	if c != nil && !c.IsClosed() {
		return c, nil
	}
	start := cur
	if c != nil && len(b.nodes) > 1 {
		start = (cur + 1) % len(b.nodes)
	}
	b.log.Debug("reconnecting", "broker", b.redacted, "lost", b.nodes[cur].addr)
	nc, idx, err := b.dialAny(ctx, start)
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
	b.setConn(nc, idx)
	if idx != cur {
		b.log.Warn("failed over", "broker", b.redacted, "from", b.nodes[cur].addr, "to", b.nodes[idx].addr)
	}
	return nc, nil
}

// node is the node in use (or last used) and its index.
func (b *Broker) node() (int, node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur, b.nodes[b.cur]
}

// Node is the address (host:port) of the node in use, or last used.
func (b *Broker) Node() string {
	_, n := b.node()
	return n.addr
}

// Nodes are the addresses (host:port) of every node, in the order tried.
func (b *Broker) Nodes() []string {
	out := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		out[i] = n.addr
	}
	return out
}

// System reports broker.RabbitMQ.
func (b *Broker) System() broker.System { return broker.RabbitMQ }

// String is the broker URL without the password; with several nodes it
// lists them all: amqp://user@h1:5672,h2:5672/vhost.
func (b *Broker) String() string { return b.redacted }

// Vhost is the virtual host this broker works in ("/" for the default).
func (b *Broker) Vhost() string { return b.vhost }

// ManagementURL is the management API base URL in use (the one of the node
// in use), without credentials.
func (b *Broker) ManagementURL() string {
	_, n := b.node()
	return n.mgmt.String()
}

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
