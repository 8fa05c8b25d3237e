package rabbitmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// mgmtDo calls the management HTTP API. path is relative to /api and already
// escaped, for example "/queues/"+url.PathEscape(b.vhost)+"/"+url.PathEscape(name)
// (a query string may follow). in, when not nil, is sent as the JSON body;
// out, when not nil, receives the JSON answer (numbers in interface values
// decode as json.Number). Basic auth uses the management credentials. The
// call is bounded by ctx and the broker's timeout.
//
// It asks the management API of the node in use. With several nodes, when
// that API cannot be reached, the node may be down: mgmtDo then lets the
// AMQP connection fail over (connection) and follows it, and else asks the
// other nodes' APIs in turn (every node of a cluster answers for all of
// it). Every call dlq makes (GET, PUT, DELETE) may safely be sent again.
//
// HTTP errors are translated with the server's reason: 404 → ErrNotFound,
// 401/403 → ErrAccessDenied, 400/409 → ErrConflict, a refused or timed-out
// connection → ErrUnreachable; callers that know what was missing (a queue,
// a vhost) should rephrase ErrNotFound with the name and the fix.
//
// The first call checks that the API belongs to the broker of the AMQP
// connection (see checkCluster) and every call fails when it does not.
func (b *Broker) mgmtDo(ctx context.Context, method, path string, in, out any) error {
	if err := b.checkCluster(ctx); err != nil {
		return err
	}
	return b.mgmtCall(ctx, method, path, in, out)
}

// mgmtCall is mgmtDo without the cluster check.
func (b *Broker) mgmtCall(ctx context.Context, method, path string, in, out any) error {
	op := "management API " + method + " " + strings.SplitN(path, "?", 2)[0]
	var data []byte
	if in != nil {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s: encode request: %w", op, err)
		}
	}
	idx, n := b.node()
	netFail, err := b.mgmtOnce(ctx, n, op, method, path, data, out)
	if !netFail || len(b.nodes) == 1 || ctx.Err() != nil {
		return err
	}
	tried := map[int]bool{idx: true}
	failed := []string{n.mgmt.String()}
	b.log.Warn("management API unreachable", "url", n.mgmt.String(), "node", n.addr)
	// The node in use may be down: reconnect (to the next node that
	// answers) and follow the connection.
	if _, cerr := b.connection(ctx); cerr == nil {
		if j, n2 := b.node(); !tried[j] {
			tried[j] = true
			if netFail, err = b.mgmtOnce(ctx, n2, op, method, path, data, out); !netFail {
				return err
			}
			failed = append(failed, n2.mgmt.String())
		}
	}
	for j, n2 := range b.nodes {
		if tried[j] || ctx.Err() != nil {
			continue
		}
		if netFail, err = b.mgmtOnce(ctx, n2, op, method, path, data, out); !netFail {
			b.log.Warn("asked another node's management API", "url", n2.mgmt.String())
			return err
		}
		failed = append(failed, n2.mgmt.String())
	}
	if ctx.Err() != nil {
		return err
	}
	return &broker.Error{Kind: broker.ErrUnreachable, Op: op, Err: err,
		Hint: broker.Hintf("no node's management API answered (%s): check %s (one URL, or one per node in order), and that the rabbitmq_management plugin runs", strings.Join(failed, ", "), broker.OptManagementURL)}
}

// mgmtOnce makes one call to node n's management API. netFail reports that
// the API could not be reached at all (no HTTP answer), so that another
// node may be asked.
func (b *Broker) mgmtOnce(ctx context.Context, n node, op, method, path string, data []byte, out any) (netFail bool, err error) {
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	if n.mgmtUser == "" {
		// Without a user the API would see guest/guest: say what is missing.
		return false, &broker.Error{Kind: broker.ErrAccessDenied, Op: op,
			Hint: broker.Hintf("the management API needs a user and password, and an EXTERNAL login (%s) has none: set %s and DLQ_MANAGEMENT_PASSWORD (a context: `management_user` and `management_password_env`)", broker.OptAuth.With("external"), broker.OptManagementUser)}
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.mgmt.String()+"/api"+path, body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	req.SetBasicAuth(n.mgmtUser, n.mgmtPass)
	req.Header.Set("Accept", "application/json")
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.http.Do(req)
	if err != nil {
		if e := schemeMismatch(ctx, n, op, err); e != nil {
			return false, e
		}
		return !isTLSError(err), b.mgmtNetErr(ctx, n, op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, b.mgmtHTTPErr(n, op, resp.StatusCode, data)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false, nil
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return false, broker.Hintf("%s: decode answer: %v: is %s the RabbitMQ management API?", op, err, broker.OptManagementURL)
	}
	return false, nil
}

// schemeMismatch is the error for an http:// URL of an HTTPS port or an
// https:// URL of a plain HTTP port; nil for other failures.
func schemeMismatch(ctx context.Context, n node, op string, err error) error {
	s := err.Error()
	other := *n.mgmt
	switch {
	case n.mgmt.Scheme == "https" && strings.Contains(s, "server gave HTTP response to HTTPS client"):
		other.Scheme = "http"
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("the management API at %s speaks plain HTTP, not HTTPS: use %s", n.mgmt, broker.OptManagementURL.With(other.String()))}
	case n.mgmt.Scheme == "http" && (strings.Contains(s, `malformed HTTP response "\x15\x03`) ||
		((errors.Is(err, io.EOF) || strings.Contains(s, "EOF")) && ctx.Err() == nil && speaksTLS(ctx, n.mgmt.Host, time.Now().Add(5*time.Second)))):
		other.Scheme = "https"
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
			Hint: broker.Hintf("the management API at %s speaks HTTPS, not plain HTTP: use %s", n.mgmt, broker.OptManagementURL.With(other.String()))}
	}
	return nil
}

