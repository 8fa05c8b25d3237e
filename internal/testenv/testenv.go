// Package testenv makes a test binary hermetic: nothing of the person who
// runs the tests, nor of the machine, reaches dlq's tests unless a test sets
// it. Every test package's TestMain calls Main (or Setup).
//
// What it replaces:
//   - HOME and the XDG folders (config, state, cache, data, runtime): fresh,
//     empty folders, so no config file, context, audit log, journal,
//     ~/.aws or ~/.tmux.conf is read;
//   - every DLQ_* variable but the test servers' own (DLQ_TEST_*,
//     DLQ_FAULT_*, DLQ_TLS_*, DLQ_CLUSTER_*), which `make test` sets;
//   - every AWS_* variable: the SDK gets fixed test credentials and region,
//     and config and credentials files that do not exist, so AWS_PROFILE or
//     a default region in ~/.aws/config never applies;
//   - EDITOR, VISUAL, NO_COLOR, COLORTERM, CLICOLOR*, DEBUG, PAGER, COLUMNS,
//     LINES and TMUX*: unset;
//   - TERM=xterm and LANG=C.UTF-8, with LC_* and LANGUAGE unset.
//
// The Go toolchain keeps its caches: GOCACHE, GOMODCACHE, GOPATH and GOENV
// are pinned to where they were before HOME moved, so that a test that runs
// `go build` does not build everything again.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ServerPrefixes are the DLQ_ variables that describe the test servers
// (scripts/brokers env): a test binary keeps them.
var ServerPrefixes = []string{"DLQ_TEST_", "DLQ_FAULT_", "DLQ_TLS_", "DLQ_CLUSTER_"}

// AWS is what the SDK sees in every test: credentials that no account has
// and a region; endpoints come from the tests (emulators on loopback).
var AWS = map[string]string{
	"AWS_ACCESS_KEY_ID":         "test",
	"AWS_SECRET_ACCESS_KEY":     "test",
	"AWS_REGION":                "us-east-1",
	"AWS_EC2_METADATA_DISABLED": "true",
}

var unset = []string{"EDITOR", "VISUAL", "NO_COLOR", "COLORTERM", "CLICOLOR", "CLICOLOR_FORCE", "DEBUG",
	"PAGER", "COLUMNS", "LINES", "TMUX", "TMUX_PANE", "LANGUAGE"}

// Main runs the package's tests in a hermetic environment and exits with
// their code.
func Main(m *testing.M) {
	dir, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Setup makes the process environment hermetic and returns the folder that
// holds the new HOME and XDG folders (the caller removes it).
func Setup() (string, error) {
	pinGo()
	dir, err := os.MkdirTemp("", "dlq-test-env-")
	if err != nil {
		return "", err
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "DLQ_") && !isServerVar(k),
			strings.HasPrefix(k, "AWS_"),
			strings.HasPrefix(k, "LC_"):
			os.Unsetenv(k)
		}
	}
	for _, k := range unset {
		os.Unsetenv(k)
	}
	set := map[string]string{
		"HOME":                        filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME":             filepath.Join(dir, "config"),
		"XDG_STATE_HOME":              filepath.Join(dir, "state"),
		"XDG_CACHE_HOME":              filepath.Join(dir, "cache"),
		"XDG_DATA_HOME":               filepath.Join(dir, "data"),
		"XDG_RUNTIME_DIR":             filepath.Join(dir, "runtime"),
		"AWS_CONFIG_FILE":             filepath.Join(dir, "home", ".aws", "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "home", ".aws", "credentials"),
		"TERM":                        "xterm",
		"LANG":                        "C.UTF-8",
	}
	for k, v := range AWS {
		set[k] = v
	}
	for k, v := range set {
		os.Setenv(k, v)
	}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"} {
		if err := os.MkdirAll(set[k], 0o700); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func isServerVar(k string) bool {
	for _, p := range ServerPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// pinGo sets the Go toolchain's folders to where they are now, unless set.
func pinGo() {
	home, _ := os.UserHomeDir()
	if os.Getenv("GOPATH") == "" && home != "" {
		os.Setenv("GOPATH", filepath.Join(home, "go"))
	}
	if os.Getenv("GOMODCACHE") == "" && os.Getenv("GOPATH") != "" {
		os.Setenv("GOMODCACHE", filepath.Join(filepath.SplitList(os.Getenv("GOPATH"))[0], "pkg", "mod"))
	}
	if os.Getenv("GOCACHE") == "" {
		if c, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(c, "go-build"))
		}
	}
	if os.Getenv("GOENV") == "" {
		if c, err := os.UserConfigDir(); err == nil {
			os.Setenv("GOENV", filepath.Join(c, "go", "env"))
		}
	}
}
