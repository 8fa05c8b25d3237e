package rabbitmq

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// A management API dlq cannot reach is named by URL; when dlq guessed it
// and the AMQP port is not the default either, the error says so and how
// to give the real address.
func TestManagementErrorNamesTheGuess(t *testing.T) {
	b := &Broker{}
	refused := errors.New("connect: connection refused")
	for _, tc := range []struct {
		addr    string
		guessed bool
		hint    bool
	}{
		{"rabbit:5673", true, true},
		{"rabbit:5672", true, false},
		{"rabbit:5673", false, false},
	} {
		n := node{addr: tc.addr, mgmt: &url.URL{Scheme: "http", Host: "rabbit:15672"}, mgmtGuessed: tc.guessed}
		msg := b.mgmtNetErr(context.Background(), n, "management API GET /api/queues", refused).Error()
		if !strings.Contains(msg, "at http://rabbit:15672") {
			t.Errorf("%s: the URL is not named: %s", tc.addr, msg)
		}
		if got := strings.Contains(msg, "dlq guessed http://rabbit:15672") && strings.Contains(msg, "AMQP is on port 5673") && strings.Contains(msg, "`management-url"); got != tc.hint {
			t.Errorf("%s guessed=%v: hint %v, want %v: %s", tc.addr, tc.guessed, got, tc.hint, msg)
		}
	}
	msg := b.mgmtHTTPErr(node{addr: "rabbit:5672", mgmt: &url.URL{Scheme: "http", Host: "rabbit:15672"}}, "op", 502, nil).Error()
	if !strings.Contains(msg, "the management API at http://rabbit:15672 answered 502") {
		t.Errorf("status error: %s", msg)
	}
}
