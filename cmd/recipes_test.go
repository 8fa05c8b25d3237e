package cmd

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// A recipe block is a fenced block of docs/recipes.md.
type recipeBlock struct {
	lang, text string
	line       int // of the opening fence
}

func recipeBlocks(t *testing.T) []recipeBlock {
	t.Helper()
	return fencedBlocks(t, "docs/recipes.md")
}

// fencedBlocks are the fenced blocks of a markdown file of the repository.
func fencedBlocks(t *testing.T, name string) []recipeBlock {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []recipeBlock
	var cur *recipeBlock
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &recipeBlock{lang: strings.TrimPrefix(l, "```"), line: i + 1}
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: fence not closed", name, cur.line)
	}
	return blocks
}

var dlqCall = regexp.MustCompile(`(?:^|[\s;|&(])dlq\s+([^|;&>\n]*)`)

// shellWords splits a dlq command line roughly as a shell would, for
// parsing: quotes are removed, array expansions ("${a[@]}") dropped, and
// other expansions replaced by a placeholder word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	flush := func() {
		if in {
			w := cur.String()
			switch {
			case strings.Contains(w, "[@]}"):
			case strings.Contains(w, "$"):
				words = append(words, "x")
			default:
				words = append(words, w)
			}
		}
		cur.Reset()
		in = false
	}
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			flush()
			return words
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return words
}

