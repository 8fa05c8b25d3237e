package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/redrive"
)

func TestShowOneMessageInFull(t *testing.T) {
	stdout, stderr, code := runDLQ(t, "--broker", "demo:", "peek", "orders.dlq", "--limit", "1", "-o", "json")
	var docs []map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &docs) != nil || len(docs) != 1 {
		t.Fatalf("peek: exit %d %s", code, stderr)
	}
	id := docs[0]["id"].(string)
	stdout, stderr, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", id)
	if code != ExitOK {
		t.Fatalf("show: exit %d %s", code, stderr)
	}
	for _, want := range []string{"id:          " + id, "\nheaders:\n", "  x-exception-message: ", "\ndeath history (newest first):\n  rejected in orders.q", "\nbody (json):\n{\n", `"order_id": `} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show output lacks %q", want)
		}
	}
	stdout, _, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", id, "-o", "json")
	var doc map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || doc["id"] != id {
		t.Errorf("show -o json: exit %d, id %v", code, doc["id"])
	}
	_, stderr, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", "no-such-id")
	if code != ExitError || !strings.Contains(stderr, "no message with ID `no-such-id` among 150 read") {
		t.Errorf("unknown ID: exit %d %s", code, stderr)
	}
}

// A queue that does not exist is named with the nearest queue names.
func TestQueueNotFoundSuggests(t *testing.T) {
	for _, args := range [][]string{
		{"peek", "ordrs.dlq"},
		{"stats", "ordrs.dlq"},
		{"show", "ordrs.dlq", "x"},
	} {
		_, stderr, code := runDLQ(t, append([]string{"--broker", "demo:"}, args...)...)
		if code != ExitError || !strings.Contains(stderr, "did you mean `orders.dlq`?") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	_, stderr, _ := runDLQ(t, "--broker", "demo:", "peek", "zzzz")
	if strings.Contains(stderr, "did you mean") {
		t.Errorf("nothing near zzzz, yet: %q", stderr)
	}
}

// --older-than and --newer-than split a queue on peek, stats and export,
// archives included, and --since on an archive is --newer-than.
func TestTimeWindowsOnEveryInspectCommand(t *testing.T) {
	total := func(args ...string) int {
		t.Helper()
		stdout, stderr, code := runDLQ(t, append([]string{"--broker", "demo:", "-o", "json"}, args...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		if args[0] == "peek" {
			var docs []map[string]any
			if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			return len(docs)
		}
		var res struct {
			Total    int `json:"total"`
			Exported int `json:"exported"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return res.Total + res.Exported
	}
	old, recent := total("stats", "orders.dlq", "--older-than", "6h"), total("stats", "orders.dlq", "--newer-than", "6h")
	if old == 0 || recent == 0 || old+recent != 150 {
		t.Fatalf("stats: older-than 6h %d + newer-than 6h %d, want both > 0 and 150 in all", old, recent)
	}
	if got := total("stats", "orders.dlq", "--since", "6h"); got != recent {
		t.Errorf("stats --since 6h on an archive: %d, want %d (as --newer-than 6h)", got, recent)
	}
	if got := total("peek", "orders.dlq", "--older-than", "6h", "--limit", "0"); got != old {
		t.Errorf("peek --older-than 6h: %d, want %d", got, old)
	}
	if got := total("export", "orders.dlq", "--newer-than", "6h", "--to", "file://"+t.TempDir()+"/x.jsonl"); got != recent {
		t.Errorf("export --newer-than 6h: %d, want %d", got, recent)
	}
}

// Styled headers do not push columns apart, and a terminal's table is cut
// to its width.
func TestTableAlignsStyledHeadersAndFitsTheTerminal(t *testing.T) {
	tb := NewTable("REASON", "COUNT", "EXAMPLES")
	tb.Row("rejected", 12, strings.Repeat("6400749a-e48d-448b-8e67-c8cab29a1f63 ", 5))
	tb.Row("expired", 3, "x")
	tb.Width = 60
	var b strings.Builder
	if err := tb.Render(&b, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	plain := func(s string) string { return strings.NewReplacer("\x1b[1m", "", "\x1b[0m", "").Replace(s) }
	if h, r := strings.Index(plain(lines[0]), "COUNT"), strings.Index(lines[1], "12"); h != r {
		t.Errorf("COUNT header at column %d, its values at %d:\n%s\n%s", h, r, plain(lines[0]), lines[1])
	}
	for _, l := range lines {
		if n := len([]rune(plain(l))); n > 60 {
			t.Errorf("line of %d columns on a 60-column terminal: %q", n, plain(l))
		}
	}
}

// dlq audit filters by broker, queue and command.
func TestAuditFilters(t *testing.T) {
	log := filepath.Join(t.TempDir(), "a.jsonl")
	ios, _, _, _ := Test()
	f := &Factory{IO: ios, Options: &GlobalOptions{AuditLog: log}, Now: time.Now}
	for _, r := range []AuditRecord{
		{Action: "redrive", Broker: "amqp://ops@rabbit-a:5672/", Source: "orders.dlq", Destination: "origin", Outcome: "ok"},
		{Action: "discard", Broker: "amqp://ops@rabbit-a:5672/", Source: "payments.dlq", Outcome: "ok"},
		{Action: "tui-redrive", Broker: "amqp://ops@rabbit-b:5672/", Source: "orders.dlq", Outcome: "ok"},
		{Action: "redrive", Broker: "amqp://ops@rabbit-b:5672/", Source: "billing-dlq", Destination: "queue:orders.dlq", Outcome: "ok"},
	} {
		if err := f.Audit(r); err != nil {
			t.Fatal(err)
		}
	}
	count := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runDLQ(t, append([]string{"--audit-log", log, "-o", "json", "audit"}, args...)...)
		var recs []AuditRecord
		if code != ExitOK || json.Unmarshal([]byte(stdout), &recs) != nil {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Action+"@"+r.Source)
		}
		return strings.Join(got, " ")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queue", "orders.dlq"}, "redrive@orders.dlq tui-redrive@orders.dlq redrive@billing-dlq"},
		{[]string{"--command", "redrive"}, "redrive@orders.dlq redrive@billing-dlq"},
		{[]string{"--command", "tui-"}, "tui-redrive@orders.dlq"},
		{[]string{"--broker", "amqp://ops@rabbit-a:5672/"}, "redrive@orders.dlq discard@payments.dlq"},
		{[]string{"--broker", "amqp://ops@rabbit-b:5672/", "--queue", "orders.dlq", "--command", "redrive"}, "redrive@billing-dlq"},
	} {
		if got := count(tc.args...); got != tc.want {
			t.Errorf("audit %v:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

// dlq redrive journals lists the journals and --prune removes the
// finished ones.
func TestRedriveJournals(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := redrive.JournalDir()
	// A journal with a header and no end line: an interrupted run.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k-1.journal"), []byte(`H {"v":1,"run_id":"1","key":"k","source":"orders.dlq","destination":"origin"}`+"\nP m1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runDLQ(t, "redrive", "journals", "-o", "json")
	var js []redrive.JournalInfo
	if code != ExitOK || json.Unmarshal([]byte(stdout), &js) != nil || len(js) != 1 || js[0].State != redrive.JournalInterrupted || js[0].Header.Source != "orders.dlq" {
		t.Fatalf("journals: exit %d %s %s", code, stdout, stderr)
	}
	_, stderr, code = runDLQ(t, "redrive", "journals", "--prune")
	if code != ExitOK || !strings.Contains(stderr, "removed 0 finished journals") {
		t.Fatalf("prune: exit %d %s", code, stderr)
	}
}

// frameworksArchive holds one dead letter of each framework and AWS service
// dlq decodes (the wire formats of inspect's TestFailureOf).
const frameworksArchive = "../inspect/testdata/frameworks.jsonl"

func TestShowFailureRecord(t *testing.T) {
	broker := "file://" + frameworksArchive
	stdout, stderr, code := runDLQ(t, "--broker", broker, "show", "mixed.dlq", "spring-1")
	if code != ExitOK {
		t.Fatalf("show: exit %d %s", code, stderr)
	}
	for _, want := range []string{
		"reason:      java.lang.IllegalStateException: price missing for sku 42\n",
		"\nfailure (spring):\n  exception type: java.lang.IllegalStateException\n  message:        price missing for sku 42\n  origin:         exchange:shop:order.created (from x-original-exchange)\n",
		"    Caused by: java.lang.IllegalStateException: price missing for sku 42\n        at com.example.Orders.handle(Orders.java:17)\n    … 1 lines\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, _ = runDLQ(t, "--broker", broker, "show", "mixed.dlq", "sns-1")
	for _, want := range []string{"\nenvelope (sns, the body below is the payload inside it):\n  MessageId: m\n", "\nbody (json):\n{\n  \"orderId\": 9\n}\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = runDLQ(t, "--broker", broker, "peek", "mixed.dlq", "--filter", `.failure.exception_type == "CarrierError"`, "-o", "jsonl")
	var doc map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || doc["id"] != "lambda-1" {
		t.Errorf("peek --filter .failure.exception_type: exit %d %s %s", code, stdout, stderr)
	}
	stdout, stderr, code = runDLQ(t, "--broker", broker, "stats", "mixed.dlq", "--group-by", "framework", "-o", "csv")
	for _, want := range []string{"dramatiq,", "eventbridge,", "lambda,", "laravel,", "masstransit,", "nservicebus,", "shoryuken,", "sns,", "spring,"} {
		if code != ExitOK || !strings.Contains(stdout, "\n"+want) {
			t.Errorf("stats --group-by framework lacks %q: exit %d %s %s", want, code, stdout, stderr)
		}
	}
}
