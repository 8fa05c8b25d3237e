package cmd

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// The warning about a password in a URL on the command line: on a
// terminal only, never with --quiet, and never holding the password.
func TestURLPasswordWarning(t *testing.T) {
	const pw = "Warn-s3cret-9"
	withPW := "amqp://ops:" + pw + "@127.0.0.1:1/"
	const warning = "shows in the process list"
	tests := []struct {
		name string
		tty  bool
		env  map[string]string
		args []string
		want string // "" when no warning may show
	}{
		{name: "password in --broker on a terminal", tty: true, args: []string{"--broker", withPW}, want: "the password in the `--broker` URL " + warning},
		{name: "quiet", tty: true, args: []string{"--broker", withPW, "--quiet"}},
		{name: "no terminal", args: []string{"--broker", withPW}},
		{name: "password from DLQ_PASSWORD", tty: true, env: map[string]string{"DLQ_PASSWORD": pw}, args: []string{"--broker", "amqp://ops@127.0.0.1:1/"}},
		{name: "password in --management-url", tty: true, env: map[string]string{"DLQ_PASSWORD": pw},
			args: []string{"--broker", "amqp://ops@127.0.0.1:1/", "--management-url", "http://ops:" + pw + "@127.0.0.1:2"}, want: "the password in the `--management-url` URL " + warning},
		{name: "password in DLQ_BROKER", tty: true, env: map[string]string{"DLQ_BROKER": withPW}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"queues", "--timeout", "2s"}, tt.args...)
			_, stderr, code := runDLQWith(t, runOpts{TTY: tt.tty}, args...)
			if code == ExitOK {
				t.Fatalf("queues against a closed port succeeded: %s", stderr)
			}
			if strings.Contains(stderr, pw) {
				t.Fatalf("stderr holds the password:\n%s", strings.ReplaceAll(stderr, pw, "<SECRET>"))
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if tt.want == "" {
				if strings.Contains(stderr, warning) {
					t.Fatalf("unwanted warning:\n%s", stderr)
				}
				return
			}
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "warning: ") || !strings.Contains(lines[0], tt.want) ||
				!strings.Contains(lines[0], "DLQ_PASSWORD") || !strings.Contains(lines[0], "`--quiet`") {
				t.Fatalf("want one warning line with %q, then the error; stderr:\n%s", tt.want, stderr)
			}
		})
	}
}

// tlsFixture is a dead-letter queue with messages on the TLS node, set up
// over plain AMQP.
type tlsFixture struct {
	t    *testing.T
	env  brokertest.TLSEnv
	ch   *amqp.Channel
	port string // the AMQPS port
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	env := brokertest.TLS(t)
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatalf("dial the TLS node over plain AMQP: %v", broker.Redact(err.Error()))
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(env.AMQPSURL)
	return &tlsFixture{t: t, env: env, ch: ch, port: u.Port()}
}

// queue declares a queue holding n messages, deleted at the end.
func (f *tlsFixture) queue(prefix string, n int) string {
	f.t.Helper()
	q := brokertest.Name(f.t, prefix)
	if _, err := f.ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _, _ = f.ch.QueueDelete(q, false, false, false) })
	for i := range n {
		dc, err := f.ch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte(`{"n":1}`), DeliveryMode: amqp.Persistent})
		if err != nil || !dc.Wait() {
			f.t.Fatalf("publish to %s: %v", q, err)
		}
	}
	return q
}

func (f *tlsFixture) depth(q string) int {
	f.t.Helper()
	st, err := f.ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Messages
}

// secrets are the TLS node's passwords, which no output may hold.
func (f *tlsFixture) secrets() []string { return []string{f.env.Password, f.env.MgmtPassword} }

func (f *tlsFixture) noSecret(what string, texts ...string) {
	f.t.Helper()
	for _, s := range f.secrets() {
		for _, text := range texts {
			if strings.Contains(text, s) {
				f.t.Errorf("%s holds a password:\n%s", what, strings.ReplaceAll(text, s, "<SECRET>"))
			}
		}
	}
}

