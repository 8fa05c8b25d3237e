package ship

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// repoRoot is the module's root directory, two levels above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apache2SHA256 is the hash of the Apache License 2.0 as the Apache
// Software Foundation publishes it (LICENSE-2.0.txt, 202 lines).
const apache2SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

func TestLicenceIsApache2(t *testing.T) {
	sum := sha256.Sum256([]byte(readFile(t, "LICENSE")))
	if got := hex.EncodeToString(sum[:]); got != apache2SHA256 {
		t.Errorf("LICENSE sha256 = %s, want %s (the unmodified Apache License 2.0 text)", got, apache2SHA256)
	}
}

func TestReadmeNamesLicence(t *testing.T) {
	readme := readFile(t, "README.md")
	for _, want := range []string{"Apache License 2.0", "(LICENSE)"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not contain %q", want)
		}
	}
}

// goreleaser is the part of .goreleaser.yaml these tests read.
type goreleaser struct {
	Version int `yaml:"version"`
	Before  struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		Files []yaml.Node `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
	} `yaml:"checksum"`
}

func readGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	var g goreleaser
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, ".goreleaser.yaml")))
	if err := dec.Decode(&g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return g
}

func TestGoreleaserConfig(t *testing.T) {
	g := readGoreleaser(t)
	if g.Version != 2 {
		t.Errorf("version %d, want 2", g.Version)
	}
	if len(g.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(g.Builds))
	}
	b := g.Builds[0]
	if b.Main != "./cmd/dlq" || b.Binary != "dlq" {
		t.Errorf("build main %q binary %q", b.Main, b.Binary)
	}
	targets := func(list []string) string { s := slices.Clone(list); slices.Sort(s); return strings.Join(s, ",") }
	if got := targets(b.Goos); got != "darwin,linux,windows" {
		t.Errorf("goos %s, want darwin,linux,windows", got)
	}
	if got := targets(b.Goarch); got != "amd64,arm64" {
		t.Errorf("goarch %s, want amd64,arm64", got)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("env %q: cross builds need CGO_ENABLED=0", b.Env)
	}
	ld := strings.Join(b.Ldflags, " ")
	for _, v := range []string{"version", "commit", "date"} {
		if !strings.Contains(ld, "-X github.com/dlq-tools/dlq/cmd."+v+"=") {
			t.Errorf("ldflags do not set cmd.%s: %s", v, ld)
		}
	}
	if g.Checksum.NameTemplate == "" {
		t.Error("no checksum file")
	}

	hooks := strings.Join(g.Before.Hooks, "\n")
	for _, want := range []string{"completion \"$s\"", "for s in bash zsh fish", "make docs"} {
		if !strings.Contains(hooks, want) {
			t.Errorf("before hooks lack %q:\n%s", want, hooks)
		}
	}
	if len(g.Archives) != 1 {
		t.Fatalf("%d archives, want 1", len(g.Archives))
	}
	var srcs []string
	for _, n := range g.Archives[0].Files {
		switch n.Kind {
		case yaml.ScalarNode:
			srcs = append(srcs, n.Value)
		case yaml.MappingNode:
			var f struct{ Src string }
			if err := n.Decode(&f); err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, f.Src)
		}
	}
	for _, want := range []string{"README.md", "LICENSE", "completions/*", "docs/man/*.1"} {
		if !slices.Contains(srcs, want) {
			t.Errorf("archives do not hold %s: %q", want, srcs)
		}
	}
}

func TestMakefileAndCI(t *testing.T) {
	mk := readFile(t, "Makefile")
	for _, target := range []string{"release-snapshot:", "release-check:", "docs:", "github.com/goreleaser/goreleaser/v2@v2.15.1"} {
		if !strings.Contains(mk, target) {
			t.Errorf("Makefile lacks %q", target)
		}
	}
	if ci := readFile(t, ".ci/run"); !strings.Contains(ci, "make release-check") {
		t.Error(".ci/run does not run `make release-check`")
	}
}

// TestReleaseLdflags builds dlq with the release's -X flags (templates
// filled in) and checks that `dlq version` reports them: the variable
// names in .goreleaser.yaml are the ones cmd/version.go reads.
func TestReleaseLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dlq")
	}
	g := readGoreleaser(t)
	fill := strings.NewReplacer("{{ .Version }}", "9.8.7", "{{ .FullCommit }}", "0123456789abcdef0123456789abcdef01234567", "{{ .CommitDate }}", "2026-05-01T10:00:00Z")
	var flags []string
	for _, f := range g.Builds[0].Ldflags {
		if f = fill.Replace(f); strings.Contains(f, "{{") {
			t.Fatalf("ldflag %q has a template this test does not fill", f)
		}
		flags = append(flags, f)
	}
	bin := filepath.Join(t.TempDir(), "dlq")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", strings.Join(flags, " "), "-o", bin, "./cmd/dlq")
	build.Dir = repoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--jq", `"\(.version) \(.commit) \(.date)"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "9.8.7 0123456789abcdef0123456789abcdef01234567 2026-05-01T10:00:00Z\n"; got != want {
		t.Errorf("dlq version: got %q, want %q", got, want)
	}
}
