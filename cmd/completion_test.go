package cmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// complete runs `dlq __complete ARGS…` in-process, as every shell's script
// does, and returns its candidates and directive line. Completion must
// never write to stderr.
func complete(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runDLQ(t, append([]string{"__complete"}, args...)...)
	if code != ExitOK || stderr != "" {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, code, stderr)
	}
	return stdout
}

// Directive lines: 4 no file completion, 6 also no space after the word.
const (
	dirNoFile  = ":4\n"
	dirNoSpace = ":6\n"
)

func TestCompleteDemo(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"dumps/a.jsonl", "dumps/b.jsonl.gz", "dumps/.hidden", "dumps/old/c.jsonl"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"queue argument", []string{"peek", "--broker", "demo:", ""},
			"billing-dlq\nevents-dlq.fifo\norders.dlq\npayments.dlq\n" + dirNoFile},
		{"queue argument, typed prefix", []string{"stats", "--broker", "demo:", "pay"},
			"payments.dlq\n" + dirNoFile},
		{"demo:NAME without --broker", []string{"redrive", "demo:o"},
			"demo:orders.dlq\n" + dirNoFile},
		{"only the first argument is a queue", []string{"peek", "--broker", "demo:", "orders.dlq", ""},
			dirNoFile},
		{"every QUEUE command", []string{"purge", "--broker", "demo:", "e"},
			"events-dlq.fifo\n" + dirNoFile},
		{"tui", []string{"tui", "--broker", "demo:", "b"}, "billing-dlq\n" + dirNoFile},
		{"redrive status", []string{"redrive", "status", "--broker", "demo:", "b"}, "billing-dlq\n" + dirNoFile},
		{"file:// start", []string{"peek", "fi"}, "file://\n" + dirNoSpace},
		{"file:// paths", []string{"peek", "file://dumps/"},
			"file://dumps/a.jsonl\nfile://dumps/b.jsonl.gz\nfile://dumps/old/\n" + dirNoSpace},
		{"file:// hidden entries once a dot is typed", []string{"peek", "file://dumps/."},
			"file://dumps/.hidden\n" + dirNoFile},
		{"file:// missing directory", []string{"peek", "file://nowhere/x"}, dirNoFile},

		{"--to kinds", []string{"redrive", "--broker", "demo:", "orders.dlq", "--to", ""},
			"origin\twhere each message was dead-lettered from\n" +
				"queue:\ta queue on the source's broker\n" +
				"exchange:\ta RabbitMQ exchange on the source's broker\n" +
				"file://\tan archive file\n" + dirNoSpace},
		{"--to origin", []string{"redrive", "orders.dlq", "--to", "or"},
			"origin\twhere each message was dead-lettered from\n" + dirNoFile},
		{"--to queue: names the source's broker has", []string{"redrive", "--broker", "demo:", "orders.dlq", "--to", "queue:"},
			"queue:billing-dlq\nqueue:events-dlq.fifo\nqueue:orders.dlq\nqueue:payments.dlq\n" + dirNoFile},
		{"--to queue: on the broker of a demo:NAME source", []string{"redrive", "demo:orders.dlq", "--to", "queue:p"},
			"queue:payments.dlq\n" + dirNoFile},
		{"--to exchange: an archive has none", []string{"redrive", "--broker", "demo:", "orders.dlq", "--to", "exchange:"},
			dirNoFile},
		{"--to file://", []string{"redrive", "orders.dlq", "--to", "file://dumps/a"},
			"file://dumps/a.jsonl\n" + dirNoFile},
		{"export --to", []string{"export", "orders.dlq", "--to", ""}, "file://\n" + dirNoSpace},
		{"discard --archive-to", []string{"discard", "orders.dlq", "--archive-to", "file://dumps/b"},
			"file://dumps/b.jsonl.gz\n" + dirNoFile},

		{"--group-by keys", []string{"stats", "orders.dlq", "--group-by", ""},
			"reason\nreason-text\nredrives\nsource\nexchange\nrouting-key\nframework\nfailure.type\nfailure.consumer\nfailure.message-type\nheader:\nattr:\nbody:\nage\nday\nhour\n" + dirNoSpace},
		{"--group-by after a comma, without keys already given", []string{"stats", "orders.dlq", "--group-by", "reason,source,a"},
			"reason,source,attr:\nreason,source,age\n" + dirNoSpace},
		{"--group-by short flag", []string{"stats", "orders.dlq", "-g", "h"},
			"header:\nhour\n" + dirNoSpace},

		{"--output of peek", []string{"peek", "--output", ""}, "table\njson\njsonl\nraw\n" + dirNoFile},
		{"--output of stats", []string{"stats", "-o", ""}, "table\njson\ncsv\nprom\n" + dirNoFile},
		{"--output of topology export", []string{"topology", "export", "-o", ""}, "yaml\njson\n" + dirNoFile},
		{"--output of a command without output", []string{"tui", "-o", ""}, dirNoFile},
		{"--mode", []string{"peek", "q", "--mode", "r"}, "rotate\nreceive\nrequeue\n" + dirNoFile},
		{"--sort", []string{"queues", "--sort", ""}, "attention\nname\ndepth\n" + dirNoFile},

		{"--broker schemes", []string{"queues", "--broker", "a"},
			"amqp://\tRabbitMQ\namqps://\tRabbitMQ over TLS\n" + dirNoSpace},
		{"--broker demo:", []string{"queues", "--broker", "d"},
			"demo:\tthe embedded sample archive\n" + dirNoSpace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := testdiff.Text(tt.want, complete(t, tt.args...)); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestCompleteContexts(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  prod-rabbit: {broker: 'amqp://ops@rabbit/shop', read_only: true}\n  demo: {broker: 'demo:'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := testdiff.Text("demo\nprod-rabbit\n"+dirNoFile, complete(t, "queues", "--config", cfg, "--context", "")); d != "" {
		t.Error(d)
	}
	if d := testdiff.Text("prod-rabbit\tcontext\n"+dirNoFile, complete(t, "queues", "--config", cfg, "--broker", "p")); d != "" {
		t.Error(d)
	}
	// The queue argument asks the context's broker.
	if d := testdiff.Text("orders.dlq\n"+dirNoFile, complete(t, "peek", "--config", cfg, "--context", "demo", "ord")); d != "" {
		t.Error(d)
	}
}

// TestCompleteChangesNothing: completing the arguments of commands that
// change things writes no audit record or journal and reads no answer.
func TestCompleteChangesNothing(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	for _, args := range [][]string{
		{"redrive", "--broker", "demo:", ""},
		{"redrive", "--broker", "demo:", "orders.dlq", "--to", "queue:"},
		{"discard", "--broker", "demo:", ""},
		{"purge", "--broker", "demo:", "orders.dlq", "--archive-to", "file://"},
		{"topology", "apply", "-f", ""},
	} {
		ios, in, out, errOut := Test()
		in.WriteString("y\ny\n")
		ios.SetTTY(true)
		if code := Run(context.Background(), ios, append([]string{"__complete"}, args...)); code != ExitOK || errOut.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
		if in.Len() != len("y\ny\n") {
			t.Errorf("%q read from stdin: completion must never prompt", args)
		}
		if strings.Contains(out.String(), "?") {
			t.Errorf("%q asked something: %q", args, out)
		}
	}
	var files []string
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) > 0 {
		t.Errorf("completion wrote %q", files)
	}
}

// TestCompleteFailsQuietly: a broker that refuses or never answers gives no
// candidates, nothing on stderr, and no wait beyond completionTimeout
// whatever --timeout says.
func TestCompleteFailsQuietly(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, then say nothing
		}
	}()
	for _, tt := range []struct{ name, broker string }{
		{"refused", "amqp://u@127.0.0.1:" + freePort(t) + "/"},
		{"never answers", "amqp://u@" + silent.Addr().String() + "/"},
		{"no such archive", "file://" + filepath.Join(t.TempDir(), "none.jsonl")},
		{"unknown context", "no-such-context"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			for _, args := range [][]string{
				{"peek", "--broker", tt.broker, "--timeout", "1m", ""},
				{"redrive", "--broker", tt.broker, "--timeout", "1m", "q", "--to", "exchange:"},
			} {
				if d := testdiff.Text(dirNoFile, complete(t, args...)); d != "" {
					t.Errorf("%q:\n%s", args, d)
				}
			}
			if took := time.Since(start); took > 2*completionTimeout+time.Second {
				t.Errorf("two completions took %s: each must give up after %s", took, completionTimeout)
			}
		})
	}
}

