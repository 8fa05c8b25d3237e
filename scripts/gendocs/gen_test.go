package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// docsDir is the committed docs/ directory, two levels up.
const docsDir = "../../docs"

// TestDocsUpToDate fails when the committed man pages or markdown differ
// from what the command tree generates, naming each file and its diff.
func TestDocsUpToDate(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"man", "cli"} {
		committed, _ := filepath.Glob(filepath.Join(docsDir, sub, "*"))
		for _, p := range committed {
			if _, ok := files[filepath.Join(sub, filepath.Base(p))]; !ok {
				t.Errorf("docs/%s/%s documents no command any more: run `make docs`", sub, filepath.Base(p))
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		old, err := os.ReadFile(filepath.Join(docsDir, name))
		if err != nil {
			t.Errorf("docs/%s is missing: run `make docs`", name)
			continue
		}
		if !bytes.Equal(old, files[name]) {
			t.Errorf("docs/%s is stale: run `make docs`\n%s", name, udiff.Unified("docs/"+name, "generated", string(old), string(files[name])))
		}
	}
}

// TestDocsDeterministic: the environment and a second run change nothing.
func TestDocsDeterministic(t *testing.T) {
	a, err := render()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DLQ_CONTEXT", "someones-context")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b, err := render()
	if err != nil {
		t.Fatal(err)
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs:\n%s", name, udiff.Unified("first", "second", string(a[name]), string(b[name])))
		}
		if bytes.Contains(b[name], []byte("someones-context")) {
			t.Errorf("%s shows $DLQ_CONTEXT", name)
		}
	}
}

// TestManPages checks that each page has what a reader looks for, and that
// man renders it without a warning.
func TestManPages(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	r := root(false)
	for _, c := range documented(r) {
		name := filepath.Join("man", manName(c.CommandPath())+".1")
		page := string(files[name])
		want := []string{".SH NAME", ".SH DESCRIPTION", ".SH EXAMPLE", ".SH SEE ALSO"}
		if c.IsAdditionalHelpTopicCommand() {
			if s := `.SH SYNOPSIS` + "\n" + `\fBdlq help ` + c.Name() + `\fP`; !strings.Contains(page, s) {
				t.Errorf("%s: a help topic's synopsis is `dlq help %s`:\n%.300s", name, c.Name(), page)
			}
		} else {
			want = append(want, ".SH SYNOPSIS", ".SH EXIT STATUS", ".SH OPTIONS")
		}
		if c.Example == "" {
			want = slices.DeleteFunc(want, func(s string) bool { return s == ".SH EXAMPLE" })
		}
		for _, s := range want {
			if !strings.Contains(page, s+"\n") {
				t.Errorf("%s has no %s section", name, strings.TrimPrefix(s, ".SH "))
			}
		}
		if !strings.Contains(page, `.TH "`+strings.ToUpper(manName(c.CommandPath()))+`" "1" "" "dlq" "dlq Manual"`) {
			t.Errorf("%s: .TH line has a date or the wrong title:\n%.200s", name, page)
		}
	}
	redrive := string(files["man/dlq-redrive.1"])
	for _, s := range []string{`\fBdlq-redrive-safety(1)\fP`, `\fBdlq-exit-codes(1)\fP`, ".TP\n.B 3\npartly done", "dlq redrive orders.dlq --dry-run"} {
		if !strings.Contains(redrive, s) {
			t.Errorf("dlq-redrive.1 lacks %q", s)
		}
	}

	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("no man to render the pages with")
	}
	dir := t.TempDir()
	for name, content := range files {
		if !strings.HasPrefix(name, "man/") {
			continue
		}
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		c := exec.Command("man", "--warnings", "-l", p)
		c.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil || stderr.Len() > 0 || len(out) == 0 {
			t.Errorf("man %s: %v\n%s", name, err, stderr.String())
		}
	}
}
