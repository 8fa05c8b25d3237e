package rabbitmq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The SASL mechanisms of Config.Auth.
const (
	// AuthPlain logs in with the user and password (PLAIN).
	AuthPlain = "plain"
	// AuthExternal logs in with the TLS client certificate (EXTERNAL, the
	// rabbitmq_auth_mechanism_ssl plugin): the user is the certificate's
	// CN (or DN, as the broker's ssl_cert_login_from says); no password is
	// sent.
	AuthExternal = "external"
)

// tlsSide is one TLS client of a broker (AMQP or the management API): its
// PEM files, and the flags and fix that errors name.
type tlsSide struct {
	ca, cert, key string
	caFlag        *broker.Hint // the CA file setting
	certFlag      *broker.Hint // the client certificate setting
	keyFlag       *broker.Hint // the client key setting
	// plainFix is the fix when the server does not answer with TLS.
	plainFix *broker.Hint
}

// given reports whether any file is set.
func (s tlsSide) given() bool { return s.ca != "" || s.cert != "" || s.key != "" }

func amqpSide(cfg Config) tlsSide {
	return tlsSide{ca: cfg.CAFile, cert: cfg.CertFile, key: cfg.KeyFile,
		caFlag: broker.Hintf("%s", broker.OptCAFile), certFlag: broker.Hintf("%s", broker.OptCertFile), keyFlag: broker.Hintf("%s", broker.OptKeyFile),
		plainFix: broker.Hintf("the port does not speak TLS: use amqp:// for a plain port, or the AMQPS port (usually 5671)")}
}

// mgmtSide is the management API's TLS client: its own files when given,
// else the AMQP ones.
func mgmtSide(cfg Config) tlsSide {
	s := tlsSide{ca: cfg.CAFile, cert: cfg.CertFile, key: cfg.KeyFile,
		caFlag:   broker.Hintf("%s (or %s, which serves both)", broker.OptManagementCAFile, broker.OptCAFile),
		certFlag: broker.Hintf("%s", broker.OptManagementCertFile), keyFlag: broker.Hintf("%s", broker.OptManagementKeyFile),
		plainFix: broker.Hintf("the port speaks plain HTTP: use http:// in %s", broker.OptManagementURL)}
	if cfg.ManagementCAFile != "" {
		s.ca, s.caFlag = cfg.ManagementCAFile, broker.Hintf("%s", broker.OptManagementCAFile)
	}
	if cfg.ManagementCertFile != "" || cfg.ManagementKeyFile != "" {
		s.cert, s.key = cfg.ManagementCertFile, cfg.ManagementKeyFile
	} else if cfg.CertFile != "" {
		s.certFlag = broker.Hintf("%s (or %s)", broker.OptManagementCertFile, broker.OptCertFile)
		s.keyFlag = broker.Hintf("%s (or %s)", broker.OptManagementKeyFile, broker.OptKeyFile)
	}
	return s
}

// tlsConfig is the TLS client configuration of side. The CA file is added
// to the system's roots (which honour SSL_CERT_FILE and SSL_CERT_DIR), so
// that a private CA for the broker does not stop a publicly trusted
// certificate from verifying. serverName may be empty (an HTTP transport
// takes it from each request).
func tlsConfig(side tlsSide, insecure bool, serverName string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: insecure} //nolint:gosec // explicit user choice
	if side.ca != "" {
		data, err := os.ReadFile(side.ca)
		if err != nil {
			return nil, broker.Hintf("read CA file %s: %v: check %s", side.ca, pathError(err), side.caFlag)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, broker.Hintf("CA file %s holds no PEM certificate: check %s", side.ca, side.caFlag)
		}
		tc.RootCAs = pool
	}
	if side.cert != "" || side.key != "" {
		if side.cert == "" || side.key == "" {
			return nil, broker.Hintf("a client certificate needs both %s and %s", side.certFlag, side.keyFlag)
		}
		pair, err := tls.LoadX509KeyPair(side.cert, side.key)
		if err != nil {
			return nil, broker.Hintf("load client certificate %s and key %s: %v: check %s and %s", side.cert, side.key, pathError(err), side.certFlag, side.keyFlag)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// certCN is the common name of the first certificate in a PEM file: the
// user an EXTERNAL login becomes (with ssl_cert_login_from = common_name).
func certCN(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			return ""
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return ""
		}
		return c.Subject.CommonName
	}
}

func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isTLSError(err error) bool {
	var (
		rh  tls.RecordHeaderError
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		alt tls.AlertError
	)
	return errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &ua) ||
		errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &alt) ||
		strings.HasPrefix(err.Error(), "tls: ") || strings.Contains(err.Error(), "remote error: tls: ")
}

// certRefused reports a TLS alert by which the server turned down the
// client's certificate, or its lack of one.
func certRefused(err error) bool {
	s := err.Error()
	for _, alert := range []string{"certificate required", "bad certificate", "unknown certificate authority", "handshake failure", "certificate unknown"} {
		if strings.Contains(s, "remote error: tls: "+alert) {
			return true
		}
	}
	return false
}

// tlsHint is the cause of a TLS failure of side and its fix.
func tlsHint(err error, side tlsSide) *broker.Hint {
	var (
		rh tls.RecordHeaderError
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &rh):
		return side.plainFix
	case errors.As(err, &ua):
		if side.ca != "" {
			return broker.Hintf("certificate signed by an unknown authority: %s does not hold the CA that signed the server's certificate; pass that CA with %s (or %s, which turns verification off)", side.ca, side.caFlag, broker.OptInsecureSkipVerify)
		}
		return broker.Hintf("certificate signed by an unknown authority: pass the CA that signed it with %s (or %s, which turns verification off)", side.caFlag, broker.OptInsecureSkipVerify)
	case errors.As(err, &hn):
		return broker.Hintf("the certificate is not valid for this host name: connect by a name the certificate lists, or pass %s", broker.OptInsecureSkipVerify)
	case errors.As(err, &ci):
		return broker.Hintf("the certificate is invalid (%s): renew it, or pass %s", ci.Error(), broker.OptInsecureSkipVerify)
	case certRefused(err) && side.cert == "":
		return broker.Hintf("the server requires a client certificate: pass %s and %s", side.certFlag, side.keyFlag)
	case certRefused(err):
		return broker.Hintf("the server refused the client certificate %s (%s): pass one signed by a CA the server trusts with %s and %s", side.cert, alertText(err), side.certFlag, side.keyFlag)
	}
	return broker.Hintf("%s: check %s, %s and %s", alertText(err), side.caFlag, side.certFlag, side.keyFlag)
}

// alertText is a TLS error without the network operation before it.
func alertText(err error) string {
	s := err.Error()
	if i := strings.Index(s, "tls: "); i >= 0 {
		s = s[i:]
	}
	return s
}

// speaksTLS reports whether addr completes a TLS handshake (or answers
// with a TLS alert) by deadline: an amqp:// URL that failed may name an
// AMQPS port. Nothing is verified and no certificate is sent.
func speaksTLS(ctx context.Context, addr string, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe; nothing is sent
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = c.Close()
		return true
	}
	var alt tls.AlertError
	return errors.As(err, &alt) || strings.Contains(err.Error(), "remote error: tls: ")
}
