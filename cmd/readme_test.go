package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

func readme(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeStartsWithAQuickStart: the first section after the opening
// lines is the quick start, with the demo, a RabbitMQ and an SQS incident
// and a scripted redrive; the reference lives in docs/, linked from the
// README, and the README stays a first page.
func TestReadmeStartsWithAQuickStart(t *testing.T) {
	text := readme(t)
	var sections []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
			sections = append(sections, l)
		}
	}
	want := []string{"## Quick start", "### The demo: no broker needed", "### A first incident on RabbitMQ", "### A first incident on SQS", "### A scripted redrive"}
	if len(sections) < len(want) || strings.Join(sections[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("the README's first sections:\n%s", testdiff.Lines(want, sections[:min(len(sections), len(want))]))
	}
	if n := strings.Count(text, "\n"); n > 200 {
		t.Errorf("README.md has %d lines: the reference belongs in docs/", n)
	}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(text, -1) {
		_, file, _, _ := runtime.Caller(0)
		if _, err := os.Stat(filepath.Join(filepath.Dir(file), "..", m[1])); err != nil {
			t.Errorf("README.md links to %s: %v", m[1], err)
		}
	}
	for _, doc := range []string{"docs/guide.md", "docs/development.md"} {
		if !strings.Contains(text, "("+doc) {
			t.Errorf("README.md does not link to %s", doc)
		}
	}
}

// TestReadmeDemoCommands runs every README command that names the demo
// broker, and the scripted redrive as a job would run it.
func TestReadmeDemoCommands(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ran := 0
	for _, b := range fencedBlocks(t, "README.md") {
		if b.lang != "sh" {
			continue
		}
		scripted := strings.Contains(b.text, "--yes")
		var lines []string
		for _, l := range strings.Split(b.text, "\n") {
			if strings.Contains(l, "--broker demo:") && !strings.Contains(l, "dlq tui") {
				lines = append(lines, l)
			}
		}
		if scripted {
			if _, err := exec.LookPath("jq"); err != nil {
				t.Skip("no jq")
			}
			lines = []string{b.text}
		}
		for _, l := range lines {
			ran++
			dir, env := recipeEnv(t)
			c := exec.Command("bash", "-e", "-c", l)
			c.Dir, c.Env = dir, env
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Run(); err != nil {
				t.Errorf("README.md:%d: %s: %v\n%s", b.line, l, err, out.String())
			}
		}
	}
	if ran < 6 {
		t.Errorf("ran %d README commands on the demo broker, want at least 6", ran)
	}
}
