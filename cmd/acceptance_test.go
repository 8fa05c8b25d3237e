package cmd

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// Black-box tests: dlq is run as a user runs it (cmd.Run with arguments, or
// the built binary) and judged only by its output and exit code.

func decodeQueues(t *testing.T, stdout string) []queueJSON {
	t.Helper()
	var qs []queueJSON
	if err := json.Unmarshal([]byte(stdout), &qs); err != nil {
		t.Fatalf("--output json is not a JSON array of queues: %v\n%s", err, stdout)
	}
	return qs
}

func findQueue(qs []queueJSON, name string) *queueJSON {
	for i := range qs {
		if qs[i].Name == name {
			return &qs[i]
		}
	}
	return nil
}

func TestAcceptanceQueuesDemo(t *testing.T) {
	stdout, stderr, code := runDLQ(t, "queues", "--broker", "demo:")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "orders.dlq ") {
		t.Errorf("table:\n%s", stdout)
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Error("colour without a terminal")
	}

	stdout, _, code = runDLQ(t, "queues", "--broker", "demo:", "--output", "json")
	qs := decodeQueues(t, stdout)
	if code != ExitOK || len(qs) != 4 {
		t.Fatalf("exit %d, %d queues", code, len(qs))
	}
	o := findQueue(qs, "orders.dlq")
	if o == nil {
		t.Errorf("orders.dlq not listed")
	} else if o.Depth != 150 || !o.IsDLQ || o.Kind != "archive" || o.OldestAgeSeconds == nil || len(o.DeadLetterSources) != 1 || o.DeadLetterSources[0] != "orders.q" {
		t.Errorf("orders.dlq: depth %d, dlq %t, kind %q, oldest age known %t, dead-letter sources %q; want 150, true, archive, true, [orders.q]",
			o.Depth, o.IsDLQ, o.Kind, o.OldestAgeSeconds != nil, o.DeadLetterSources)
	}
	if qs[0].Name != "orders.dlq" || qs[3].Name != "events-dlq.fifo" {
		t.Errorf("order: DLQs with messages first, deepest first: %s, …, %s", qs[0].Name, qs[3].Name)
	}

	stdout, _, _ = runDLQ(t, "queues", "--broker", "demo:", "-o", "csv")
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("csv: %v, %d rows\n%s", err, len(rows), stdout)
	}
	if rows[0][0] != "name" || rows[0][2] != "depth" || rows[1][0] != "orders.dlq" || rows[1][2] != "150" {
		t.Errorf("csv rows: %v / %v", rows[0], rows[1])
	}

	stdout, _, _ = runDLQ(t, "queues", "--broker", "demo:", "-o", "json", "*.fifo")
	if qs := decodeQueues(t, stdout); len(qs) != 1 || qs[0].Name != "events-dlq.fifo" {
		t.Errorf("pattern *.fifo: %q, want [events-dlq.fifo]", testdiff.Pick(qs, func(q queueJSON) string { return q.Name }))
	}
	stdout, _, _ = runDLQ(t, "queues", "--broker", "demo:", "-o", "json", "pay")
	if qs := decodeQueues(t, stdout); len(qs) != 1 || qs[0].Name != "payments.dlq" {
		t.Errorf("substring pay: %q, want [payments.dlq]", testdiff.Pick(qs, func(q queueJSON) string { return q.Name }))
	}
	stdout, stderr, code = runDLQ(t, "queues", "--broker", "demo:", "nothing-matches")
	if code != ExitOK || stdout != "" || !strings.Contains(stderr, `no queues matching "nothing-matches"`) {
		t.Errorf("no match: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestAcceptanceQueuesBinary(t *testing.T) {
	stdout, stderr, code, _ := runBinary(t, []string{"NO_COLOR=1"}, "queues", "--broker", "demo:", "-o", "json")
	if code != ExitOK || stderr != "" || len(decodeQueues(t, stdout)) != 4 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	stdout, _, code, _ = runBinary(t, nil, "version")
	if code != ExitOK || !strings.HasPrefix(stdout, "dlq ") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
}

// mgmt calls the test RabbitMQ's management API.
func mgmt(t *testing.T, method, path string, body any) {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	u, _ := url.Parse(env.AMQPURL)
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, strings.TrimRight(env.MgmtURL, "/")+"/api"+path, rd)
	req.SetBasicAuth(u.User.Username(), env.Password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && !(method == "DELETE" && resp.StatusCode == 404) {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
}

func TestAcceptanceQueuesRabbitMQ(t *testing.T) {
	args := rabbitArgs(t)
	work, dlq, dlx := brokertest.Name(t, "work"), brokertest.Name(t, "dlq"), brokertest.Name(t, "dlx")
	t.Cleanup(func() {
		mgmt(t, "DELETE", "/queues/%2F/"+work, nil)
		mgmt(t, "DELETE", "/queues/%2F/"+dlq, nil)
		mgmt(t, "DELETE", "/exchanges/%2F/"+dlx, nil)
	})
	mgmt(t, "PUT", "/exchanges/%2F/"+dlx, map[string]any{"type": "fanout", "durable": false})
	mgmt(t, "PUT", "/queues/%2F/"+dlq, map[string]any{"durable": false})
	mgmt(t, "POST", "/bindings/%2F/e/"+dlx+"/q/"+dlq, map[string]any{})
	mgmt(t, "PUT", "/queues/%2F/"+work, map[string]any{"durable": false, "arguments": map[string]any{"x-dead-letter-exchange": dlx}})
	for i := range 3 {
		mgmt(t, "POST", "/exchanges/%2F/amq.default/publish", map[string]any{"properties": map[string]any{}, "routing_key": dlq, "payload": "m" + strconv.Itoa(i), "payload_encoding": "string"})
	}

	// Management statistics lag by up to a collection interval: poll.
	var d, w *queueJSON
	deadline := time.Now().Add(30 * time.Second)
	for {
		stdout, stderr, code := runDLQ(t, append(args, "queues", "-o", "json", "dlqt-")...)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		qs := decodeQueues(t, stdout)
		d, w = findQueue(qs, dlq), findQueue(qs, work)
		// A new queue's consumer count arrives with its first statistics
		// event, which may come after its depth: wait for both.
		if d != nil && w != nil && d.Depth == 3 && d.Consumers != nil && d.InFlight != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues never showed the DLQ with 3 messages:\n%s", stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !d.IsDLQ || len(d.DeadLetterSources) != 1 || d.DeadLetterSources[0] != work || d.Kind != "classic" || d.InFlight == nil || d.Consumers == nil {
		t.Errorf("DLQ: dlq %t, dead-letter sources %q, kind %q, in flight known %t, consumers known %t; want true, [%s], classic, true, true", d.IsDLQ, d.DeadLetterSources, d.Kind, d.InFlight != nil, d.Consumers != nil, work)
	}
	if w.IsDLQ || w.DeadLetterTarget != dlx || len(w.DeadLetterQueues) != 1 || w.DeadLetterQueues[0] != dlq {
		t.Errorf("work queue: dlq %t, dead-letter target %q, dead-letter queues %q; want false, %s, [%s]", w.IsDLQ, w.DeadLetterTarget, w.DeadLetterQueues, dlx, dlq)
	}

	stdout, _, code := runDLQ(t, append(args, "queues", "--dlq-only", "-o", "csv", "dlqt-")...)
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if code != ExitOK || err != nil {
		t.Fatalf("csv: exit %d, %v", code, err)
	}
	for _, r := range rows[1:] {
		if r[8] != "yes" {
			t.Errorf("--dlq-only listed a non-DLQ: %v", r)
		}
	}
	found := false
	for _, r := range rows[1:] {
		found = found || r[0] == dlq
	}
	if !found {
		t.Errorf("--dlq-only lost %s:\n%s", dlq, stdout)
	}

	// On a terminal with colour: the DLQ with messages is red.
	ios, _, out, _ := Test()
	ios.SetTTY(true)
	ios.SetColor(true)
	if code := Run(context.Background(), ios, append(args, "queues", dlq)); code != ExitOK {
		t.Fatalf("tty run: exit %d", code)
	}
	if !strings.Contains(out.String(), "\x1b[31m"+dlq) {
		t.Errorf("DLQ with messages not red on a terminal:\n%q", out.String())
	}
	if code := Run(context.Background(), ios, append(args, "--no-color", "queues", dlq)); code != ExitOK || strings.Contains(out.String()[len(out.String())/2:], "\x1b[31m") {
		t.Errorf("--no-color still colours")
	}
}

func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	env := brokertest.SQS(t)
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) { o.BaseEndpoint = aws.String(env.Endpoint) })
}

