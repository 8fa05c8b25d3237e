package cmd

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestInitIsCheap keeps dlq's own package initialisation small, so that
// `dlq --help` and `dlq version` start at once: regexps, schemas and other
// tables are built on first use (sync.OnceValue), not when dlq starts. It
// runs this test binary as dlq with GODEBUG=inittrace=1, which reports
// each package's init allocations (deterministic, unlike its time).
func TestInitIsCheap(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self, "version")
	c.Env = append(os.Environ(), "DLQ_TEST_RUN_MAIN=1", "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^init (github\.com/dlq-tools/dlq/\S+) @.*, (\d+) bytes, (\d+) allocs$`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		found++
		pkg := m[1]
		bytes, _ := strconv.Atoi(m[2])
		limit := 4 << 10
		if pkg == "github.com/dlq-tools/dlq/cmd" {
			limit = 16 << 10 // in this binary, cmd's init includes its tests' variables
		}
		if bytes > limit {
			t.Errorf("init of %s allocates %d bytes (%s allocs), more than %d: build it on first use (sync.OnceValue)", pkg, bytes, m[3], limit)
		}
	}
	if found < 5 {
		t.Fatalf("inittrace reported %d dlq packages:\n%s", found, out)
	}
}
