package rabbitmq

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// openTest connects to the test server and closes the broker at the end.
func openTest(t *testing.T) (*Broker, brokertest.RabbitEnv) {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	b, err := Open(context.Background(), Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, env
}

func withURL(t *testing.T, raw string, edit func(u *url.URL)) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	edit(u)
	return u.String()
}

func TestOpen(t *testing.T) {
	b, env := openTest(t)
	if b.System() != broker.RabbitMQ {
		t.Errorf("System() = %q", b.System())
	}
	if b.Vhost() != "/" {
		t.Errorf("Vhost() = %q, want /", b.Vhost())
	}
	if strings.Contains(b.String(), env.Password) || !strings.HasPrefix(b.String(), "amqp://") {
		t.Errorf("String() = %q: want a URL without the password", b.String())
	}
	var overview struct {
		RabbitMQVersion string `json:"rabbitmq_version"`
	}
	if err := b.mgmtDo(context.Background(), "GET", "/overview", nil, &overview); err != nil {
		t.Fatalf("mgmtDo overview: %v", err)
	}
	if overview.RabbitMQVersion == "" {
		t.Errorf("overview has no rabbitmq_version")
	}
}

func TestOpenPasswordOverride(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	noPass := withURL(t, env.AMQPURL, func(u *url.URL) { u.User = url.User(u.User.Username()) })
	b, err := Open(context.Background(), Config{URL: noPass, Password: env.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open with Config.Password: %v", err)
	}
	defer b.Close()
	wrong := withURL(t, env.AMQPURL, func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), "wrong") })
	b2, err := Open(context.Background(), Config{URL: wrong, Password: env.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Config.Password must override the URL's password: %v", err)
	}
	b2.Close()
}

func TestOpenDerivedManagementURL(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	b, err := newBroker(Config{URL: env.AMQPURL})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(env.AMQPURL)
	if want := "http://" + u.Hostname() + ":15672"; b.ManagementURL() != want {
		t.Errorf("derived management URL = %q, want %q", b.ManagementURL(), want)
	}
	bs, err := newBroker(Config{URL: "amqps://u:p@rabbit.example:5671/prod"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://rabbit.example:15671"; bs.ManagementURL() != want {
		t.Errorf("derived management URL = %q, want %q", bs.ManagementURL(), want)
	}
	if bs.Vhost() != "prod" {
		t.Errorf("vhost = %q, want prod", bs.Vhost())
	}
	bm, err := newBroker(Config{URL: "amqp://u:p@h/%2F", ManagementURL: "http://admin:secret@h:15999/api/"})
	if err != nil {
		t.Fatal(err)
	}
	if bm.ManagementURL() != "http://h:15999" || bm.nodes[0].mgmtUser != "admin" || bm.nodes[0].mgmtPass != "secret" || bm.Vhost() != "/" {
		t.Errorf("management URL %q user %q vhost %q", bm.ManagementURL(), bm.nodes[0].mgmtUser, bm.Vhost())
	}
}

func TestOpenFailures(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := l.Addr().(*net.TCPAddr).Port
	l.Close()

	tests := []struct {
		name string
		cfg  Config
		kind error  // nil: no broker kind (bad input)
		want string // part of the message
	}{
		{
			name: "wrong password",
			cfg:  Config{URL: env.AMQPURL, Password: "not-" + env.Password},
			kind: broker.ErrAccessDenied,
			want: "wrong username or password",
		},
		{
			name: "missing vhost",
			cfg:  Config{URL: withURL(t, env.AMQPURL, func(u *url.URL) { u.Path = "/no-such-vhost-dlq" })},
			kind: broker.ErrNotFound,
			want: "vhost `no-such-vhost-dlq` not found",
		},
		{
			name: "unreachable",
			cfg:  Config{URL: withURL(t, env.AMQPURL, func(u *url.URL) { u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(deadPort)) })},
			kind: broker.ErrUnreachable,
			want: "cannot reach 127.0.0.1:" + strconv.Itoa(deadPort),
		},
		{
			name: "tls to a plain port",
			cfg:  Config{URL: withURL(t, env.AMQPURL, func(u *url.URL) { u.Scheme = "amqps" })},
			kind: broker.ErrUnreachable,
			want: "tls handshake",
		},
		{
			name: "malformed URL",
			cfg:  Config{URL: "amqp://user:" + env.Password + "@host:port:5672/%zz"},
			want: "malformed broker URL",
		},
		{
			name: "wrong scheme",
			cfg:  Config{URL: "http://user:" + env.Password + "@127.0.0.1:5672/"},
			want: "is not amqp://",
		},
		{
			name: "no host",
			cfg:  Config{URL: "amqp://user:" + env.Password + "@/vhost"},
			want: "no host",
		},
		{
			name: "missing CA file",
			cfg:  Config{URL: env.AMQPURL, CAFile: "/nonexistent/ca.pem"},
			want: "`ca-file`",
		},
		{
			name: "empty",
			cfg:  Config{},
			want: "no broker URL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Timeout = 5 * time.Second
			start := time.Now()
			b, err := Open(context.Background(), tt.cfg)
			if err == nil {
				b.Close()
				t.Fatalf("Open succeeded, want an error")
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, env.Password) {
				t.Fatalf("error contains the password: %s", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %q is not %v", msg, tt.kind)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Open took %s with a 5s timeout", d)
			}
		})
	}
}

func TestOpenTimeout(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	// A listener that accepts and never answers: the handshake must give up
	// within the timeout.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	url := withURL(t, env.AMQPURL, func(u *url.URL) { u.Host = l.Addr().String() })
	_, err = Open(context.Background(), Config{URL: url, Timeout: 300 * time.Millisecond})
	if err == nil || !errors.Is(err, broker.ErrUnreachable) {
		t.Fatalf("Open against a silent server: %v, want ErrUnreachable", err)
	}
	if strings.Contains(err.Error(), env.Password) {
		t.Fatalf("error contains the password: %v", err)
	}
}

func TestMgmtErrors(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	err := b.mgmtDo(ctx, "GET", "/queues/%2F/no-such-queue-dlq", nil, &struct{}{})
	if !errors.Is(err, broker.ErrNotFound) {
		t.Errorf("missing queue: %v, want ErrNotFound", err)
	}
	bad, err := Open(ctx, Config{URL: b.nodes[0].uri, ManagementURL: withURL(t, b.ManagementURL(), func(u *url.URL) { u.User = url.UserPassword(b.user, "wrong") })})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.mgmtDo(ctx, "GET", "/overview", nil, &struct{}{})
	if !errors.Is(err, broker.ErrAccessDenied) {
		t.Errorf("wrong password: %v, want ErrAccessDenied", err)
	}
	err = b.mgmtDo(ctx, "PUT", "/policies/%2F/dlqt-bad", map[string]any{"pattern": "x", "definition": map[string]any{"no-such-key": 1}}, nil)
	if !errors.Is(err, broker.ErrConflict) {
		t.Errorf("invalid policy: %v, want ErrConflict", err)
	}
}
