package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/redrive"
)

// leakTo is a --to whose password holds @, as url.Parse accepts it.
const (
	leakTo   = "amqp://ops:Kx9@Zq7Leak@rabbit-b:5672/shop#queue:orders"
	leakPart = "Zq7Leak"
)

// The audit record's command line and destination hide the whole password,
// up to the last @.
func TestAuditHidesPasswordWithAt(t *testing.T) {
	ios, _, _, _ := Test()
	f := &Factory{IO: ios, Options: &GlobalOptions{AuditLog: filepath.Join(t.TempDir(), "a.jsonl")},
		Now: time.Now, Args: []string{"redrive", "orders.dlq", "--to", leakTo, "--broker=amqp://u:Kx9@Zq7Leak@host/", "--yes"}}
	if err := f.Audit(AuditRecord{Action: "redrive", Broker: "amqp://u:Kx9@Zq7Leak@host/", Destination: leakTo, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	var rec AuditRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	for field, got := range map[string]string{"command": rec.Command, "destination": rec.Destination, "broker": rec.Broker} {
		if strings.Contains(got, leakPart) || strings.Contains(got, "Kx9") {
			t.Errorf("audit %s holds the password: %q", field, got)
		}
	}
	if want := "dlq redrive orders.dlq --to amqp://ops:xxxxx@rabbit-b:5672/shop#queue:orders --broker=amqp://u:xxxxx@host/ --yes"; rec.Command != want {
		t.Errorf("command\n got %q\nwant %q", rec.Command, want)
	}
}

// redriveTo runs a redrive of the fake's 3 messages with --to to, the
// destination on the fake itself; it returns what OpenDestination was
// given and stdout.
func redriveTo(t *testing.T, f *Factory, b *moveFake, o *redriveOptions) (opened string, err error) {
	t.Helper()
	f.OpenDestination = func(ctx context.Context, ref string) (broker.Broker, string, error) {
		opened = ref
		_, dest, _ := strings.Cut(ref, "#")
		return nil, dest, nil
	}
	o.f = f
	if o.changed == nil {
		o.changed = func(string) bool { return false }
	}
	if err := o.validate(); err != nil {
		return "", err
	}
	return opened, redriveRun(context.Background(), o)
}

// A redrive with a password in --to leaves none in its journal, in its
// -o json summary, or in `dlq redrive journals -o json`.
func TestRedriveJournalHoldsNoPassword(t *testing.T) {
	b := &moveFake{dlq: fakeDead(3)}
	f, outs := moveFactory(t, b, false)
	f.Args = []string{"redrive", "orders.dlq", "--to", leakTo, "-o", "json"}
	opened, err := redriveTo(t, f, b, &redriveOptions{Source: "orders.dlq", To: leakTo, format: OutputJSON})
	if err != nil {
		t.Fatal(err)
	}
	if opened != leakTo {
		t.Errorf("opened %q, want the --to as given", opened)
	}
	if len(b.dest) != 3 {
		t.Fatalf("moved %d of 3", len(b.dest))
	}
	files, _ := filepath.Glob(filepath.Join(redrive.JournalDir(), "*.journal"))
	if len(files) != 1 {
		t.Fatalf("journals %v, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := os.ReadFile(f.AuditPath())
	stdout, stderr := outs()
	o := &redriveJournalsOptions{f: f, format: OutputJSON}
	if err := redriveJournalsRun(o); err != nil {
		t.Fatal(err)
	}
	list, _ := outs()
	list = strings.TrimPrefix(list, stdout)
	for what, text := range map[string]string{"journal": string(data), "summary": stdout, "stderr": stderr, "audit log": string(audit), "journals -o json": list} {
		if strings.Contains(text, leakPart) || strings.Contains(text, "Kx9") {
			t.Errorf("%s holds the password:\n%s", what, text)
		}
	}
	if !strings.Contains(list, `"to": "amqp://ops:xxxxx@rabbit-b:5672/shop#queue:orders"`) {
		t.Errorf("journals -o json does not show the redacted --to:\n%s", list)
	}
}

// An interrupted journal that an earlier version wrote with the password
// in its plan is scrubbed when it is read, and --resume takes the password
// from this run: the broker URL given now, else DLQ_PASSWORD, else it
// fails saying how to give it.
func TestRedriveResumeTakesPasswordFromThisRun(t *testing.T) {
	for _, tc := range []struct {
		name, broker, env string
		wantOpened        string
		wantErr           string
	}{
		{name: "none", wantErr: "pass `--to` again with the password, set DLQ_PASSWORD, or name the broker by a context"},
		{name: "--broker", broker: "amqp://ops:Kx9@Zq7Leak@rabbit-b:5672/shop", wantOpened: leakTo},
		{name: "other --broker", broker: "amqp://ops:other@rabbit-c:5672/shop", wantErr: "pass `--to` again"},
		{name: "DLQ_PASSWORD", env: "from-env", wantOpened: "amqp://ops@rabbit-b:5672/shop#queue:orders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &moveFake{dlq: fakeDead(3)}
			f, _ := moveFactory(t, b, false)
			f.Options.Broker = tc.broker
			if tc.env != "" {
				t.Setenv("DLQ_PASSWORD", tc.env)
			}
			dir := redrive.JournalDir()
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			key := redrive.JournalKey(b.String(), "orders.dlq")
			path := filepath.Join(dir, key+"-00000000000000aa.journal")
			old := `H {"v":1,"run_id":"00000000000000aa","key":"` + key + `","started":"2026-11-01T10:00:00Z","broker":"amqp://ops@fake:5672/","source":"orders.dlq","destination":"amqp://ops:xxxxx@Zq7Leak@rabbit-b:5672/shop#queue:orders","plan":{"to":"` + leakTo + `"},"pid":4242}` + "\nP m00\n"
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			opened, err := redriveTo(t, f, b, &redriveOptions{Source: "orders.dlq", Resume: true})
			data, _ := os.ReadFile(path)
			if strings.Contains(string(data), leakPart) {
				t.Errorf("the old journal still holds the password:\n%s", data)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), leakPart) {
					t.Errorf("error is not one line without the password: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opened != tc.wantOpened {
				t.Errorf("opened --to\n got %q\nwant %q", broker.Redact(opened), broker.Redact(tc.wantOpened))
				if opened != leakTo && tc.wantOpened == leakTo {
					t.Errorf("the password of --broker was not used")
				}
			}
		})
	}
}
