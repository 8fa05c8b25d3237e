package brokertest

import (
	"os"
	"testing"
)

// TLSEnv is the test RabbitMQ node with TLS (scripts/brokers instance tls,
// 3.10, or tls43, 4.3): AMQP and AMQPS (verify_peer, a client certificate
// optional), PLAIN, AMQPLAIN and EXTERNAL (the certificate's CN is the
// user), and management over HTTP and over HTTPS (a client certificate
// required). Its CA and certificates are made when the node first starts.
type TLSEnv struct {
	AMQPURL  string // amqp://user:password@127.0.0.1:PORT/, plain AMQP
	AMQPSURL string // amqps://user:password@127.0.0.1:PORT/
	MgmtURL  string // http://127.0.0.1:PORT
	MgmtsURL string // https://127.0.0.1:PORT, wants a client certificate
	Password string // the AMQP user's password; no output may contain it
	// CAFile signed the server's and the clients' certificates; OtherCAFile
	// signed nothing the node uses.
	CAFile, OtherCAFile string
	// CertFile and KeyFile are a client certificate whose CN (CertUser) is
	// a user without a password, for EXTERNAL logins.
	CertFile, KeyFile, CertUser string
	// StrangerCertFile and StrangerKeyFile are a client certificate of the
	// same CA whose CN is no user.
	StrangerCertFile, StrangerKeyFile string
	// MgmtUser and MgmtPassword are a management API user (tags monitoring
	// and policymaker) other than the AMQP one.
	MgmtUser, MgmtPassword string
	Version                string // "3.10.8", "4.0.5"
}

// TLS returns the test TLS node or skips the test. `make test` gives a TLS
// node to its RabbitMQ 3.10 and 4.3 passes; the 4.0 passes set
// DLQ_TLS_SKIP to the reason the TLS tests skip there.
func TLS(t testing.TB) TLSEnv {
	t.Helper()
	if reason := os.Getenv("DLQ_TLS_SKIP"); reason != "" && os.Getenv("DLQ_TLS_AMQP_URL") == "" {
		t.Skip(reason)
	}
	v := need(t, "DLQ_TLS_AMQP_URL", "DLQ_TLS_AMQPS_URL", "DLQ_TLS_MGMT_URL", "DLQ_TLS_MGMTS_URL", "DLQ_TLS_PASSWORD",
		"DLQ_TLS_CA_FILE", "DLQ_TLS_OTHER_CA_FILE", "DLQ_TLS_CERT_FILE", "DLQ_TLS_KEY_FILE", "DLQ_TLS_CERT_USER",
		"DLQ_TLS_STRANGER_CERT_FILE", "DLQ_TLS_STRANGER_KEY_FILE", "DLQ_TLS_MGMT_USER", "DLQ_TLS_MGMT_PASSWORD")
	reachable(t, v[0])
	reachable(t, v[1])
	reachable(t, v[3])
	return TLSEnv{AMQPURL: v[0], AMQPSURL: v[1], MgmtURL: v[2], MgmtsURL: v[3], Password: v[4],
		CAFile: v[5], OtherCAFile: v[6], CertFile: v[7], KeyFile: v[8], CertUser: v[9],
		StrangerCertFile: v[10], StrangerKeyFile: v[11], MgmtUser: v[12], MgmtPassword: v[13],
		Version: os.Getenv("DLQ_TLS_RABBITMQ_VERSION")}
}
