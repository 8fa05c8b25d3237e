package rabbitmq

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// The tests of this file run against the RabbitMQ node with TLS that
// `make test` starts (scripts/brokers instance tls on 3.10, tls43 on 4.3).

// tlsURL is raw with its port replaced by the one of other (a URL or
// host:port), and with the user and password of user (nil: none).
func tlsURL(t *testing.T, raw, other string, user *url.Userinfo) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if other != "" {
		host := other
		if o, err := url.Parse(other); err == nil && o.Host != "" {
			host = o.Host
		}
		u.Host = host
	}
	u.User = user
	return u.String()
}

func openTLS(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	b, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// checkReads declares a queue, publishes three messages, and reads them back
// through the management API (Queue) and AMQP (Peek).
func checkReads(t *testing.T, b *Broker) {
	t.Helper()
	ctx := context.Background()
	q := brokertest.Name(t, "q")
	declareQueue(t, b, q, nil)
	publishN(t, b, q, "m", 3, nil)
	waitDepth(t, b, q, 3)
	got, err := b.Queue(ctx, q)
	if err != nil {
		t.Fatalf("Queue (management API): %v", err)
	}
	if got.Name != q {
		t.Errorf("Queue name %q, want %q", got.Name, q)
	}
	var ids []string
	if _, err := b.Peek(ctx, q, broker.PeekOptions{Limit: 3}, func(m *broker.Message) error {
		ids = append(ids, m.ID)
		return nil
	}); err != nil {
		t.Fatalf("Peek: %v", err)
	}
	if strings.Join(ids, ",") != "m-0,m-1,m-2" {
		t.Errorf("peeked %v, want m-0, m-1, m-2", ids)
	}
}

// TestTLSNodeLogins logs in over AMQPS with a password and with the client
// certificate (EXTERNAL, with management credentials of its own), and over
// plain AMQP next to an HTTPS management API.
func TestTLSNodeLogins(t *testing.T) {
	env := brokertest.TLS(t)
	t.Run("password over amqps", func(t *testing.T) {
		b := openTLS(t, Config{URL: env.AMQPSURL, CAFile: env.CAFile, ManagementURL: env.MgmtsURL,
			ManagementCertFile: env.CertFile, ManagementKeyFile: env.KeyFile})
		if b.user != "dlqtest" || b.external {
			t.Errorf("user %q external %v, want dlqtest with a password", b.user, b.external)
		}
		checkReads(t, b)
	})
	t.Run("client certificate", func(t *testing.T) {
		b := openTLS(t, Config{URL: tlsURL(t, env.AMQPSURL, "", nil), Auth: AuthExternal, CertFile: env.CertFile, KeyFile: env.KeyFile,
			CAFile: env.CAFile, ManagementURL: env.MgmtsURL, ManagementUser: env.MgmtUser, ManagementPassword: env.MgmtPassword})
		if b.user != env.CertUser || b.password != "" {
			t.Errorf("user %q (password set: %v), want %q without a password", b.user, b.password != "", env.CertUser)
		}
		if want := "amqps://" + env.CertUser + "@"; !strings.HasPrefix(b.String(), want) {
			t.Errorf("String() = %q, want it to begin with %q", b.String(), want)
		}
		checkReads(t, b)
	})
	t.Run("auth_mechanism=external in the URL", func(t *testing.T) {
		b := openTLS(t, Config{URL: tlsURL(t, env.AMQPSURL, "", nil) + "?auth_mechanism=external", CertFile: env.CertFile, KeyFile: env.KeyFile,
			CAFile: env.CAFile, ManagementURL: env.MgmtsURL, ManagementUser: env.MgmtUser, ManagementPassword: env.MgmtPassword})
		if !b.external || b.user != env.CertUser {
			t.Errorf("external %v user %q, want an EXTERNAL login as %q", b.external, b.user, env.CertUser)
		}
		checkReads(t, b)
	})
	t.Run("plain amqp next to an https management API", func(t *testing.T) {
		// The TLS files serve the management API; AMQP stays plain.
		b := openTLS(t, Config{URL: env.AMQPURL, CAFile: env.CAFile, CertFile: env.CertFile, KeyFile: env.KeyFile, ManagementURL: env.MgmtsURL})
		if b.nodes[0].tls != nil {
			t.Errorf("amqp:// got a TLS configuration")
		}
		checkReads(t, b)
	})
}

// TestTLSNodeErrors makes each TLS and login mistake against the real node:
// each is one line that names the fix, of the right kind, without a secret.
func TestTLSNodeErrors(t *testing.T) {
	env := brokertest.TLS(t)
	pw := url.UserPassword("dlqtest", env.Password)
	certOnly := func(cfg Config) Config {
		cfg.Auth, cfg.CertFile, cfg.KeyFile, cfg.CAFile = AuthExternal, env.CertFile, env.KeyFile, env.CAFile
		return cfg
	}
	tests := []struct {
		name string
		cfg  Config
		// atQueues: Open succeeds; the management API call fails.
		atQueues bool
		kind     error // nil: a configuration error of no broker kind
		want     []string
	}{
		{name: "unknown CA", cfg: Config{URL: env.AMQPSURL}, kind: broker.ErrUnreachable,
			want: []string{"tls handshake", "unknown authority", "`ca-file`"}},
		{name: "wrong CA file", cfg: Config{URL: env.AMQPSURL, CAFile: env.OtherCAFile}, kind: broker.ErrUnreachable,
			want: []string{"unknown authority", env.OtherCAFile, "does not hold the CA", "`ca-file`"}},
		{name: "amqps to the plain port", cfg: Config{URL: tlsURL(t, env.AMQPSURL, env.AMQPURL, pw), CAFile: env.CAFile}, kind: broker.ErrUnreachable,
			want: []string{"does not speak TLS", "use amqp://"}},
		{name: "amqp to the TLS port", cfg: Config{URL: tlsURL(t, env.AMQPURL, env.AMQPSURL, pw)}, kind: broker.ErrUnreachable,
			want: []string{"speaks TLS", "use amqps://"}},
		{name: "management wants a client certificate", cfg: Config{URL: env.AMQPSURL, CAFile: env.CAFile, ManagementURL: env.MgmtsURL},
			atQueues: true, kind: broker.ErrUnreachable,
			want: []string{"requires a client certificate", "`management-cert-file` and `management-key-file`"}},
		{name: "management CA unknown", cfg: Config{URL: env.AMQPSURL, CAFile: env.CAFile, ManagementCAFile: env.OtherCAFile,
			ManagementCertFile: env.CertFile, ManagementKeyFile: env.KeyFile, ManagementURL: env.MgmtsURL},
			atQueues: true, kind: broker.ErrUnreachable, want: []string{"unknown authority", "`management-ca-file`"}},
		{name: "http to the https management port", cfg: Config{URL: env.AMQPSURL, CAFile: env.CAFile, ManagementURL: tlsURL(t, env.MgmtURL, env.MgmtsURL, nil)},
			atQueues: true, kind: broker.ErrUnreachable, want: []string{"speaks HTTPS", "`management-url " + env.MgmtsURL + "`"}},
		{name: "https to the http management port", cfg: Config{URL: env.AMQPSURL, CAFile: env.CAFile, ManagementURL: tlsURL(t, env.MgmtsURL, env.MgmtURL, nil)},
			atQueues: true, kind: broker.ErrUnreachable, want: []string{"speaks plain HTTP", "`management-url " + env.MgmtURL + "`"}},
		{name: "external with a certificate of no user", cfg: Config{URL: tlsURL(t, env.AMQPSURL, "", nil), Auth: AuthExternal,
			CertFile: env.StrangerCertFile, KeyFile: env.StrangerKeyFile, CAFile: env.CAFile}, kind: broker.ErrAccessDenied,
			want: []string{"EXTERNAL login refused", "CN `dlqstranger` must be a RabbitMQ user"}},
		{name: "external without management credentials", cfg: certOnly(Config{URL: tlsURL(t, env.AMQPSURL, "", nil), ManagementURL: env.MgmtsURL}),
			atQueues: true, kind: broker.ErrAccessDenied, want: []string{"`management-user`", "DLQ_MANAGEMENT_PASSWORD"}},
		{name: "external with a wrong management password", cfg: certOnly(Config{URL: tlsURL(t, env.AMQPSURL, "", nil), ManagementURL: env.MgmtsURL,
			ManagementUser: env.MgmtUser, ManagementPassword: "not-" + env.MgmtPassword}),
			atQueues: true, kind: broker.ErrAccessDenied, want: []string{"refused the login of user `" + env.MgmtUser + "`"}},
		{name: "external without a certificate", cfg: Config{URL: tlsURL(t, env.AMQPSURL, "", nil), Auth: AuthExternal, CAFile: env.CAFile},
			want: []string{"`cert-file` and `key-file`"}},
		{name: "external over amqp", cfg: Config{URL: tlsURL(t, env.AMQPURL, "", nil), Auth: AuthExternal, CertFile: env.CertFile, KeyFile: env.KeyFile},
			want: []string{"use amqps://"}},
		{name: "unknown mechanism", cfg: Config{URL: env.AMQPSURL, Auth: "kerberos"}, want: []string{"`auth plain`", "`auth external`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Timeout = 10 * time.Second
			b, err := Open(context.Background(), tt.cfg)
			if tt.atQueues {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer b.Close()
				_, err = b.Queues(context.Background())
			} else if err == nil {
				b.Close()
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, secret := range []string{env.Password, env.MgmtPassword} {
				if strings.Contains(msg, secret) {
					t.Errorf("error holds a password: %s", strings.ReplaceAll(msg, secret, "<SECRET>"))
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error is not %v: %s", tt.kind, msg)
			}
		})
	}
}
