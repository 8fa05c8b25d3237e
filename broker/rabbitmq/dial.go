package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

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
			conn := coalesceWrites(c)
			if n.tls != nil {
				t := tls.Client(conn, n.tls.Clone())
				if err := t.HandshakeContext(dctx); err != nil {
					_ = conn.Close()
					return nil, err
				}
				conn = t
			}
			return guardFrames(conn), nil
		},
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