func TestCompleteRabbitMQ(t *testing.T) {
	args := rabbitArgs(t)
	prefix := brokertest.Name(t, "c")
	q1, q2, x := prefix+".a.dlq", prefix+".b.q", prefix+".x"
	t.Cleanup(func() {
		mgmt(t, "DELETE", "/queues/%2F/"+q1, nil)
		mgmt(t, "DELETE", "/queues/%2F/"+q2, nil)
		mgmt(t, "DELETE", "/exchanges/%2F/"+x, nil)
	})
	mgmt(t, "PUT", "/queues/%2F/"+q1, map[string]any{"durable": false})
	mgmt(t, "PUT", "/queues/%2F/"+q2, map[string]any{"durable": false})
	mgmt(t, "PUT", "/exchanges/%2F/"+x, map[string]any{"type": "topic", "durable": false})

	if d := testdiff.Text(q1+"\n"+q2+"\n"+dirNoFile, complete(t, append(args, "peek", prefix)...)); d != "" {
		t.Errorf("queue argument:\n%s", d)
	}
	if d := testdiff.Text("queue:"+q2+"\n"+dirNoFile, complete(t, append(args, "redrive", q1, "--to", "queue:"+prefix+".b")...)); d != "" {
		t.Errorf("--to queue:\n%s", d)
	}
	if d := testdiff.Text("exchange:"+x+"\n"+dirNoFile, complete(t, append(args, "redrive", q1, "--to", "exchange:"+prefix)...)); d != "" {
		t.Errorf("--to exchange:\n%s", d)
	}
}