func TestAcceptanceQueuesSQS(t *testing.T) {
	args := sqsArgs(t)
	c := sqsClient(t)
	ctx := context.Background()
	dlqName, srcName := brokertest.Name(t, "dlq"), brokertest.Name(t, "src")
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(dlqName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl}) })
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, attrs.Attributes["QueueArn"])
	src, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(srcName), Attributes: map[string]string{"RedrivePolicy": policy}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: src.QueueUrl}) })
	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: aws.String("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}

	stdout, stderr, code := runDLQ(t, append(args, "queues", "-o", "json", "dlqt-")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	qs := decodeQueues(t, stdout)
	d, s := findQueue(qs, dlqName), findQueue(qs, srcName)
	if d == nil || s == nil {
		t.Fatalf("queues missing:\n%s", stdout)
	}
	if d.Depth != 3 || !d.IsDLQ || d.Kind != "sqs-standard" || len(d.DeadLetterSources) != 1 || d.InFlight == nil || d.Delayed == nil {
		t.Errorf("DLQ: depth %d, dlq %t, kind %q, dead-letter sources %q, in flight known %t, delayed known %t; want 3, true, sqs-standard, one, true, true", d.Depth, d.IsDLQ, d.Kind, d.DeadLetterSources, d.InFlight != nil, d.Delayed != nil)
	}
	if s.IsDLQ || s.DeliveryLimit != 3 || !strings.HasSuffix(s.DeadLetterTarget, dlqName) {
		t.Errorf("source: dlq %t, delivery limit %d, dead-letter target %q; want false, 3, …%s", s.IsDLQ, s.DeliveryLimit, s.DeadLetterTarget, dlqName)
	}

	// A queue URL as the argument of a command that takes one opens SQS
	// whatever --broker says; here through the table on stdout.
	stdout, stderr, code = runDLQ(t, "queues", "--broker", "sqs://us-east-1", "--endpoint-url", brokertest.SQS(t).Endpoint, dlqName)
	if code != ExitOK || !strings.Contains(stdout, dlqName) || strings.Contains(stdout, "CAPACITY") {
		t.Errorf("table: exit %d\n%s%s", code, stdout, stderr)
	}
}

// freePort returns a local TCP port with nothing listening on it.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return strconv.Itoa(port)
}

