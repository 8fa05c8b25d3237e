package sqs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// cutAfterSend forwards requests to endpoint; the first SendMessageBatch
// reaches the server, which stores its messages, and then its connection is
// closed without an answer, as when the server restarts at that instant.
func cutAfterSend(t *testing.T, endpoint string) *httptest.Server {
	var cut atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, endpoint+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".SendMessageBatch") && cut.CompareAndSwap(false, true) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A send whose answer is lost is sent again by the SDK: the queue then
// holds the messages twice, and Publish says so (Outgoing.Resent) instead
// of reporting a clean move.
func TestPublishReportsResentAfterALostAnswer(t *testing.T) {
	env := brokertest.SQS(t)
	direct := openAt(t, env.Endpoint)
	q := createQueue(t, direct, baseName(t), nil)
	b := openAt(t, cutAfterSend(t, env.Endpoint).URL)

	out := []broker.Outgoing{
		{Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}, Message: &broker.Message{Body: []byte("a")}},
		{Dest: broker.Destination{Kind: broker.ToQueue, Queue: q}, Message: &broker.Message{Body: []byte("b")}},
	}
	errs, err := b.Publish(context.Background(), out)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("publish: %v %v", err, errs)
	}
	if !out[0].Resent || !out[1].Resent {
		t.Errorf("Resent = %v, %v; want both true", out[0].Resent, out[1].Resent)
	}
	if got := len(drain(t, direct, q)); got != 4 {
		t.Errorf("the queue holds %d messages, want 4 (each sent twice)", got)
	}

	// A send answered at once is not marked.
	out = out[:1]
	out[0].Resent = false
	if errs, err := b.Publish(context.Background(), out); err != nil || errs[0] != nil || out[0].Resent {
		t.Errorf("second publish: %v %v resent %v", err, errs, out[0].Resent)
	}
}

// An attempt answered with a server error (a 502 from a proxy whose
// upstream restarted mid-request, SQS's own 500) may have stored the
// messages: a retry after it may send them twice. A 4xx is a refusal.
func TestSentTwiceAfterAServerError(t *testing.T) {
	for _, c := range []struct {
		status int
		want   bool
	}{{502, true}, {500, true}, {400, false}, {403, false}} {
		results := []retry.AttemptResult{
			{Err: &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: c.status}}, Err: errors.New("failed")}}},
			{},
		}
		if got := sentAgainAfter(results); got != c.want {
			t.Errorf("an attempt answered %d, then a retry: sentTwice = %v, want %v", c.status, got, c.want)
		}
	}
}
