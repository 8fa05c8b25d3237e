package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// The end-to-end tests drive the real binary in tmux, as a person would,
// against the real RabbitMQ: open a DLQ, filter, open a message, edit its
// JSON, save — then ask the broker what happened.

func tuiBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("DLQ_TEST_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("DLQ_TEST_BIN=%s: %v (run `make build`)", bin, err)
		}
		return bin
	}
	bin := filepath.Join(t.TempDir(), "dlq")
	out, err := exec.Command("go", "build", "-o", bin, "./dlq").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tmuxSocket is this test binary's own tmux server (set by TestMain): a
// server the person runs, or one another test binary runs, never sees these
// sessions, and they never see its environment or settings.
var tmuxSocket string

// tmux runs a tmux command against the test binary's own server, without
// any tmux configuration file.
func tmux(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-S", tmuxSocket, "-f", "/dev/null"}, args...)...)
}

func stopTmuxServer() {
	if tmuxSocket != "" {
		_ = tmux("kill-server").Run()
	}
}

// tmuxSession is one terminal running dlq tui.
type tmuxSession struct {
	t    *testing.T
	name string
}

// startTmux runs args in a new session of the test's tmux server, with
// exactly the test's environment plus env (env -i): a variable of the tmux
// server's, or of whoever started it, never reaches dlq. TERM is the one
// tmux emulates.
func startTmux(t *testing.T, env []string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	name := strings.ReplaceAll(brokertest.Name(t, "tui"), ".", "-")
	cmdline := make([]string, len(args))
	for i, a := range args {
		cmdline[i] = shellQuote(a)
	}
	script := strings.Join(cmdline, " ") + "; echo DLQ-EXITED=$?; sleep 600"
	argv := []string{"new-session", "-d", "-s", name, "-x", "120", "-y", "36", "env", "-i"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERM=") {
			argv = append(argv, kv)
		}
	}
	argv = append(argv, "TERM=screen")
	argv = append(argv, env...)
	argv = append(argv, "sh", "-c", script)
	if out, err := tmux(argv...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	s := &tmuxSession{t: t, name: name}
	t.Cleanup(func() { _ = tmux("kill-session", "-t", name).Run() })
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *tmuxSession) capture() string {
	out, err := tmux("capture-pane", "-p", "-t", s.name).Output()
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// waitFor polls the screen until it shows every string, or fails at the
// deadline with the last screen.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr := s.capture()
		ok := true
		for _, w := range want {
			if !strings.Contains(scr, w) {
				ok = false
				break
			}
		}
		if ok {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q; last screen:\n%s", want, scr)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := tmux(append([]string{"send-keys", "-t", s.name}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

func (s *tmuxSession) text(txt string) {
	s.t.Helper()
	if out, err := tmux("send-keys", "-t", s.name, "-l", txt).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// deadLetterSetup makes origin → (reject) → DLX → dlq with two dead-lettered
// JSON messages carrying x-death, and returns a channel for checking.
func deadLetterSetup(t *testing.T) (ch *amqp.Channel, origin, dlq string) {
	t.Helper()
	env := brokertest.RabbitMQ(t)
	conn, err := amqp.Dial(env.AMQPURL)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err = conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	origin, dlq = brokertest.Name(t, "orders"), brokertest.Name(t, "orders-dlq")
	dlx := brokertest.Name(t, "dlx")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ch.ExchangeDeclare(dlx, "fanout", false, true, false, false, nil))
	_, err = ch.QueueDeclare(dlq, true, false, false, false, nil)
	must(err)
	must(ch.QueueBind(dlq, "", dlx, false, nil))
	_, err = ch.QueueDeclare(origin, true, false, false, false, amqp.Table{"x-dead-letter-exchange": dlx})
	must(err)
	t.Cleanup(func() {
		c2, err := conn.Channel()
		if err != nil {
			return
		}
		c2.QueueDelete(origin, false, false, false)
		c2.QueueDelete(dlq, false, false, false)
		c2.ExchangeDelete(dlx, false, false)
	})
	for i, body := range []string{`{"order_id":42,"status":"bad","amount":10}`, `{"order_id":7,"status":"bad","amount":3}`} {
		must(ch.PublishWithContext(context.Background(), "", origin, true, false, amqp.Publishing{
			ContentType: "application/json", MessageId: fmt.Sprintf("e2e-%d", i+1), DeliveryMode: 2,
			Headers: amqp.Table{"tenant": "acme"}, Body: []byte(body),
		}))
	}
	// Reject both so RabbitMQ dead-letters them with x-death.
	for n := 0; n < 2; {
		d, ok, err := ch.Get(origin, false)
		must(err)
		if !ok {
			waitUntil(t, "messages to arrive in the origin queue", func() bool {
				q, _ := ch.QueueDeclarePassive(origin, true, false, false, false, amqp.Table{"x-dead-letter-exchange": dlx})
				return q.Messages > 0
			})
			continue
		}
		must(d.Reject(false))
		n++
	}
	waitUntil(t, "2 dead letters in the DLQ", func() bool { return depth(t, ch, dlq) == 2 })
	return ch, origin, dlq
}

func depth(t *testing.T, ch *amqp.Channel, q string) int {
	t.Helper()
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		// the origin has arguments; inspect it through a fresh declare-free path
		t.Fatalf("inspect %s: %v", q, err)
	}
	return st.Messages
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func editorScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nsed -i 's/\"status\": \"bad\"/\"status\": \"fixed\"/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTUIEndToEndEditAndRedrive(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	bin := tuiBinary(t)
	ch, origin, dlq := deadLetterSetup(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startTmux(t, []string{"EDITOR=" + editorScript(t), "DLQ_AUDIT_LOG=" + audit, "NO_COLOR=1"},
		bin, "tui", "--broker", env.AMQPURL, "--management-url", env.MgmtURL, "--refresh", "1s")

	s.waitFor("NAME", "queues  ·  updated")
	s.keys("/")
	s.text(dlq)
	s.keys("Enter")
	s.waitFor("filter: "+dlq, "1/")
	s.keys("Enter")
	s.waitFor("2 read", "e2e-1", "e2e-2")
	s.keys("/")
	s.text(".body.order_id == 42")
	s.keys("Enter")
	s.waitFor("1 match")
	s.keys("Enter")
	s.waitFor("message e2e-1", "death history", "rejected in "+origin)
	s.keys("e")
	s.waitFor("edit e2e-1", `"status": "bad"`)
	s.keys("C-e")
	s.waitFor(`"status": "fixed"`)
	s.keys("C-s")
	s.waitFor("review the change", `+     "status": "fixed"`, `-     "status": "bad"`)
	s.keys("Enter")
	s.waitFor("publish the edited message to", "origin")
	s.keys("Enter")
	s.waitFor("save edited message?")
	s.keys("y")
	s.waitFor("published edited e2e-1 to origin")
	s.waitFor("0 match · 1 read") // the list reloads, filter kept: the original left the DLQ
	s.keys("q")
	s.waitFor("DLQ-EXITED=0")

	waitUntil(t, "the edited message in the origin queue", func() bool {
		st, err := ch.QueueDeclarePassive(origin, true, false, false, false, nil)
		return err == nil && st.Messages == 1
	})
	d, ok, err := ch.Get(origin, false)
	if err != nil || !ok {
		t.Fatalf("get from origin: ok=%v err=%v", ok, err)
	}
	var body map[string]any
	if err := json.Unmarshal(d.Body, &body); err != nil || body["status"] != "fixed" || body["order_id"] != float64(42) {
		t.Fatalf("origin got %s, want the edited order 42 with status fixed", d.Body)
	}
	if d.MessageId != "e2e-1" || d.Headers["tenant"] != "acme" {
		t.Fatalf("message id %q headers %v: properties and headers must survive the edit", d.MessageId, d.Headers)
	}
	if _, ok := d.Headers["x-death"]; ok {
		t.Fatalf("the redriven message still carries x-death")
	}
	_ = d.Nack(false, true)
	if n := depth(t, ch, dlq); n != 1 {
		t.Fatalf("DLQ depth %d, want 1: the original must have left and the other stayed", n)
	}
	a, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(a), `"action":"tui-edit"`) || !strings.Contains(string(a), "e2e-1") {
		t.Fatalf("audit log %s: %v", a, err)
	}
	if strings.Contains(string(a), env.Password) {
		t.Fatal("the audit log holds the password")
	}
}

func TestTUIEndToEndReadOnly(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	bin := tuiBinary(t)
	ch, origin, dlq := deadLetterSetup(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startTmux(t, []string{"EDITOR=" + editorScript(t), "DLQ_AUDIT_LOG=" + audit, "NO_COLOR=1"},
		bin, "tui", "--read-only", "--broker", env.AMQPURL, "--management-url", env.MgmtURL, "--refresh", "0")

	s.waitFor("[read-only]", "NAME", "queues  ·  updated")
	s.keys("/")
	s.text(dlq)
	s.keys("Enter")
	s.waitFor("filter: " + dlq)
	s.keys("Enter")
	s.waitFor("2 read", "e2e-1")
	scr := s.waitFor("1/2")
	if strings.Contains(scr, "redrive") || strings.Contains(scr, "discard") {
		t.Fatalf("read-only footer offers a dangerous key:\n%s", scr)
	}
	s.keys("/")
	s.text(".body.order_id == 42")
	s.keys("Enter")
	s.waitFor("1 match")
	s.keys("Enter")
	s.waitFor("message e2e-1")
	// The edit keys do nothing; r after them proves they were read.
	s.keys("e", "C-e", "C-s", "R", "D", "r")
	scr = s.waitFor("message e2e-1", "raw (r cycles)")
	if strings.Contains(scr, "edit e2e-1") || strings.Contains(scr, "review the change") || strings.Contains(scr, "edit and republish") {
		t.Fatalf("an edit key worked in read-only mode:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("DLQ-EXITED=0")
	if n := depth(t, ch, dlq); n != 2 {
		t.Fatalf("DLQ depth %d, want 2: read-only must change nothing", n)
	}
	if st, err := ch.QueueDeclarePassive(origin, true, false, false, false, nil); err == nil && st.Messages != 0 {
		t.Fatalf("origin has %d messages in read-only mode", st.Messages)
	}
	if b, err := os.ReadFile(audit); err == nil && len(b) > 0 {
		t.Fatalf("read-only session wrote audit records: %s", b)
	}
}

// On a terminal `dlq redrive` shows its preview and asks; "no" exits 2 and
// leaves the DLQ and the origin as they were.
func TestRedriveEndToEndConfirmNo(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil && os.Getenv("DLQ_TEST_REQUIRE_BROKERS") == "1" {
		t.Fatal("tmux is not installed and DLQ_TEST_REQUIRE_BROKERS=1")
	}
	env := brokertest.RabbitMQ(t)
	bin := tuiBinary(t)
	ch, origin, dlq := deadLetterSetup(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startTmux(t, []string{"DLQ_AUDIT_LOG=" + audit, "NO_COLOR=1", "XDG_STATE_HOME=" + t.TempDir()},
		bin, "redrive", dlq, "--broker", env.AMQPURL, "--management-url", env.MgmtURL)
	s.waitFor("redrive will move 2 of 2 messages in `"+dlq+"`", "sample: ", "move these 2 messages? [y/N]")
	s.text("n")
	s.keys("Enter")
	scr := s.waitFor("DLQ-EXITED=")
	if !strings.Contains(scr, "DLQ-EXITED=2") {
		t.Fatalf("want exit 2 after no; screen:\n%s", scr)
	}
	if d, o := depth(t, ch, dlq), depth(t, ch, origin); d != 2 || o != 0 {
		t.Fatalf("after no: dlq %d origin %d, want 2 and 0", d, o)
	}
}