// TestAcceptanceBadInput: every way of naming a broker wrongly ends with one
// line on stderr naming the fix, the documented exit code, nothing on
// stdout, no password anywhere, and no wait beyond --timeout (the run's own
// deadline is --timeout plus a margin; overrunning it fails the exit code).
func TestAcceptanceBadInput(t *testing.T) {
	rabbit := brokertest.RabbitMQ(t)
	sqsEnv := brokertest.SQS(t)
	u, _ := url.Parse(rabbit.AMQPURL)
	user := u.User.Username()
	withPath := func(p string) string { v := *u; v.Path = p; return v.String() }
	wrongPW := *u
	wrongPW.User = url.UserPassword(user, "wrong-"+rabbit.Password)
	tls := *u
	tls.Scheme = "amqps"
	cfg := writeConfig(t, `contexts:
  alpha: {broker: "amqp://x@127.0.0.1:1/"}
  beta: {broker: "sqs://eu-west-1"}
  needs-pw: {broker: "amqp://`+user+`@`+u.Host+`/", password_env: DLQ_TEST_UNSET_PASSWORD_VAR}
`)
	badCfg := writeConfig(t, "contexts:\n  a: {broker: amqp://h/, readonly: true}\n")
	pwCfg := writeConfig(t, "contexts:\n  a: {broker: \"amqp://u:hunter2@h/\"}\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code ExitCode
		want string
	}{
		{"unreachable host", []string{"--broker", "amqp://" + user + ":" + rabbit.Password + "@127.0.0.1:" + freePort(t) + "/"}, nil, ExitError, "cannot reach"},
		{"no password", []string{"--broker", "amqp://" + user + "@" + u.Host + "/"}, map[string]string{"DLQ_PASSWORD": ""}, ExitError, "no password given for " + user + ": set DLQ_PASSWORD"},
		{"wrong password", []string{"--broker", wrongPW.String()}, nil, ExitDenied, "login refused"},
		{"password from env, wrong", []string{"--broker", "amqp://" + user + "@" + u.Host + "/"}, map[string]string{"DLQ_PASSWORD": "nope-" + rabbit.Password}, ExitDenied, "login refused"},
		{"nonexistent vhost", []string{"--broker", withPath("/no-such-vhost-for-dlq")}, nil, ExitError, "vhost `no-such-vhost-for-dlq` not found"},
		{"malformed URL", []string{"--broker", "amqp://" + user + ":" + rabbit.Password + "@[::1"}, nil, ExitError, "malformed broker URL"},
		{"bad port", []string{"--broker", "amqp://" + user + ":" + rabbit.Password + "@127.0.0.1:99999/"}, nil, ExitError, "malformed broker URL"},
		{"TLS to the plain port", []string{"--broker", tls.String()}, nil, ExitError, "tls"},
		{"unknown scheme", []string{"--broker", "rabbit://" + user + ":" + rabbit.Password + "@h/"}, nil, ExitError, "unknown broker"},
		{"unknown context", []string{"--config", cfg, "--context", "gamma"}, nil, ExitError, "unknown context `gamma`: known contexts are alpha, beta, needs-pw"},
		{"unknown context via --broker", []string{"--config", cfg, "--broker", "gamma"}, nil, ExitError, "known contexts are alpha, beta, needs-pw"},
		{"unknown context via DLQ_CONTEXT", []string{"--config", cfg}, map[string]string{"DLQ_CONTEXT": "gamma"}, ExitError, "unknown context `gamma`"},
		{"password variable unset", []string{"--config", cfg, "--context", "needs-pw"}, nil, ExitError, "DLQ_TEST_UNSET_PASSWORD_VAR"},
		{"misspelt config key", []string{"--config", badCfg, "--context", "a"}, nil, ExitError, "field readonly not found"},
		{"password in config", []string{"--config", pwCfg, "--context", "a"}, nil, ExitError, "password_env"},
		{"missing config file", []string{"--config", filepath.Join(t.TempDir(), "nope.yaml"), "--context", "a"}, nil, ExitError, "config file"},
		{"no broker at all", nil, nil, ExitError, "pass `--broker URL`"},
		{"missing region", []string{"--broker", "sqs://", "--endpoint-url", sqsEnv.Endpoint}, map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_PROFILE": ""}, ExitError, "`--region`"},
		{"malformed SQS broker", []string{"--broker", "sqs://not a region"}, nil, ExitError, "sqs://REGION"},
		{"SQS unreachable", []string{"--broker", "sqs://us-east-1", "--endpoint-url", "http://127.0.0.1:" + freePort(t)}, nil, ExitError, "cannot reach"},
		{"no AWS credentials", []string{"--broker", "sqs://us-east-1", "--endpoint-url", sqsEnv.Endpoint}, map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": ""}, ExitDenied, "no AWS credentials"},
		{"missing archive", []string{"--broker", "file://" + filepath.Join(t.TempDir(), "x.jsonl")}, nil, ExitError, "no such file"},
		{"not an archive", []string{"--broker", "file://" + cfg}, nil, ExitError, "not a dlq archive"},
		{"bad output", []string{"--broker", "demo:", "--output", "yaml"}, nil, ExitError, "unknown `--output` \"yaml\" for this command: use one of table, json, csv"},
		{"bad sort", []string{"--broker", "demo:", "--sort", "size"}, nil, ExitError, "unknown `--sort`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"queues", "--timeout", "5s"}, tt.args...)
			stdout, stderr, code := runDLQWith(t, runOpts{Timeout: 20 * time.Second}, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, stderr)
			}
			if !strings.Contains(strings.ToLower(stderr), strings.ToLower(tt.want)) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.want)
			}
			if !strings.HasPrefix(stderr, "dlq: ") {
				t.Errorf("stderr %q does not start with `dlq: `", stderr)
			}
			assertOneLine(t, stderr)
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("config password printed: %q", stderr)
			}
			if os.Getenv("DLQ_TEST_BIN") == "" {
				return
			}
			// The binary too: libraries that write to the process's own
			// stderr (an SDK's logger) would show up only here.
			stdout, stderr, code, _ = runBinary(t, nil, args...)
			if code != tt.code || stdout != "" || !strings.HasPrefix(stderr, "dlq: ") {
				t.Errorf("binary: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			assertOneLine(t, stderr)
		})
	}
}

