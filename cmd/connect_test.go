package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/broker/rabbitmq"
	"github.com/dlq-tools/dlq/broker/sqs"
)

func testFactory(t *testing.T, config string) *Factory {
	t.Helper()
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	if config != "" {
		f.Options.ConfigPath = writeConfig(t, config)
	}
	return f
}

const twoContexts = `current-context: prod
contexts:
  prod:
    broker: amqps://ops@rabbit.example.com:5671/shop
    management_url: https://rabbit.example.com:15671
    password_env: PROD_PW
    ca_file: /etc/ca.pem
    read_only: true
    audit_log: /var/log/dlq.jsonl
  aws:
    broker: sqs://eu-west-1
    profile: admin
    endpoint: http://127.0.0.1:9324
`

func TestResolveBroker(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		opts    func(o *GlobalOptions)
		env     map[string]string
		ref     string
		context string
		check   func(t *testing.T, s brokerSpec)
		wantErr string
	}{
		{name: "broker URL wins", config: twoContexts, opts: func(o *GlobalOptions) { o.Broker = "amqp://h/"; o.Context = "aws" }, ref: "amqp://h/"},
		{name: "current-context", config: twoContexts, ref: "amqps://ops@rabbit.example.com:5671/shop", context: "prod",
			check: func(t *testing.T, s brokerSpec) {
				if !s.ReadOnly || s.PasswordEnv != "PROD_PW" || s.CAFile != "/etc/ca.pem" {
					t.Errorf("context values lost: read-only %t, password env %q, ca file %q; want true, PROD_PW, /etc/ca.pem", s.ReadOnly, s.PasswordEnv, s.CAFile)
				}
			}},
		{name: "--context", config: twoContexts, opts: func(o *GlobalOptions) { o.Context = "aws" }, ref: "sqs://eu-west-1", context: "aws"},
		{name: "context name in --broker", config: twoContexts, opts: func(o *GlobalOptions) { o.Broker = "aws" }, ref: "sqs://eu-west-1", context: "aws"},
		{name: "flags override the context", config: twoContexts, opts: func(o *GlobalOptions) {
			o.Context = "aws"
			o.SetAdapter(broker.OptEndpointURL, "http://other:1")
			o.SetAdapter(broker.OptRegion, "us-west-2")
		},
			ref: "sqs://eu-west-1", context: "aws",
			check: func(t *testing.T, s brokerSpec) {
				if s.Endpoint != "http://other:1" || s.Region != "us-west-2" || s.Profile != "admin" {
					t.Errorf("merge: endpoint %q, region %q, profile %q; want http://other:1, us-west-2, admin", s.Endpoint, s.Region, s.Profile)
				}
			}},
		{name: "DLQ_BROKER last", env: map[string]string{"DLQ_BROKER": "file://x.jsonl"}, ref: "file://x.jsonl"},
		{name: "DLQ_BROKER with DLQ_MANAGEMENT_URL", env: map[string]string{"DLQ_BROKER": "amqp://ops@h:5674/", "DLQ_MANAGEMENT_URL": "http://h:15674"}, ref: "amqp://ops@h:5674/",
			check: func(t *testing.T, s brokerSpec) {
				if s.ManagementURL != "http://h:15674" {
					t.Errorf("management URL %q, want DLQ_MANAGEMENT_URL's", s.ManagementURL)
				}
			}},
		{name: "--management-url beats DLQ_MANAGEMENT_URL", env: map[string]string{"DLQ_BROKER": "amqp://ops@h:5674/", "DLQ_MANAGEMENT_URL": "http://h:15674"},
			opts: func(o *GlobalOptions) { o.SetAdapter(broker.OptManagementURL, "http://other:1") }, ref: "amqp://ops@h:5674/",
			check: func(t *testing.T, s brokerSpec) {
				if s.ManagementURL != "http://other:1" {
					t.Errorf("management URL %q, want the flag's", s.ManagementURL)
				}
			}},
		{name: "DLQ_BROKER loses to current-context", config: twoContexts, env: map[string]string{"DLQ_BROKER": "demo:"}, ref: "amqps://ops@rabbit.example.com:5671/shop", context: "prod"},
		{name: "nothing", wantErr: "no broker given: pass `--broker URL`"},
		{name: "unknown context", config: twoContexts, opts: func(o *GlobalOptions) { o.Context = "nope" }, wantErr: "unknown context `nope`: known contexts are aws, prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := testFactory(t, tt.config)
			if tt.opts != nil {
				tt.opts(f.Options)
			}
			s, err := f.resolveBroker()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Ref != tt.ref || s.Context != tt.context {
				t.Errorf("got %q (context %q), want %q (context %q)", s.Ref, s.Context, tt.ref, tt.context)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestNoBrokerNamesConfigPath(t *testing.T) {
	f := testFactory(t, "")
	_, err := f.resolveBroker()
	if err == nil || !strings.Contains(err.Error(), "--context NAME") || !strings.Contains(err.Error(), filepath.Join("dlq", "config.yaml")) {
		t.Errorf("err = %v", err)
	}
}

func TestReadOnlyAndAuditFromContext(t *testing.T) {
	f := testFactory(t, twoContexts)
	if !f.ReadOnly() {
		t.Error("read_only context not read-only")
	}
	t.Setenv("DLQ_AUDIT_LOG", "/tmp/env.jsonl") // the context's audit_log wins over it
	if f.AuditPath() != "/var/log/dlq.jsonl" {
		t.Errorf("audit log = %q, want the context's", f.AuditPath())
	}
	f = testFactory(t, twoContexts)
	f.Options.AuditLog = "/tmp/flag.jsonl"
	if f.AuditPath() != "/tmp/flag.jsonl" {
		t.Errorf("--audit-log lost to the context: %q", f.AuditPath())
	}
	f.Options.Context = "aws"
	if f.ReadOnly() {
		t.Error("writable context read-only")
	}
}

func TestPassword(t *testing.T) {
	f := testFactory(t, "")
	t.Setenv("DLQ_PASSWORD", "from-dlq-password")
	t.Setenv("PROD_PW", "from-context")
	tests := []struct {
		spec    brokerSpec
		want    string
		wantErr string
	}{
		{brokerSpec{Ref: "amqp://u:inurl@h/"}, "", ""},
		{brokerSpec{Ref: "amqp://u@h/", BrokerContext: BrokerContext{PasswordEnv: "PROD_PW"}}, "from-context", ""},
		{brokerSpec{Ref: "amqp://u@h/"}, "from-dlq-password", ""},
		{brokerSpec{Ref: "amqp://u@h/", Context: "c", BrokerContext: BrokerContext{PasswordEnv: "DLQ_UNSET_VAR_X"}}, "", "context `c`: environment variable DLQ_UNSET_VAR_X"},
	}
	for _, tt := range tests {
		got, err := f.password(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s (context %q, password env %q): err = %v", tt.spec.Ref, tt.spec.Context, tt.spec.PasswordEnv, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s (context %q, password env %q): got %q, %v; want %q", tt.spec.Ref, tt.spec.Context, tt.spec.PasswordEnv, got, err, tt.want)
		}
	}
}

// Without any password only guest (or no user) gets the client's default;
// another user is told that none was given, not "wrong password".
func TestPasswordMissing(t *testing.T) {
	f := testFactory(t, "")
	t.Setenv("DLQ_PASSWORD", "")
	for _, tt := range []struct {
		ref, wantErr string
	}{
		{"amqp://ops@h/", "no password given for ops: set DLQ_PASSWORD, a context's `password_env`, or put it in the URL"},
		{"amqp://guest@h/", ""},
		{"amqp://h/", ""},
		{"amqp://ops:pw@h/", ""},
	} {
		_, err := f.password(brokerSpec{Ref: tt.ref})
		if got := errString(err); got != tt.wantErr {
			t.Errorf("%s: error %q, want %q", tt.ref, got, tt.wantErr)
		}
	}
}

func TestSQSQueueRef(t *testing.T) {
	tests := []struct {
		ref, region, endpoint string
		ok                    bool
	}{
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq", "eu-west-1", "", true},
		{"https://eu-west-1.queue.amazonaws.com/123456789012/orders-dlq", "eu-west-1", "", true},
		{"https://sqs.us-gov-west-1.amazonaws.com/1/q.fifo", "us-gov-west-1", "", true},
		{"arn:aws:sqs:ap-south-1:123456789012:orders", "ap-south-1", "", true},
		{"http://127.0.0.1:9324/000000000000/orders", "", "http://127.0.0.1:9324", true},
		{"http://127.0.0.1:9324/orders", "", "", false},
		{"arn:aws:sns:eu-west-1:1:topic", "", "", false},
		{"orders-dlq", "", "", false},
		{"amqp://h/vhost/q", "", "", false},
	}
	for _, tt := range tests {
		region, endpoint, ok := sqs.ParseQueueRef(tt.ref)
		if region != tt.region || endpoint != tt.endpoint || ok != tt.ok {
			t.Errorf("sqs.ParseQueueRef(%q) = %q, %q, %v; want %q, %q, %v", tt.ref, region, endpoint, ok, tt.region, tt.endpoint, tt.ok)
		}
	}
}

func TestFilePathAndRegion(t *testing.T) {
	home, _ := os.UserHomeDir()
	for ref, want := range map[string]string{
		"file://dead.jsonl":            "dead.jsonl",
		"file:///var/dlq/x.jsonl.gz":   "/var/dlq/x.jsonl.gz",
		"file://localhost/tmp/x.jsonl": "/tmp/x.jsonl",
		"file://~/x.jsonl":             filepath.Join(home, "x.jsonl"),
	} {
		if got, err := archive.FilePath(ref); err != nil || got != want {
			t.Errorf("filePath(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := archive.FilePath("file://"); err == nil {
		t.Error("file:// accepted")
	}
	for ref, want := range map[string]string{"sqs://": "", "sqs:": "", "sqs://eu-west-1": "eu-west-1", "sqs://eu-west-1/": "eu-west-1"} {
		if got, err := sqs.BrokerRegion(ref); err != nil || got != want {
			t.Errorf("sqsRegion(%q) = %q, %v", ref, got, err)
		}
	}
	for _, ref := range []string{"sqs://EU", "sqs://eu-west-1/q", "sqs://h:1"} {
		if _, err := sqs.BrokerRegion(ref); err == nil {
			t.Errorf("sqsRegion(%q) accepted", ref)
		}
	}
}

func TestOpenQueue(t *testing.T) {
	f := testFactory(t, "")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	w, err := archive.NewWriter(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&broker.Message{ID: "1", Queue: "q"})
	w.Close()

	tests := []struct {
		ref, queue, broker, wantErr string
	}{
		{ref: "file://" + path, queue: "", broker: "file://" + path},
		{ref: "demo:", queue: "", broker: "demo:"},
		{ref: "demo:orders.dlq", queue: "orders.dlq", broker: "demo:"},
		{ref: "amqp://u:pw@h/v/q", wantErr: "pass the broker with `--broker amqp://u:xxxxx@h/v/q`"},
		{ref: "", wantErr: "no queue given"},
		{ref: "orders", wantErr: "no broker given"},
	}
	for _, tt := range tests {
		b, q, err := f.OpenQueue(ctx, tt.ref)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("OpenQueue(%q) err = %v, want %q", tt.ref, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenQueue(%q): %v", tt.ref, err)
			continue
		}
		if q != tt.queue || b.String() != tt.broker {
			t.Errorf("OpenQueue(%q) = %s, %q; want %s, %q", tt.ref, b, q, tt.broker, tt.queue)
		}
		b.Close()
	}
	f.Options.Broker = "https://sqs.eu-west-1.amazonaws.com/1/q"
	if _, err := f.OpenBroker(ctx); err == nil || !strings.Contains(err.Error(), "is an SQS queue, not a broker") {
		t.Errorf("queue URL as --broker: %v", err)
	}
	f.Options.Broker = "demo:"
	b, q, err := f.OpenQueue(ctx, "payments.dlq")
	if err != nil || q != "payments.dlq" || b.String() != "demo:" {
		t.Errorf("plain name on --broker demo: = %v, %q, %v", b, q, err)
	}
}

func TestOpenDestination(t *testing.T) {
	f := testFactory(t, twoContexts)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	b, dest, err := f.OpenDestination(ctx, "file://"+out)
	if err != nil || dest != "file://"+out || b == nil || b.String() != "file://"+out {
		t.Fatalf("file destination: %v %q %v", b, dest, err)
	}
	b.Close()
	if _, err := os.Stat(out); err == nil {
		t.Errorf("opening an archive destination created it before anything was published (a dry run must leave nothing)")
	}

	for _, ref := range []string{"origin", "queue:orders", "exchange:orders.x:order.created", "exchange:e:a.#"} {
		b, dest, err := f.OpenDestination(ctx, ref)
		if err != nil || b != nil || dest != ref {
			t.Errorf("OpenDestination(%q) = %v, %q, %v; want the source broker (nil)", ref, b, dest, err)
		}
	}
	b, dest, err = f.OpenDestination(ctx, "demo:#queue:x")
	if err != nil || b.String() != "demo:" || dest != "queue:x" {
		t.Errorf("demo:#queue:x = %v %q %v", b, dest, err)
	}
	errs := map[string]string{
		"":                       "empty `--to`",
		"amqp://u:pw@h/":         "append `#queue:NAME`",
		"sqs://eu-west-1#":       "names no destination after `#`",
		"#queue:x":               "names no broker before `#`",
		"nope#queue:x":           "unknown context `nope`",
		"amqp://h:99999/#origin": "malformed broker URL",
	}
	for ref, want := range errs {
		_, _, err := f.OpenDestination(ctx, ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenDestination(%q) err = %v, want %q", ref, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("password in %q", err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	bad := map[string]string{
		"contexts:\n  a: {broker: amqp://h/, readonly: true}\n": "field readonly not found",
		"contexts:\n  a: {}\n":                                  "has no `broker:`",
		"contexts:\n  a:\n":                                     "context `a` is empty",
		"contexts:\n  'a:b': {broker: demo:}\n":                 "context name",
		"current-context: x\ncontexts:\n  a: {broker: demo:}\n": "current-context `x` is not among the contexts (a)",
		"contexts:\n  a: {broker: 'amqp://u:secret@h/'}\n":      "holds a password",
		"contexts: [1, 2]\n":                                    "cannot unmarshal",
		"contexts:\n  a: {broker: 'amqps://h/', auth: x509}\n":  "context `a`: unknown `auth` \"x509\": use plain (user and password) or external",
		"\tcontexts:\n":                                         "cannot start any token",
	}
	for in, want := range bad {
		_, err := parseConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseConfig(%q) = %v, want %q", in, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("parseConfig(%q) error leaks or spans lines: %q", in, err)
		}
	}
	c, err := parseConfig([]byte(twoContexts))
	if err != nil {
		t.Errorf("good config: %v", err)
	} else if c.CurrentContext != "prod" || len(c.Contexts) != 2 || !c.Contexts["prod"].ReadOnly {
		t.Errorf("good config: current context %q, %d contexts, prod read-only %t; want prod, 2, true", c.CurrentContext, len(c.Contexts), c.Contexts["prod"] != nil && c.Contexts["prod"].ReadOnly)
	}
	if c, err := parseConfig(nil); err != nil || len(c.Contexts) != 0 {
		t.Errorf("empty config: %v", err)
	}
}

// FuzzParseConfig: no input crashes the config parser or yields a context
// without a broker, and errors are one line.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(twoContexts))
	f.Add([]byte("contexts:\n  a: {broker: demo:}\n"))
	f.Add([]byte("current-context: a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for name, ctx := range c.Contexts {
			if ctx == nil || strings.TrimSpace(ctx.Broker) == "" {
				t.Fatalf("context %q accepted without a broker", name)
			}
		}
	})
}

// FuzzReferences: queue and destination references never crash the parsers.
func FuzzReferences(f *testing.F) {
	for _, s := range []string{"https://sqs.eu-west-1.amazonaws.com/1/q", "arn:aws:sqs:a:b:c", "file://x", "sqs://eu-west-1", "amqp://h#queue:x", "x#y#z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		sqs.ParseQueueRef(ref)
		archive.FilePath(ref)
		sqs.BrokerRegion(ref)
		NewFactory(nil, nil).knownScheme(ref)
	})
}

// password is the RabbitMQ adapter's password for s, through the settings
// cmd hands it.
func (f *Factory) password(s brokerSpec) (string, error) { return rabbitmq.Password(f.settings(s)) }

func (f *Factory) managementPassword(s brokerSpec) (string, error) {
	return rabbitmq.ManagementPassword(f.settings(s))
}