// TestRecipesParse: every dlq command line of the recipes names a command
// and flags that exist, with the arguments the command takes.
func TestRecipesParse(t *testing.T) {
	n := 0
	for _, b := range recipeBlocks(t) {
		for _, m := range dlqCall.FindAllStringSubmatch(b.text, -1) {
			args := shellWords(m[1])
			if len(args) == 0 {
				continue
			}
			n++
			ios, _, _, _ := Test()
			root := NewRootCmd(NewFactory(ios, nil))
			root.InitDefaultCompletionCmd()
			c, rest, err := root.Find(args)
			if err != nil || c == root {
				t.Errorf("docs/recipes.md:%d: `dlq %s`: no such command", b.line, m[1])
				continue
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Errorf("docs/recipes.md:%d: `dlq %s`: %v", b.line, m[1], err)
				continue
			}
			if err := c.ValidateArgs(c.Flags().Args()); err != nil {
				t.Errorf("docs/recipes.md:%d: `dlq %s`: %v", b.line, m[1], err)
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d dlq command lines in docs/recipes.md: the extraction is broken", n)
	}
}

// recipeEnv is a directory to run recipes in, with dlq (this test binary)
// on PATH, a config file whose contexts prod-rabbit and prod-oncall
// (read-only, current) are copies of the demo archive, and its own audit
// log.
func recipeEnv(t *testing.T) (dir string, env []string) {
	t.Helper()
	dlqOnPath(t)
	dir = t.TempDir()
	for _, name := range []string{"prod.jsonl", "oncall.jsonl"} {
		if _, stderr, code := runDLQ(t, "export", "demo:", "--to", "file://"+filepath.Join(dir, name)); code != ExitOK {
			t.Fatalf("copy the demo archive: %s", stderr)
		}
	}
	cfgHome, state := filepath.Join(dir, ".config"), filepath.Join(dir, ".state")
	cfg := "current-context: prod-oncall\ncontexts:\n" +
		"  prod-rabbit: {broker: 'file://" + filepath.Join(dir, "prod.jsonl") + "'}\n" +
		"  prod-oncall: {broker: 'file://" + filepath.Join(dir, "oncall.jsonl") + "', read_only: true}\n"
	if err := os.MkdirAll(filepath.Join(cfgHome, "dlq"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "dlq", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), "XDG_CONFIG_HOME="+cfgHome, "XDG_STATE_HOME="+state, "TEXTFILE_DIR="+dir)
	return dir, env
}

// TestRecipesShell runs each sh block in bash against copies of the demo
// archive.
func TestRecipesShell(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ran := 0
	for _, b := range recipeBlocks(t) {
		if b.lang != "sh" {
			continue
		}
		ran++
		dir, env := recipeEnv(t)
		c := exec.Command("bash", "-c", b.text)
		c.Dir, c.Env = dir, env
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			t.Errorf("docs/recipes.md:%d: %v\n%s", b.line, err, out.String())
			continue
		}
		t.Logf("docs/recipes.md:%d:\n%s", b.line, out.String())
		switch {
		case strings.Contains(b.text, "-o prom"):
			for _, q := range []string{"orders.dlq", "payments.dlq"} {
				prom, err := os.ReadFile(filepath.Join(dir, "dlq-"+q+".prom"))
				if err != nil || !bytes.Contains(prom, []byte(`dlq_dead_letters{queue="`+q+`"`)) {
					t.Errorf("textfile for %s: %v\n%s", q, err, prom)
				}
			}
		case strings.Contains(b.text, "read-only"), strings.Contains(b.text, "current context"):
			if !strings.Contains(out.String(), "refused, as it should be (exit 4)") {
				t.Errorf("docs/recipes.md:%d: the read-only context did not refuse:\n%s", b.line, out.String())
			}
		case strings.Contains(b.text, "dlq purge"):
			evidence, _ := filepath.Glob(filepath.Join(dir, "orders-dlq-*.jsonl.gz"))
			purged, _ := filepath.Glob(filepath.Join(dir, "purged-orders-dlq-*.jsonl.gz"))
			if len(evidence) != 1 || len(purged) != 1 {
				t.Errorf("evidence %q, purged %q", evidence, purged)
			}
			if !strings.Contains(out.String(), " purge ") || !strings.Contains(out.String(), " ok") {
				t.Errorf("the audit log shows no purge:\n%s", out.String())
			}
		}
	}
	if ran != 3 {
		t.Errorf("ran %d sh blocks, want 3 (cron, on-call, evidence)", ran)
	}
}

// ciScripts finds the shell scripts of a CI job file: GitHub's steps' run
// and GitLab's script lists, with the job's environment.
type ciScript struct {
	script string
	env    map[string]string
	gitlab bool
}

func ciScripts(t *testing.T, text string) []ciScript {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	strs := func(m any) map[string]string {
		out := map[string]string{}
		mm, _ := m.(map[string]any)
		for k, v := range mm {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	var out []ciScript
	if jobs, ok := doc["jobs"].(map[string]any); ok {
		for _, j := range jobs {
			job, _ := j.(map[string]any)
			env := strs(job["env"])
			steps, _ := job["steps"].([]any)
			for _, s := range steps {
				step, _ := s.(map[string]any)
				if run, ok := step["run"].(string); ok && !strings.HasPrefix(run, "go install") {
					out = append(out, ciScript{script: run, env: env})
				}
			}
		}
		return out
	}
	for _, j := range doc {
		job, _ := j.(map[string]any)
		lines, _ := job["script"].([]any)
		var sb strings.Builder
		for _, l := range lines {
			sb.WriteString(l.(string) + "\n")
		}
		if sb.Len() > 0 {
			out = append(out, ciScript{script: sb.String(), env: strs(job["variables"]), gitlab: true})
		}
	}
	return out
}

// TestRecipesCI runs the CI jobs' scripts as the runners would (bash -e),
// against dead letters on the test RabbitMQ, with the broker and password
// in DLQ_BROKER and DLQ_PASSWORD as the recipes configure them.
func TestRecipesCI(t *testing.T) {
	var jobs []recipeBlock
	for _, b := range recipeBlocks(t) {
		if b.lang == "yaml" && (strings.Contains(b.text, "jobs:") || strings.Contains(b.text, "script:")) {
			ciScripts(t, b.text) // parses
			jobs = append(jobs, b)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("found %d CI jobs in docs/recipes.md, want 2 (GitHub, GitLab)", len(jobs))
	}
	rabbit := brokertest.RabbitMQ(t)
	r := newRIRabbit(t)
	dlqOnPath(t)
	u, err := url.Parse(rabbit.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(u.User.Username())

	for _, b := range jobs {
		for _, s := range ciScripts(t, b.text) {
			for _, dry := range []bool{true, false} {
				if s.gitlab && dry {
					continue
				}
				work, dlq := riDeadLetters(t, r, "classic", 3)
				// The test servers' management APIs are not at the default
				// address a job's broker would have.
				env := append(os.Environ(), "DLQ_BROKER="+u.String(), "DLQ_PASSWORD="+rabbit.Password, "DLQ_MANAGEMENT_URL="+rabbit.MgmtURL,
					"XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
				for k, v := range s.env {
					switch {
					case strings.Contains(v, "inputs.filter"):
						v = "true"
					case strings.Contains(v, "inputs.dry_run"):
						v = map[bool]string{true: "true", false: "false"}[dry]
					case strings.Contains(v, "${{"):
						continue // the broker and password, set above
					}
					env = append(env, k+"="+v)
				}
				dir := t.TempDir()
				c := exec.Command("bash", "-e", "-c", strings.ReplaceAll(s.script, "orders.dlq", dlq))
				c.Dir, c.Env = dir, env
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("docs/recipes.md:%d (dry run %v): %v\n%s", b.line, dry, err, out)
				}
				var sum struct {
					Moved  int64 `json:"moved"`
					DryRun bool  `json:"dry_run"`
				}
				js, _ := os.ReadFile(filepath.Join(dir, "redrive-summary.json"))
				if err := json.Unmarshal(js, &sum); err != nil {
					t.Fatalf("docs/recipes.md:%d: redrive-summary.json: %v\n%s", b.line, err, js)
				}
				wantDepth := 0
				if dry {
					wantDepth = 3
				}
				if sum.DryRun != dry || r.depth(dlq) != wantDepth || r.depth(work) != 3-wantDepth {
					t.Errorf("docs/recipes.md:%d (dry run %v): summary %s; %s holds %d, %s %d", b.line, dry, js, dlq, r.depth(dlq), work, r.depth(work))
				}
			}
		}
	}
}
