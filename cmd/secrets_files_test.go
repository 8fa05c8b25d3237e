package cmd

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

// TestNoSecretInAnyFileDlqWrites: a password (one with an @, a : and a %,
// which redaction used to cut short) given in --broker and --to reaches no
// file that dlq writes: the archive of export and of discard (header and
// records), the audit log, the redrive journal and the debug log.
func TestNoSecretInAnyFileDlqWrites(t *testing.T) {
	env := brokertest.RabbitMQ(t)
	r := newRIRabbit(t)
	admin := env.User(t, "secret", "administrator", ".*", ".*", ".*")
	const pw = "Kx9@Zq7:Le%ak"
	u, _, _ := strings.Cut(strings.TrimPrefix(admin, "amqp://"), ":")
	mgmt(t, "PUT", "/users/"+u, map[string]string{"password": pw, "tags": "administrator"})
	// The @ stays raw, as url.Parse (and so amqp091) accepts it.
	url := "amqp://" + u + ":" + strings.ReplaceAll(strings.ReplaceAll(pw, "%", "%25"), ":", "%3A") + "@" + strings.SplitN(admin, "@", 2)[1]

	dir := t.TempDir()
	t.Setenv("DLQ_DEBUG_LOG", filepath.Join(dir, "debug.log"))
	t.Setenv("DLQ_AUDIT_LOG", filepath.Join(dir, "audit.jsonl"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	src := r.queue(brokertest.Name(t, "src"), nil)
	dst := r.queue(brokertest.Name(t, "dst"), nil)
	for i := range 5 {
		r.publish("", src, amqp.Publishing{MessageId: fmt.Sprint("m", i), Body: []byte("x")})
	}
	r.waitDepth(src, 5)
	base := []string{"--broker", url, "--management-url", env.MgmtURL}
	for _, args := range [][]string{
		{"export", src, "--to", "file://" + filepath.Join(dir, "export.jsonl.gz")},
		{"redrive", src, "--to", "queue:" + dst, "--yes", "--limit", "2"},
		{"redrive", dst, "--to", url + "#queue:" + src, "--yes"},
		{"discard", src, "--yes", "--limit", "1", "--archive-to", filepath.Join(dir, "discard.jsonl")},
		{"redrive", "journals", "-o", "json"},
	} {
		if _, stderr, code := runDLQ(t, append(base, args...)...); code != ExitOK && code != ExitError {
			t.Fatalf("dlq %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	var files int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		text := string(b)
		if strings.HasSuffix(path, ".gz") {
			text = gunzipText(t, b)
		}
		for _, leak := range []string{pw, "Zq7", "Le%ak", "Le%25ak", "Zq7%3ALe"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds %q", strings.TrimPrefix(path, dir), leak)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Errorf("only %d files were written under %s: the runs did not write what the test checks", files, dir)
	}
}

func gunzipText(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
