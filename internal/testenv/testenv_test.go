package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

// The hostile environment of a person who runs the tests: their own
// settings for dlq, AWS, the editor and the terminal.
var hostile = map[string]string{
	"AWS_PROFILE":           "does-not-exist",
	"AWS_DEFAULT_REGION":    "bogus-region-1",
	"AWS_ACCESS_KEY_ID":     "AKIAPERSONAL",
	"AWS_ENDPOINT_URL_SQS":  "http://127.0.0.1:1",
	"DLQ_BROKER":            "amqp://nobody@127.0.0.1:1/",
	"DLQ_CONTEXT":           "prod",
	"DLQ_AUDIT_LOG":         "/nonexistent/audit.jsonl",
	"DLQ_TEST_AMQP_URL":     "amqp://kept@127.0.0.1:5672/",
	"DLQ_CLUSTER_AMQP_URLS": "amqp://kept@127.0.0.1:5681/",
	"EDITOR":                "false",
	"VISUAL":                "false",
	"NO_COLOR":              "1",
	"LANG":                  "C",
	"LC_ALL":                "C",
	"TERM":                  "dumb",
	"TMUX":                  "/tmp/tmux-0/default,1,0",
	"DEBUG":                 "1",
	"XDG_CONFIG_HOME":       "/home/someone/.config",
}

// TestSetupReplacesThePersonsSettings runs Setup in a child process started
// with the hostile environment and compares what the child sees.
func TestSetupReplacesThePersonsSettings(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		if _, err := Setup(); err != nil {
			t.Fatal(err)
		}
		for _, kv := range os.Environ() {
			os.Stdout.WriteString(kv + "\n")
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-test.run", "^TestSetupReplacesThePersonsSettings$")
	c.Env = append(os.Environ(), "TESTENV_CHILD=1")
	for k, v := range hostile {
		c.Env = append(c.Env, k+"="+v)
	}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"AWS_PROFILE": "", "AWS_DEFAULT_REGION": "", "AWS_ENDPOINT_URL_SQS": "",
		"AWS_ACCESS_KEY_ID": "test", "AWS_REGION": "us-east-1",
		"DLQ_BROKER": "", "DLQ_CONTEXT": "", "DLQ_AUDIT_LOG": "",
		"DLQ_TEST_AMQP_URL": hostile["DLQ_TEST_AMQP_URL"], "DLQ_CLUSTER_AMQP_URLS": hostile["DLQ_CLUSTER_AMQP_URLS"],
		"EDITOR": "", "VISUAL": "", "NO_COLOR": "", "LC_ALL": "", "TMUX": "", "DEBUG": "",
		"LANG": "C.UTF-8", "TERM": "xterm",
	}
	seen := map[string]string{}
	for k := range want {
		seen[k] = got[k]
	}
	if d := testdiff.Diff(want, seen); d != "" {
		t.Errorf("environment after Setup (- want, + got):\n%s", d)
	}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "AWS_CONFIG_FILE"} {
		if !strings.Contains(got[k], "dlq-test-env-") {
			t.Errorf("%s=%q: want a folder of the test's own", k, got[k])
		}
	}
}
