package ship

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
