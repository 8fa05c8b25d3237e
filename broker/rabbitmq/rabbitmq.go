package rabbitmq

import (
	"context"
	"errors"
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
