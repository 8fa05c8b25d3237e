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

	"github.com/dlq-tools/dlq/broker"
)

// mgmtDo calls the management HTTP API. path is relative to /api and already
// escaped, for example "/queues/"+url.PathEscape(b.vhost)+"/"+url.PathEscape(name)
// (a query string may follow). in, when not nil, is sent as the JSON body;
// out, when not nil, receives the JSON answer (numbers in interface values
// decode as json.Number). Basic auth uses the management credentials. The
// call is bounded by ctx and the broker's timeout.
//
// HTTP errors are translated with the server's reason: 404 → ErrNotFound,
// 401/403 → ErrAccessDenied, 400/409 → ErrConflict, a refused or timed-out
// connection → ErrUnreachable; callers that know what was missing (a queue,
// a vhost) should rephrase ErrNotFound with the name and the fix.
func (b *Broker) mgmtDo(ctx context.Context, method, path string, in, out any) error {
	op := "management API " + method + " " + strings.SplitN(path, "?", 2)[0]
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: encode request: %w", op, err)
		}
		body = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.mgmtBase.String()+"/api"+path, body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.SetBasicAuth(b.mgmtUser, b.mgmtPass)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return b.mgmtNetErr(ctx, op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return b.mgmtHTTPErr(op, resp.StatusCode, data)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		return fmt.Errorf("%s: decode answer: %v: is `--management-url` the RabbitMQ management API?", op, err)
	}
	return nil
}

func (b *Broker) mgmtNetErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && (err == nil || !errors.Is(err, context.Canceled)) {
			return &broker.Error{Kind: broker.ErrUnreachable, Op: op,
				Msg: fmt.Sprintf("no answer from the management API at %s within %s: check `--management-url`, or raise `--timeout`", b.mgmtBase, b.timeout)}
		}
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	var ne net.Error
	msg := fmt.Sprintf("cannot reach the management API at %s: enable the rabbitmq_management plugin, or pass its address with `--management-url`", b.mgmtBase)
	if isTLSError(err) {
		msg = fmt.Sprintf("tls handshake with the management API at %s failed: %s", b.mgmtBase, tlsHint(err))
	} else if errors.As(err, &ne) && ne.Timeout() {
		msg = fmt.Sprintf("no answer from the management API at %s within %s: check `--management-url`, or raise `--timeout`", b.mgmtBase, b.timeout)
	}
	return &broker.Error{Kind: broker.ErrUnreachable, Op: op, Msg: msg}
}

func (b *Broker) mgmtHTTPErr(op string, status int, data []byte) error {
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
		be.Msg = fmt.Sprintf("the management API refused the login of user `%s` (%s): check the password, and that the user has the `management` or `monitoring` tag", b.mgmtUser, reason)
	case http.StatusForbidden:
		be.Kind = broker.ErrAccessDenied
		be.Msg = fmt.Sprintf("user `%s` may not do this (%s): grant the permission or a management tag", b.mgmtUser, reason)
	case http.StatusBadRequest, http.StatusConflict:
		be.Kind = broker.ErrConflict
		be.Msg = reason
	default:
		be.Kind = broker.ErrUnreachable
		be.Msg = fmt.Sprintf("the management API answered %d (%s)", status, reason)
	}
	return be
}
