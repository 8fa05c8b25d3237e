package cmd

// A real Celery application dead-letters a task on the test RabbitMQ, and
// dlq decodes it, groups it and sends it home. Celery and its Python
// dependencies are Debian bookworm's packages, fetched and unpacked by
// scripts/frameworks (no system package is installed or replaced), and run
// by Debian's /usr/bin/python3 in isolated mode (-I: no user site, no
// PYTHON* variables). The application is cmd/testdata/celery_app.py.
//
// Dramatiq is not packaged by Debian and PyPI is out of reach here, so no
// Dramatiq client runs in the tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// celerySite is the dist-packages folder of the unpacked Celery, installed
// by scripts/frameworks when missing. A failed install fails the test when
// the servers are required (make test), else skips it with the reason.
func celerySite(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("Debian's /usr/bin/python3 is missing: the Celery test needs it")
	}
	script, err := filepath.Abs("../scripts/frameworks")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	c := exec.CommandContext(ctx, script, "celery")
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		msg := fmt.Sprintf("scripts/frameworks celery: %v: %s", err, strings.TrimSpace(errOut.String()))
		if os.Getenv("DLQ_TEST_REQUIRE_BROKERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

// celeryApp runs cmd/testdata/celery_app.py with Debian's python3.
type celeryApp struct {
	env []string
}

func (a *celeryApp) command(ctx context.Context, verb string) *exec.Cmd {
	c := exec.CommandContext(ctx, "/usr/bin/python3", "-I", "testdata/celery_app.py", verb)
	c.Env = a.env
	return c
}

func TestCeleryWorkerIntegration(t *testing.T) {
	if os.Getenv("DLQ_TEST_RABBITMQ_ONLY") == "1" {
		t.Skipf("the Celery test runs in the RabbitMQ 3.10 pass of make test (this pass runs RabbitMQ %s)", os.Getenv("DLQ_TEST_RABBITMQ_VERSION"))
	}
	r := newRIRabbit(t)
	site := celerySite(t)
	base := brokertest.Name(t, "celery")
	work, dlq := base+".work", base+".dlq"
	// Declared as Celery declares them itself (kombu's defaults: durable
	// direct exchange and queue), so that both declarations agree and the
	// test removes what Celery made.
	r.queue(dlq, nil)
	r.exchange(work)
	r.queue(work, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	r.bind(work, work, work)

	app := &celeryApp{env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "LANG=C.UTF-8",
		"DLQ_CELERY_SITE=" + site, "DLQ_CELERY_BROKER=" + r.url, "DLQ_CELERY_QUEUE=" + work, "DLQ_CELERY_DLQ=" + dlq}}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := app.command(ctx, "send").Output()
	if err != nil {
		t.Fatalf("celery_app.py send: %v: %s", err, exitText(err))
	}
	taskID := strings.TrimSpace(string(out))

	// The worker retries the task once, then rejects it: RabbitMQ
	// dead-letters it to dlq. SIGTERM is Celery's warm shutdown; a worker
	// that does not stop within 20 s is killed.
	var log bytes.Buffer
	worker := app.command(ctx, "worker")
	worker.Stdout, worker.Stderr = &log, &log
	worker.Cancel = func() error { return worker.Process.Signal(syscall.SIGTERM) }
	worker.WaitDelay = 20 * time.Second
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	stopWorker := func() {
		_ = worker.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(25 * time.Second):
			t.Fatalf("the Celery worker did not stop:\n%s", log.String())
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for r.depth(dlq) != 1 {
		select {
		case err := <-exited:
			t.Fatalf("the Celery worker exited (%v) before the task was dead-lettered:\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			stopWorker()
			t.Fatalf("no dead letter in %s within 90 s; worker log:\n%s", dlq, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopWorker()
	if n := r.depth(work); n != 0 {
		t.Fatalf("%s holds %d messages after the worker stopped, want 0", work, n)
	}
	d, ok, err := r.ch.Get(dlq, false)
	if err != nil || !ok {
		t.Fatalf("get the dead letter: %v %v", ok, err)
	}
	body := append([]byte(nil), d.Body...)
	if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}

	// peek -o json: the failure record Celery's headers give.
	stdout, stderr, code, _ := runBinary(t, nil, append(r.args, "peek", dlq, "-o", "json")...)
	var peeked []struct {
		ID      string         `json:"id"`
		Reason  string         `json:"reason"`
		Source  string         `json:"source"`
		Failure map[string]any `json:"failure"`
	}
	if code != ExitOK || json.Unmarshal([]byte(stdout), &peeked) != nil || len(peeked) != 1 {
		t.Fatalf("peek -o json: exit %d, want one message:\n%s%s", code, stdout, stderr)
	}
	p := peeked[0]
	want := map[string]any{"framework": "celery", "message_type": "shop.charge_card", "id": taskID, "attempts": float64(1)}
	for k, v := range want {
		if p.Failure[k] != v {
			t.Errorf("peek: failure.%s = %v, want %v (failure %v)", k, p.Failure[k], v, p.Failure)
		}
	}
	if p.Reason != "rejected" || p.Source != work {
		t.Errorf("peek: reason %q, source %q; want rejected, %s", p.Reason, p.Source, work)
	}

	// show: the record in words.
	stdout, stderr, code, _ = runBinary(t, nil, append(r.args, "show", dlq, p.ID)...)
	for _, w := range []string{"failure (celery):", "message type:   shop.charge_card", "id:             " + taskID, "attempts:       1"} {
		if code != ExitOK || !strings.Contains(stdout, w) {
			t.Errorf("show lacks %q: exit %d\n%s%s", w, code, stdout, stderr)
		}
	}

	// stats groups it by framework.
	stdout, stderr, code, _ = runBinary(t, nil, append(r.args, "stats", dlq, "--group-by", "framework,failure.message-type", "-o", "csv")...)
	if code != ExitOK || !strings.Contains(stdout, "celery,shop.charge_card,1,") {
		t.Errorf("stats --group-by framework,failure.message-type lacks celery,shop.charge_card,1: exit %d\n%s%s", code, stdout, stderr)
	}

	// redrive --to origin: home by x-death, the body byte for byte.
	stdout, stderr, code, _ = runBinary(t, nil, append(r.args, "redrive", dlq, "--to", "origin", "--yes", "--no-journal")...)
	if code != ExitOK {
		t.Fatalf("redrive --to origin: exit %d\n%s%s", code, stdout, stderr)
	}
	r.waitDepth(dlq, 0)
	got := r.drain(work)
	if len(got) != 1 {
		t.Fatalf("%s holds %d messages after the redrive, want the task", work, len(got))
	}
	if !bytes.Equal(got[0].Body, body) {
		t.Errorf("redriven body differs:\n got %q\nwant %q", got[0].Body, body)
	}
	if got[0].Headers["task"] != "shop.charge_card" || got[0].Headers["id"] != taskID {
		t.Errorf("redriven headers task=%v id=%v, want shop.charge_card %s", got[0].Headers["task"], got[0].Headers["id"], taskID)
	}
}

// exitText is what a failed command wrote to stderr.
func exitText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