// TestAcceptanceInvalidAWSCredentials: emulators that check signatures
// reject bogus keys with exit code 4; fauxqs accepts any key.
func TestAcceptanceInvalidAWSCredentials(t *testing.T) {
	env := brokertest.SQS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIADLQTESTBOGUS0000")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "bogus-secret-key-for-dlq-tests")
	_, stderr, code := runDLQ(t, "queues", "--broker", "sqs://us-east-1", "--endpoint-url", env.Endpoint, "--timeout", "5s")
	if code == ExitOK {
		t.Skip("the SQS emulator (fauxqs) does not check credentials, so invalid keys cannot be told apart here")
	}
	if code != ExitDenied {
		t.Errorf("exit %d, want %d: %s", code, ExitDenied, stderr)
	}
	assertOneLine(t, stderr)
}

func TestAcceptanceContexts(t *testing.T) {
	rabbit := brokertest.RabbitMQ(t)
	sqsEnv := brokertest.SQS(t)
	u, _ := url.Parse(rabbit.AMQPURL)
	u.User = url.User(u.User.Username()) // the config holds no password
	cfg := writeConfig(t, fmt.Sprintf(`current-context: rabbit
contexts:
  rabbit:
    broker: %q
    management_url: %q
    password_env: DLQ_TEST_PASSWORD
    read_only: true
  fake-sqs:
    broker: sqs://us-east-1
    endpoint: %q
`, u.String(), rabbit.MgmtURL, sqsEnv.Endpoint))

	for _, args := range [][]string{
		{"--config", cfg},                        // current-context
		{"--config", cfg, "--context", "rabbit"}, // --context
		{"--config", cfg, "--broker", "rabbit"},  // a context name as --broker
	} {
		stdout, stderr, code := runDLQ(t, append(args, "queues", "-o", "json")...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		decodeQueues(t, stdout)
	}
	t.Setenv("DLQ_CONTEXT", "fake-sqs")
	stdout, stderr, code := runDLQ(t, "--config", cfg, "queues", "-o", "json")
	if code != ExitOK {
		t.Fatalf("DLQ_CONTEXT: exit %d: %s", code, stderr)
	}
	for _, q := range decodeQueues(t, stdout) {
		if q.System != "sqs" {
			t.Fatalf("DLQ_CONTEXT=fake-sqs listed %s queue %s", q.System, q.Name)
		}
	}
	t.Setenv("DLQ_CONTEXT", "")

	stdout, _, code = runDLQ(t, "--config", cfg, "contexts", "-o", "json")
	var list []struct {
		Name     string `json:"name"`
		Current  bool   `json:"current"`
		ReadOnly bool   `json:"read_only"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != ExitOK || len(list) != 2 {
		t.Fatalf("contexts: %v %d\n%s", err, code, stdout)
	}
	if list[1].Name != "rabbit" || !list[1].Current || !list[1].ReadOnly || list[0].Current {
		t.Errorf("contexts: %s current=%t read-only=%t, %s current=%t; want rabbit current and read-only, the other not current", list[1].Name, list[1].Current, list[1].ReadOnly, list[0].Name, list[0].Current)
	}

	// The read-only context makes the factory refuse mutations (exit 4).
	ios, _, _, _ := Test()
	f := NewFactory(ios, nil)
	f.Options.ConfigPath = cfg
	err := f.CheckWritable("purge `x`")
	if err == nil || exitCodeFor(err) != ExitDenied {
		t.Errorf("read-only context: CheckWritable = %v (exit %d)", err, exitCodeFor(err))
	}
	f.Options.Context = "fake-sqs"
	if err := f.CheckWritable("purge `x`"); err != nil {
		t.Errorf("writable context refused: %v", err)
	}
	f.Options.ReadOnly = true
	if err := f.CheckWritable("purge `x`"); exitCodeFor(err) != ExitDenied {
		t.Errorf("--read-only not honoured: %v", err)
	}

	// DLQ_BROKER is the last resort.
	t.Setenv("DLQ_BROKER", "demo:")
	stdout, stderr, code = runDLQ(t, "queues", "-o", "json")
	if code != ExitOK || len(decodeQueues(t, stdout)) != 4 {
		t.Errorf("DLQ_BROKER=demo: exit %d %s", code, stderr)
	}
}

func TestHelpTopics(t *testing.T) {
	for topic, want := range map[string]string{
		"exit-codes":     "4  denied",
		"archive-format": `{"dlq_archive":1`,
		"brokers":        "BROKER#DEST",
		"topics":         "redrive-safety  What redrive",
	} {
		stdout, _, code := runDLQ(t, "help", topic)
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("help %s: exit %d, missing %q", topic, code, want)
		}
	}
	stdout, _, _ := runDLQ(t, "--help")
	if !strings.Contains(stdout, "Additional help topics") || !strings.Contains(stdout, "exit-codes") {
		t.Errorf("root help lacks the help topics:\n%s", stdout)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		stdout, _, code := runDLQ(t, "completion", shell)
		if code != ExitOK || !strings.Contains(stdout, "dlq") || len(stdout) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes", shell, code, len(stdout))
		}
	}
	stdout, _, code := runDLQ(t, "version", "-o", "json")
	var v buildInfo
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != ExitOK || v.Version == "" || v.GoVersion == "" {
		t.Errorf("version json: %v, version %q, go version %q, exit %d; want both set, exit %d", err, v.Version, v.GoVersion, code, ExitOK)
	}
	if _, _, code := runDLQ(t, "version", "-o", "csv"); code != ExitError {
		t.Errorf("version -o csv: exit %d, want 1", code)
	}
}

// TestNoSecretInDebugLog: the debug log never holds the password either.
func TestNoSecretInDebugLog(t *testing.T) {
	args := rabbitArgs(t)
	log := filepath.Join(t.TempDir(), "debug.log")
	t.Setenv("DLQ_DEBUG_LOG", log)
	if _, stderr, code := runDLQ(t, append(args, "queues")...); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatal("debug log is empty: the check below would prove nothing")
	}
	assertNoSecret(t, string(data))
}

// TestAcceptanceNoStrayStderr: when no AWS credentials exist and the SDK
// falls through to the instance metadata service, the binary still prints
// exactly one line: no SDK logger may write to the process's stderr.
func TestAcceptanceNoStrayStderr(t *testing.T) {
	env := brokertest.SQS(t)
	clear := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=",
		"AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_CONFIG_FILE=/nonexistent", "AWS_REGION=us-east-1"}
	stdout, stderr, code, _ := runBinary(t, clear, "queues", "--broker", "sqs://", "--endpoint-url", env.Endpoint, "--timeout", "5s")
	if code != ExitDenied || stdout != "" {
		t.Errorf("exit %d (want %d), stdout %q", code, ExitDenied, stdout)
	}
	assertOneLine(t, stderr)
}

// TestAcceptanceTimeout: a server that accepts connections and never
// answers (a black-holed port) ends within --timeout with one line naming
// the flag, for RabbitMQ and for SQS.
func TestAcceptanceTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }()
		}
	}()
	addr := l.Addr().String()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, args := range [][]string{
		{"--broker", "amqp://u:p@" + addr + "/"},
		{"--broker", brokertest.RabbitMQ(t).AMQPURL, "--management-url", "http://" + addr}, // AMQP answers, the API does not
		{"--broker", "sqs://us-east-1", "--endpoint-url", "http://" + addr},
	} {
		start := time.Now()
		stdout, stderr, code := runDLQWith(t, runOpts{Timeout: 15 * time.Second}, append([]string{"queues", "--timeout", "1s"}, args...)...)
		if code != ExitError || stdout != "" {
			t.Errorf("%v: exit %d (want 1), stdout %q, stderr %q, after %v", args, code, stdout, stderr, time.Since(start))
		}
		assertOneLine(t, stderr)
		if !strings.Contains(stderr, "--timeout") && !strings.Contains(stderr, "cannot reach") {
			t.Errorf("%v: stderr %q names neither `--timeout` nor the unreachable host", args, stderr)
		}
	}
}

// TestAcceptanceReadOnlyPeekOfLimitedQuorum: `dlq --read-only peek` and
// `stats` of a quorum queue with a delivery limit publish nothing: they are
// refused before anything is read, exit 4 with a JSON error naming why, and
// every message stays with its x-delivery-count unraised. Where a requeue
// does not count (RabbitMQ 4.3) they read in hold mode, which publishes
// nothing and counts nothing.
func TestAcceptanceReadOnlyPeekOfLimitedQuorum(t *testing.T) {
	args := rabbitArgs(t)
	free := brokertest.RabbitMQ(t).RequeueFree()
	q := brokertest.Name(t, "ro-quorum")
	t.Cleanup(func() { mgmt(t, "DELETE", "/queues/%2F/"+q, nil) })
	mgmt(t, "PUT", "/queues/%2F/"+q, map[string]any{"durable": true, "arguments": map[string]any{"x-queue-type": "quorum", "x-delivery-limit": 2}})
	for i := range 5 {
		mgmt(t, "POST", "/exchanges/%2F/amq.default/publish", map[string]any{"properties": map[string]any{}, "routing_key": q, "payload": "m" + strconv.Itoa(i), "payload_encoding": "string"})
	}
	for _, cmd := range [][]string{{"peek", "--limit", "3", q}, {"stats", q}, {"peek", "--limit", "3", q}, {"peek", "--limit", "3", q}} {
		stdout, stderr, code := runDLQ(t, append(append(args, "--read-only", "-o", "json"), cmd...)...)
		if free {
			if code != ExitOK || !json.Valid([]byte(stdout)) {
				t.Fatalf("dlq --read-only %s on RabbitMQ 4.3: exit %d, want 0 and JSON; stderr %s", strings.Join(cmd, " "), code, stderr)
			}
			continue
		}
		if code != ExitDenied {
			t.Fatalf("dlq --read-only %s: exit %d, want %d; stderr %s", strings.Join(cmd, " "), code, ExitDenied, stderr)
		}
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(stdout), &e); err != nil || !strings.Contains(e.Error.Message, "nothing was read or changed") {
			t.Errorf("dlq --read-only %s -o json: %q (%v), want an error object saying nothing was read or changed", strings.Join(cmd, " "), stdout, err)
		}
	}
	// As an administrator, without --read-only: the rotation reads them all,
	// and shows that none was counted or lost.
	stdout, stderr, code := runDLQ(t, append(args, "peek", "-o", "json", q)...)
	if code != ExitOK {
		t.Fatalf("peek: exit %d: %s", code, stderr)
	}
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &msgs); err != nil || len(msgs) != 5 {
		t.Fatalf("after the read-only runs the queue shows %d messages (%v), want 5", len(msgs), err)
	}
	for _, m := range msgs {
		if n, _ := m["delivery_count"].(float64); n != 0 {
			t.Errorf("after the read-only runs message %v has delivery_count %v, want 0", m["id"], n)
		}
	}
}
