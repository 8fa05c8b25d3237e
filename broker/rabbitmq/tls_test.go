package rabbitmq

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
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
			if tt.tlsFail && !strings.Contains(msg, "`ca-file`") {
				t.Errorf("tls error does not name `ca-file`: %s", msg)
			}
		})
	}
}

// Which credentials the management API gets: the management user's, else
// the AMQP login's (with the management password when given), else those
// in the management URL; an EXTERNAL login has none to lend.
func TestManagementCredentials(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTestCert(t, dir, "dlq-cert-user")
	tests := []struct {
		name     string
		cfg      Config
		user, pw string
	}{
		{name: "the AMQP login", cfg: Config{URL: "amqp://ops:amqp-pw@h/"}, user: "ops", pw: "amqp-pw"},
		{name: "management password alone", cfg: Config{URL: "amqp://ops:amqp-pw@h/", ManagementPassword: "mgmt-pw"}, user: "ops", pw: "mgmt-pw"},
		{name: "management user", cfg: Config{URL: "amqp://ops:amqp-pw@h/", ManagementUser: "admin", ManagementPassword: "mgmt-pw"}, user: "admin", pw: "mgmt-pw"},
		{name: "the management URL's", cfg: Config{URL: "amqp://ops:amqp-pw@h/", ManagementUser: "admin", ManagementPassword: "mgmt-pw",
			ManagementURL: "http://web:url-pw@h:15672"}, user: "web", pw: "url-pw"},
		{name: "external: none", cfg: Config{URL: "amqps://ops@h/", Auth: AuthExternal, CertFile: cert, KeyFile: key}},
		{name: "external with a management user", cfg: Config{URL: "amqps://h/", Auth: AuthExternal, CertFile: cert, KeyFile: key,
			ManagementUser: "admin", ManagementPassword: "mgmt-pw"}, user: "admin", pw: "mgmt-pw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := newBroker(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := b.nodes[0]
			if n.mgmtUser != tt.user || n.mgmtPass != tt.pw {
				t.Errorf("management login %q/%q, want %q/%q", n.mgmtUser, n.mgmtPass, tt.user, tt.pw)
			}
			if tt.cfg.Auth == AuthExternal && (b.user != "dlq-cert-user" || b.password != "") {
				t.Errorf("EXTERNAL login as %q (password set: %v), want the certificate's CN without a password", b.user, b.password != "")
			}
		})
	}
}

// TestCAFileAddsToSystemRoots: --ca-file extends the system's roots; it
// does not replace them.
func TestCAFileAddsToSystemRoots(t *testing.T) {
	sys, err := x509.SystemCertPool()
	if err != nil || sys.Equal(x509.NewCertPool()) {
		t.Skip("no system roots on this machine")
	}
	dir := t.TempDir()
	cert, _ := writeTestCert(t, dir, "dlq test CA")
	tc, err := tlsConfig(tlsSide{ca: cert, caFlag: broker.Hintf("%s", broker.OptCAFile)}, false, "h")
	if err != nil {
		t.Fatal(err)
	}
	withCA := sys.Clone()
	data, _ := os.ReadFile(cert)
	withCA.AppendCertsFromPEM(data)
	if !tc.RootCAs.Equal(withCA) {
		t.Errorf("RootCAs is not the system roots plus the CA file")
	}
}

// writeTestCert writes a self-signed certificate with common name cn and
// its key into dir.
func writeTestCert(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