func TestCompleteSQS(t *testing.T) {
	args := sqsArgs(t)
	c := sqsClient(t)
	prefix := brokertest.Name(t, "c")
	if len(prefix) > 70 {
		prefix = prefix[len(prefix)-70:]
	}
	var want string
	for _, n := range []string{prefix + "-a-dlq", prefix + "-b"} {
		out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(n)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
		want += n + "\n"
	}
	if d := testdiff.Text(want+dirNoFile, complete(t, append(args, "stats", prefix)...)); d != "" {
		t.Errorf("queue argument:\n%s", d)
	}
	if d := testdiff.Text("queue:"+prefix+"-b\n"+dirNoFile, complete(t, append(args, "redrive", prefix+"-a-dlq", "--to", "queue:"+prefix+"-b")...)); d != "" {
		t.Errorf("--to queue:\n%s", d)
	}
}

// TestCompletionScripts: `dlq completion SHELL` writes a script for each
// shell that asks `dlq __complete` for candidates.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		stdout, stderr, code := runDLQ(t, "completion", shell)
		if code != ExitOK || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", shell, code, stderr)
		}
		if !strings.Contains(stdout, "__complete") || !strings.Contains(stdout, "dlq") {
			t.Errorf("the %s script does not call `dlq __complete`:\n%.400s", shell, stdout)
		}
	}
}