func (b *Broker) mgmtNetErr(ctx context.Context, n node, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && (err == nil || !errors.Is(err, context.Canceled)) {
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Hint: broker.Hintf("no answer from the management API at %s within %s: check %s, or raise %s", n.mgmt, b.timeout, broker.OptManagementURL, broker.OptTimeout)}
		}
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	var ne net.Error
	msg := broker.Hintf("cannot reach the management API at %s: enable the rabbitmq_management plugin, or pass its address with %s", n.mgmt, broker.OptManagementURL)
	if isTLSError(err) {
		msg = broker.Hintf("tls handshake with the management API at %s failed: %s", n.mgmt, tlsHint(err, b.mgmtTLS))
	} else if errors.As(err, &ne) && ne.Timeout() {
		msg = broker.Hintf("no answer from the management API at %s within %s: check %s, or raise %s", n.mgmt, b.timeout, broker.OptManagementURL, broker.OptTimeout)
	}
	return &broker.Error{Kind: broker.ErrUnreachable, Op: op, Hint: broker.Hintf("%s%s", msg, n.guessHint())}
}

func (b *Broker) mgmtHTTPErr(n node, op string, status int, data []byte) error {
	var e struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(data, &e)
	reason := strings.TrimSpace(e.Reason)
	if reason == "" {
		reason = strings.TrimSpace(e.Error)
	}
	if reason == "" {
		reason = http.StatusText(status)
	}
	reason = strings.ToLower(reason[:1]) + reason[1:]
	be := &broker.Error{Op: op}
	switch status {
	case http.StatusNotFound:
		be.Kind = broker.ErrNotFound
		be.Msg = reason
	case http.StatusUnauthorized:
		be.Kind = broker.ErrAccessDenied
		be.Hint = broker.Hintf("the management API at %s refused the login of user `%s` (%s): check the password (the API's own login: %s and DLQ_MANAGEMENT_PASSWORD), and that the user has the `management` or `monitoring` tag", n.mgmt, n.mgmtUser, reason, broker.OptManagementUser)
	case http.StatusForbidden:
		be.Kind = broker.ErrAccessDenied
		be.Msg = fmt.Sprintf("user `%s` may not do this at %s (%s): grant the permission or a management tag", n.mgmtUser, n.mgmt, reason)
	case http.StatusBadRequest, http.StatusConflict:
		be.Kind = broker.ErrConflict
		be.Msg = reason
	default:
		be.Kind = broker.ErrUnreachable
		be.Hint = broker.Hintf("the management API at %s answered %d (%s)%s", n.mgmt, status, reason, n.guessHint())
	}
	return be
}

// checkCluster makes sure, once per Broker, that the management API is the
// one of the broker the AMQP connection is open to: a --management-url of
// another cluster (or a guessed HOST:15672 where the AMQP port is not the
// default, and another broker answers) would list and change another
// broker's queues. It compares the cluster name the AMQP server announced
// in its connection properties with the API's (GET /api/cluster-name, which
// computes nothing, unlike /api/overview, which is asked only to name the
// other cluster in the error). Nothing is refused when either side does not
// say its name (an older server, a user without the rights to read it):
// the call itself then reports its own problem.
func (b *Broker) checkCluster(ctx context.Context) error {
	b.clusterMu.Lock()
	defer b.clusterMu.Unlock()
	if b.clusterDone {
		return b.clusterErr
	}
	c, err := b.connection(ctx)
	if err != nil {
		return err
	}
	amqpName := headerString(c.Properties["cluster_name"])
	if amqpName == "" {
		b.clusterDone = true
		return nil
	}
	var got struct {
		Name string `json:"name"`
	}
	if err := b.mgmtCall(ctx, http.MethodGet, "/cluster-name", nil, &got); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("check the management API's cluster: %w", ctx.Err())
		}
		b.log.Debug("management API cluster name unknown", "err", err)
		b.clusterDone = true
		return nil
	}
	b.clusterDone = true
	if got.Name == "" || got.Name == amqpName {
		return nil
	}
	var ov struct {
		Node    string `json:"node"`
		Version string `json:"rabbitmq_version"`
	}
	_ = b.mgmtCall(ctx, http.MethodGet, "/overview?columns=node,rabbitmq_version", nil, &ov)
	_, n := b.node()
	other := "cluster `" + got.Name + "`"
	if ov.Node != "" {
		other += ", node `" + ov.Node + "`"
	}
	if ov.Version != "" {
		other += ", RabbitMQ " + ov.Version
	}
	ours := "cluster `" + amqpName + "`"
	if v := headerString(c.Properties["version"]); v != "" {
		ours += ", RabbitMQ " + v
	}
	guess := broker.Hintf("")
	if n.mgmtGuessed {
		_, port, _ := net.SplitHostPort(n.addr)
		guess = broker.Hintf("; dlq guessed %s, the default management port on the AMQP host, because no %s was given (AMQP is on port %s), and this check is what makes that guess safe", n.mgmt, broker.OptManagementURL, port)
	}
	b.clusterErr = &broker.Error{Kind: broker.ErrConflict, Op: "use the management API at " + n.mgmt.String(),
		Hint: broker.Hintf("it belongs to %s, not to the broker dlq is connected to at %s (%s)%s: pass that broker's management API with %s",
			other, n.addr, ours, guess, broker.OptManagementURL.With("http://HOST:PORT"))}
	return b.clusterErr
}
