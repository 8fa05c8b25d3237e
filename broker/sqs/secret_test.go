package sqs

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestNoSecretInOutput drives every kind of failure with a recognisable
// secret key and checks that no error, String() or log line contains it.
func TestNoSecretInOutput(t *testing.T) {
	env := brokertest.SQS(t)
	const secret = "dlqSECRETvalue/9f8e7d6c5b4a39281706"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIADLQTESTKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", secret+"-token")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	var seen []string

	b, err := Open(ctx, Config{Endpoint: env.Endpoint, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	seen = append(seen, b.String())
	missing := baseName(t) + "-missing"
	_, err = b.Queue(ctx, missing)
	seen = append(seen, errText(err))
	_, err = b.Peek(ctx, missing, broker.PeekOptions{}, func(*broker.Message) error { return nil })
	seen = append(seen, errText(err))
	errs, err := b.Publish(ctx, []broker.Outgoing{{Dest: broker.Destination{Kind: broker.ToQueue, Queue: missing}, Message: &broker.Message{Body: []byte("x")}}})
	seen = append(seen, errText(err), errText(errs[0]))
	_, err = b.Origin(ctx, missing, &broker.Message{})
	seen = append(seen, errText(err))
	src, _ := createPair(t, b, 3, false)
	_, err = b.Peek(ctx, src, broker.PeekOptions{}, func(*broker.Message) error { return nil })
	seen = append(seen, errText(err))

	_, err = Open(ctx, Config{Endpoint: "http://127.0.0.1:1", Timeout: 3 * time.Second, Logger: logger})
	seen = append(seen, errText(err))
	_, err = Open(ctx, Config{Endpoint: "http://user:" + secret + "@127.0.0.1:1", Timeout: 3 * time.Second, Logger: logger})
	seen = append(seen, errText(err))

	seen = append(seen, logs.String())
	for _, s := range seen {
		if strings.Contains(s, secret) || strings.Contains(s, "dlqSECRETvalue") {
			t.Errorf("secret leaked: %q", s)
		}
	}
	if len(strings.Join(seen, "")) < 200 {
		t.Errorf("too little output to check: %q", seen)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