// dlqOnPath puts a `dlq` on PATH that runs this test binary as dlq (see
// TestMain), so that the shells' scripts call the code under test.
func dlqOnPath(t *testing.T) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nDLQ_TEST_RUN_MAIN=1 exec %q \"$@\"\n", self)
	if err := os.WriteFile(filepath.Join(dir, "dlq"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// bashWords splits a command line as bash does for completion: at blanks,
// and at ':' and '=' (COMP_WORDBREAKS), which become words of their own.
func bashWords(line string) []string {
	var words []string
	for _, f := range strings.Fields(line) {
		cur := ""
		for _, r := range f {
			if r == ':' || r == '=' {
				if cur != "" && !strings.ContainsAny(cur[len(cur)-1:], ":=") {
					words, cur = append(words, cur), ""
				}
				cur += string(r)
				continue
			}
			if cur != "" && strings.ContainsAny(cur[len(cur)-1:], ":=") {
				words, cur = append(words, cur), ""
			}
			cur += string(r)
		}
		words = append(words, cur)
	}
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	return words
}

// TestCompletionBash drives the bash script as bash's programmable
// completion does (with the bash-completion package it needs).
func TestCompletionBash(t *testing.T) {
	const lib = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(lib); err != nil {
		t.Skip("bash-completion not installed")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dlqOnPath(t)
	for _, tt := range []struct{ line, want string }{
		{"dlq peek --broker demo: or", "orders.dlq"},
		{"dlq redrive --broker demo: orders.dlq --to queue:pa", "payments.dlq"},
		{"dlq redrive demo:orders.dlq --to ", "origin\nqueue:\nexchange:\nfile://"},
		{"dlq stats demo:orders.dlq --group-by reason,so", "reason,source"},
		{"dlq queues --broker demo: -o ", "table\njson\ncsv"},
	} {
		words := bashWords(tt.line)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = fmt.Sprintf("%q", w)
		}
		script := fmt.Sprintf(`source %s
source <(dlq completion bash)
COMP_LINE=%q; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(%s); COMP_CWORD=%d
__start_dlq 2>/dev/null
printf '%%s\n' "${COMPREPLY[@]}"
`, lib, tt.line, strings.Join(quoted, " "), len(words)-1)
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.line, err, out)
		}
		// bash shows descriptions beside several candidates, and quotes a
		// single one for the command line (reason\,source): compare names.
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.ReplaceAll(strings.TrimSpace(strings.SplitN(l, "  (", 2)[0]), `\`, ""))
		}
		if d := testdiff.Text(tt.want+"\n", strings.Join(got, "\n")+"\n"); d != "" {
			t.Errorf("%s<TAB>:\n%s", tt.line, d)
		}
	}
}

// TestCompletionFish asks fish for the completions of command lines.
func TestCompletionFish(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("no fish")
	}
	dlqOnPath(t)
	for _, tt := range []struct{ line, want string }{
		{"dlq peek --broker demo: or", "orders.dlq"},
		{"dlq redrive --broker demo: orders.dlq --to queue:pa", "queue:payments.dlq"},
		{"dlq stats demo:orders.dlq --group-by reason,so", "reason,source"},
	} {
		out, err := exec.Command("fish", "--no-config", "-c", "dlq completion fish | source; complete --do-complete "+fmt.Sprintf("%q", tt.line)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.line, err, out)
		}
		// To keep the cursor after a single candidate (no space), the
		// script offers it twice, the second time with a dot: drop that one.
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			c := strings.SplitN(l, "\t", 2)[0]
			if len(got) > 0 && c == got[len(got)-1]+"." {
				continue
			}
			got = append(got, c)
		}
		if d := testdiff.Text(tt.want+"\n", strings.Join(got, "\n")+"\n"); d != "" {
			t.Errorf("%s<TAB>:\n%s", tt.line, d)
		}
	}
}

// TestCompletionZsh checks that the zsh script parses. Running one of zsh's
// completion widgets needs a pseudo-terminal (zpty), which this test does
// without: the script asks `dlq __complete` as TestCompleteDemo does.
func TestCompletionZsh(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("no zsh")
	}
	stdout, _, _ := runDLQ(t, "completion", "zsh")
	c := exec.Command("zsh", "-n", "-f")
	c.Stdin = strings.NewReader(stdout)
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
}
