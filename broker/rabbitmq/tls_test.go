package rabbitmq

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// TestOpenTLS dials a TLS server whose certificate no system CA signed.
// Verification must fail with the fix named, and succeed with the CA file
// or the explicit insecure switch (the server then is no AMQP broker).
func TestOpenTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	url := "amqps://user:s3cret-tls@" + strings.TrimPrefix(srv.URL, "https://") + "/"
	tests := []struct {
		name    string
		cfg     Config
		tlsFail bool
	}{
		{name: "unknown authority", cfg: Config{URL: url}, tlsFail: true},
		{name: "with the CA file", cfg: Config{URL: url, CAFile: ca}},
		{name: "insecure", cfg: Config{URL: url, InsecureSkipVerify: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Timeout = time.Second
			_, err := Open(context.Background(), tt.cfg)
			if err == nil {
				t.Fatal("Open succeeded against an HTTPS server")
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "s3cret-tls") {
				t.Fatalf("error holds the password: %s", msg)
			}
			if !errors.Is(err, broker.ErrUnreachable) {
				t.Errorf("error %q is not ErrUnreachable", msg)
			}
			isTLS := strings.Contains(msg, "tls handshake")
			if isTLS != tt.tlsFail {
				t.Errorf("tls failure reported = %v, want %v: %s", isTLS, tt.tlsFail, msg)
			}
			if tt.tlsFail && !strings.Contains(msg, "`--ca-file`") {
				t.Errorf("tls error does not name `--ca-file`: %s", msg)
			}
		})
	}
}
