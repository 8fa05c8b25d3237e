package rabbitmq

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestNoPasswordAnywhere collects every error, String() and log line the
// adapter produces on success and failure paths and checks that none holds
// the test password.
func TestNoPasswordAnywhere(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	ctx := context.Background()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var seen []string
	note := func(what string, v any) {
		if v == nil {
			return
		}
		switch x := v.(type) {
		case error:
			if x != nil {
				seen = append(seen, what+": "+x.Error())
			}
		case string:
			seen = append(seen, what+": "+x)
		}
	}
	open := func(cfg Config) *Broker {
		cfg.Logger = logger
		if cfg.Timeout == 0 {
			cfg.Timeout = 5 * time.Second
		}
		b, err := Open(ctx, cfg)
		note("open", err)
		return b
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	u, _ := url.Parse(env.AMQPURL)
	user := u.User.Username()

	for _, cfg := range []Config{
		{URL: env.AMQPURL, Password: "x" + env.Password},                                                       // wrong password
		{URL: "amqp://" + user + ":" + env.Password + "@" + dead + "/"},                                        // unreachable
		{URL: "amqps://" + user + ":" + env.Password + "@" + u.Host + "/"},                                     // TLS to a plain port
		{URL: "amqp://" + user + ":" + env.Password + "@" + u.Host + "/dlqt-missing-vhost"},                    // missing vhost
		{URL: "amqp://" + user + ":" + env.Password + "@" + u.Host + ":x:y/"},                                  // malformed
		{URL: "amqp://" + user + ":" + env.Password + "%zz@" + u.Host + "/"},                                   // bad escape
		{URL: "amqp://" + user + ":" + env.Password + "@" + u.Host + "/ with space"},                           // whitespace
		{URL: "amqp://" + user + ":" + env.Password + "@" + u.Host + "/?heartbeat=" + env.Password},            // bad query
		{URL: env.AMQPURL, ManagementURL: "http://" + user + ":" + env.Password + "@" + u.Hostname() + ":1:2"}, // bad mgmt URL
	} {
		if b := open(cfg); b != nil {
			note("string", b.String())
			b.Close()
		}
	}

	b := open(Config{URL: env.AMQPURL, ManagementURL: env.MgmtURL})
	if b == nil {
		t.Fatal("cannot open the test broker")
	}
	defer b.Close()
	note("string", b.String())
	note("mgmt url", b.ManagementURL())
	_, err = b.Queue(ctx, "dlqt-missing")
	note("queue", err)
	_, err = b.Peek(ctx, "dlqt-missing", broker.PeekOptions{}, func(*broker.Message) error { return nil })
	note("peek", err)
	_, err = b.Consume(ctx, "dlqt-missing", broker.ConsumeOptions{})
	note("consume", err)
	_, err = b.Purge(ctx, "dlqt-missing")
	note("purge", err)
	errs, err := b.Publish(ctx, []broker.Outgoing{
		{Message: &broker.Message{Body: []byte("x")}, Dest: broker.Destination{Kind: broker.ToExchange, Exchange: "dlqt-missing", RoutingKeys: []string{"k"}}},
		{Message: &broker.Message{Body: []byte("x")}, Dest: broker.Destination{Kind: broker.ToQueue, Queue: "dlqt-missing"}},
	})
	note("publish", err)
	for _, e := range errs {
		note("publish message", e)
	}
	_, err = b.Origin(ctx, "q", &broker.Message{ID: "m"})
	note("origin", err)

	// The management API with a wrong password, and unreachable.
	for _, mu := range []string{
		"http://" + user + ":x" + env.Password + "@" + strings.TrimPrefix(env.MgmtURL, "http://"),
		"http://" + dead,
	} {
		bm := open(Config{URL: env.AMQPURL, ManagementURL: mu})
		if bm == nil {
			t.Fatal("open")
		}
		_, err := bm.Queues(ctx)
		note("queues via "+bm.ManagementURL(), err)
		_, err = bm.Peek(ctx, "q", broker.PeekOptions{}, func(*broker.Message) error { return nil })
		note("peek", err)
		bm.Close()
	}

	if len(seen) < 15 {
		t.Fatalf("only %d outputs collected", len(seen))
	}
	for _, s := range append(seen, logs.String()) {
		if strings.Contains(s, env.Password) {
			t.Errorf("output contains the password: %s", s)
		}
	}
	t.Logf("checked %d outputs and %d bytes of logs", len(seen), logs.Len())
}