// TestTLSAcceptance drives the binary against the TLS node as a user would:
// queues, peek and redrive with a password over AMQPS and with the client
// certificate (and management credentials of its own, by flags and by a
// context); no password shows in any output or in the audit log.
func TestTLSAcceptance(t *testing.T) {
	f := newTLSFixture(t)
	env := f.env
	amqps := "amqps://127.0.0.1:" + f.port + "/"
	modes := []struct {
		name string
		env  []string
		args []string
	}{
		{name: "password", env: []string{"DLQ_PASSWORD=" + env.Password},
			args: []string{"--broker", "amqps://dlqtest@127.0.0.1:" + f.port + "/", "--ca-file", env.CAFile,
				"--management-url", env.MgmtsURL, "--management-cert-file", env.CertFile, "--management-key-file", env.KeyFile}},
		{name: "client certificate", env: []string{"DLQ_MANAGEMENT_PASSWORD=" + env.MgmtPassword},
			args: []string{"--broker", amqps, "--auth", "external", "--cert-file", env.CertFile, "--key-file", env.KeyFile, "--ca-file", env.CAFile,
				"--management-url", env.MgmtsURL, "--management-user", env.MgmtUser}},
		{name: "client certificate by context", env: []string{"TLS_TEST_MGMT_PW=" + env.MgmtPassword},
			args: []string{"--config", writeConfig(t, fmt.Sprintf(`contexts:
  tls:
    broker: %s
    auth: external
    cert_file: %s
    key_file: %s
    ca_file: %s
    management_url: %s
    management_user: %s
    management_password_env: TLS_TEST_MGMT_PW
`, amqps, env.CertFile, env.KeyFile, env.CAFile, env.MgmtsURL, env.MgmtUser)), "--context", "tls"}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := *f
			f.t = t
			dlq, dest := f.queue("dlq", 3), f.queue("dest", 0)
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			run := func(args ...string) (string, string) {
				t.Helper()
				all := append(append(append([]string{}, args...), m.args...), "--audit-log", audit)
				stdout, stderr, code, _ := runBinary(t, append([]string{"NO_COLOR=1"}, m.env...), all...)
				f.noSecret("output of "+args[0], stdout, stderr)
				if code != ExitOK {
					t.Fatalf("dlq %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
				}
				return stdout, stderr
			}
			stdout, _ := run("queues", "-o", "json")
			if q := findQueue(decodeQueues(t, stdout), dlq); q == nil || q.Depth != 3 {
				t.Fatalf("queues: %s missing or not 3 deep:\n%s", dlq, stdout)
			}
			stdout, _ = run("peek", dlq, "-o", "json")
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(stdout), &msgs); err != nil || len(msgs) != 3 {
				t.Fatalf("peek: want 3 messages (%v):\n%s", err, stdout)
			}
			run("redrive", dlq, "--to", "queue:"+dest, "--yes")
			if d, s := f.depth(dest), f.depth(dlq); d != 3 || s != 0 {
				t.Fatalf("after redrive: destination %d, source %d; want 3 and 0", d, s)
			}
			data, err := os.ReadFile(audit)
			if err != nil || !strings.Contains(string(data), `"redrive"`) {
				t.Fatalf("audit log has no redrive record (%v):\n%s", err, data)
			}
			f.noSecret("the audit log", string(data))
		})
	}
}

// TestTLSAcceptanceTrust: --ca-file adds to the system roots (SSL_CERT_FILE
// still counts), and a wrong one fails with the fix named.
func TestTLSAcceptanceTrust(t *testing.T) {
	f := newTLSFixture(t)
	env := f.env
	base := []string{"queues", "--broker", "amqps://dlqtest@127.0.0.1:" + f.port + "/", "--management-url", env.MgmtURL, "-o", "json"}
	pw := "DLQ_PASSWORD=" + env.Password
	tests := []struct {
		name string
		env  []string
		args []string
		want string // "" for success, else a part of the error
	}{
		{name: "SSL_CERT_FILE alone", env: []string{pw, "SSL_CERT_FILE=" + env.CAFile}},
		{name: "ca-file adds to SSL_CERT_FILE", env: []string{pw, "SSL_CERT_FILE=" + env.CAFile}, args: []string{"--ca-file", env.OtherCAFile}},
		{name: "wrong ca-file alone", env: []string{pw, "SSL_CERT_FILE=" + env.OtherCAFile}, args: []string{"--ca-file", env.OtherCAFile},
			want: "certificate signed by an unknown authority: " + env.OtherCAFile + " does not hold the CA that signed the server's certificate; pass that CA with `--ca-file`"},
		{name: "insecure", env: []string{pw, "SSL_CERT_FILE=" + env.OtherCAFile}, args: []string{"--insecure-skip-verify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code, _ := runBinary(t, tt.env, append(append([]string{}, base...), tt.args...)...)
			f.noSecret("output", stdout, stderr)
			if tt.want == "" {
				if code != ExitOK {
					t.Fatalf("exit %d:\n%s", code, stderr)
				}
				return
			}
			assertOneLine(t, stderr)
			if code != ExitError || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want 1 with %q; stderr:\n%s", code, tt.want, stderr)
			}
		})
	}
}

// TestTLSAcceptanceMistakes makes each mistake through the command line:
// one line on stderr that names the fix, the documented exit code, and no
// secret.
func TestTLSAcceptanceMistakes(t *testing.T) {
	f := newTLSFixture(t)
	env := f.env
	au, _ := url.Parse(env.AMQPURL)
	amqps := "amqps://127.0.0.1:" + f.port + "/"
	pw := "DLQ_PASSWORD=" + env.Password
	cert := []string{"--auth", "external", "--cert-file", env.CertFile, "--key-file", env.KeyFile, "--ca-file", env.CAFile, "--management-url", env.MgmtsURL}
	tests := []struct {
		name string
		env  []string
		args []string
		code ExitCode
		want string
	}{
		{name: "unknown CA", env: []string{pw}, args: []string{"--broker", "amqps://dlqtest@127.0.0.1:" + f.port + "/"}, code: ExitError,
			want: "certificate signed by an unknown authority: pass the CA that signed it with `--ca-file`"},
		{name: "management wants a client certificate", env: []string{pw},
			args: []string{"--broker", "amqps://dlqtest@127.0.0.1:" + f.port + "/", "--ca-file", env.CAFile, "--management-url", env.MgmtsURL}, code: ExitError,
			want: "the server requires a client certificate: pass `--management-cert-file` and `--management-key-file`"},
		{name: "http to the https management port", env: []string{pw},
			args: []string{"--broker", env.AMQPURL, "--management-url", strings.Replace(env.MgmtsURL, "https://", "http://", 1)}, code: ExitError,
			want: "speaks HTTPS, not plain HTTP: use `--management-url " + env.MgmtsURL + "`"},
		{name: "https to the http management port", env: []string{pw},
			args: []string{"--broker", env.AMQPURL, "--management-url", strings.Replace(env.MgmtURL, "http://", "https://", 1)}, code: ExitError,
			want: "speaks plain HTTP, not HTTPS: use `--management-url " + env.MgmtURL + "`"},
		{name: "amqp to the TLS port", env: []string{pw}, args: []string{"--broker", "amqp://dlqtest@127.0.0.1:" + f.port + "/"}, code: ExitError,
			want: "speaks TLS, and the broker URL is amqp://: use amqps://"},
		{name: "external with a certificate of no user",
			args: []string{"--broker", amqps, "--auth", "external", "--cert-file", env.StrangerCertFile, "--key-file", env.StrangerKeyFile, "--ca-file", env.CAFile},
			code: ExitDenied, want: "CN `dlqstranger` must be a RabbitMQ user"},
		{name: "external without management credentials", args: append([]string{"--broker", amqps}, cert...), code: ExitDenied,
			want: "set `--management-user` and DLQ_MANAGEMENT_PASSWORD"},
		{name: "management user without a password", args: append([]string{"--broker", amqps, "--management-user", env.MgmtUser}, cert...), code: ExitError,
			want: "no password given for management user `" + env.MgmtUser + "`: set DLQ_MANAGEMENT_PASSWORD"},
		{name: "external over amqp", args: []string{"--broker", "amqp://" + au.Host + "/", "--auth", "external", "--cert-file", env.CertFile, "--key-file", env.KeyFile},
			code: ExitError, want: "use amqps://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code, _ := runBinary(t, tt.env, append([]string{"queues", "--timeout", "10s"}, tt.args...)...)
			f.noSecret("output", stdout, stderr)
			assertOneLine(t, stderr)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q; stderr:\n%s", code, tt.code, tt.want, stderr)
			}
		})
	}
}

// The login and management flags reach the spec, and override a context's
// keys.
func TestResolveBrokerAuthFlags(t *testing.T) {
	const config = `contexts:
  cert:
    broker: amqps://rabbit.example.com:5671/shop
    auth: external
    cert_file: /etc/dlq/client.pem
    key_file: /etc/dlq/client.key
    management_user: ops
    management_password_env: MGMT_PW
    management_ca_file: /etc/dlq/public-ca.pem
    management_cert_file: /etc/dlq/proxy.pem
    management_key_file: /etc/dlq/proxy.key
`
	tests := []struct {
		name string
		opts func(o *GlobalOptions)
		want BrokerContext
	}{
		{name: "context keys", opts: func(o *GlobalOptions) { o.Context = "cert" },
			want: BrokerContext{Broker: "amqps://rabbit.example.com:5671/shop", Auth: "external", CertFile: "/etc/dlq/client.pem", KeyFile: "/etc/dlq/client.key",
				ManagementUser: "ops", ManagementPasswordEnv: "MGMT_PW", ManagementCAFile: "/etc/dlq/public-ca.pem",
				ManagementCertFile: "/etc/dlq/proxy.pem", ManagementKeyFile: "/etc/dlq/proxy.key"}},
		{name: "flags override them", opts: func(o *GlobalOptions) {
			o.Context = "cert"
			for opt, v := range map[broker.Option]string{broker.OptAuth: "plain", broker.OptManagementUser: "admin", broker.OptManagementCAFile: "/ca2", broker.OptManagementCertFile: "/c2", broker.OptManagementKeyFile: "/k2"} {
				o.SetAdapter(opt, v)
			}
		},
			want: BrokerContext{Broker: "amqps://rabbit.example.com:5671/shop", Auth: "plain", CertFile: "/etc/dlq/client.pem", KeyFile: "/etc/dlq/client.key",
				ManagementUser: "admin", ManagementPasswordEnv: "MGMT_PW", ManagementCAFile: "/ca2", ManagementCertFile: "/c2", ManagementKeyFile: "/k2"}},
		{name: "flags with a URL", opts: func(o *GlobalOptions) {
			o.Broker = "amqps://h/"
			o.SetAdapter(broker.OptAuth, "external")
			o.SetAdapter(broker.OptManagementUser, "admin")
		},
			want: BrokerContext{Auth: "external", ManagementUser: "admin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFactory(t, config)
			tt.opts(f.Options)
			s, err := f.resolveBroker()
			if err != nil {
				t.Fatal(err)
			}
			if d := testdiff.JSON(t, tt.want, s.BrokerContext); d != "" {
				t.Errorf("context values (-want +got):\n%s", d)
			}
		})
	}
}

// The management password: the context's variable, else
// DLQ_MANAGEMENT_PASSWORD; a management user needs one. An EXTERNAL login
// asks for no AMQP password.
func TestManagementPassword(t *testing.T) {
	f := testFactory(t, "")
	t.Setenv("MGMT_PW", "from-context")
	tests := []struct {
		name    string
		env     string // DLQ_MANAGEMENT_PASSWORD
		spec    brokerSpec
		want    string
		wantErr string
	}{
		{name: "from DLQ_MANAGEMENT_PASSWORD", env: "from-env", spec: brokerSpec{BrokerContext: BrokerContext{ManagementUser: "ops"}}, want: "from-env"},
		{name: "from the context's variable", env: "from-env", spec: brokerSpec{BrokerContext: BrokerContext{ManagementUser: "ops", ManagementPasswordEnv: "MGMT_PW"}}, want: "from-context"},
		{name: "context variable unset", spec: brokerSpec{Context: "c", BrokerContext: BrokerContext{ManagementUser: "ops", ManagementPasswordEnv: "DLQ_UNSET_VAR_Y"}},
			wantErr: "context `c`: environment variable DLQ_UNSET_VAR_Y (its `management_password_env`) is not set: export it with the management API's password"},
		{name: "user without a password", spec: brokerSpec{BrokerContext: BrokerContext{ManagementUser: "ops"}},
			wantErr: "no password given for management user `ops`: set DLQ_MANAGEMENT_PASSWORD, or a context's `management_password_env`"},
		{name: "neither", spec: brokerSpec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DLQ_MANAGEMENT_PASSWORD", tt.env)
			got, err := f.managementPassword(tt.spec)
			if errString(err) != tt.wantErr || got != tt.want {
				t.Errorf("got %q, error %q; want %q, error %q", got, errString(err), tt.want, tt.wantErr)
			}
		})
	}
	t.Setenv("DLQ_PASSWORD", "")
	for _, s := range []brokerSpec{
		{Ref: "amqps://ops@h/", BrokerContext: BrokerContext{Auth: "external"}},
		{Ref: "amqps://ops@h/?auth_mechanism=external"},
	} {
		if pw, err := f.password(s); pw != "" || err != nil {
			t.Errorf("%s (auth %q): password %q, error %v; an EXTERNAL login needs none", s.Ref, s.Auth, pw, err)
		}
	}
}
