package inspect

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

// groupsOf shapes and mines reasons, returning "template" per reason.
func groupsOf(reasons []string) []string {
	shapes := make([]string, len(reasons))
	for i, r := range reasons {
		shapes[i] = ShapeOf(r)
	}
	t := Mine(shapes)
	out := make([]string, len(reasons))
	for i, s := range shapes {
		out[i] = t[s]
	}
	return out
}

func TestShapeRealReasons(t *testing.T) {
	cases := append(append([]struct{ reason, template string }{}, realReasons...), mergedReasons...)
	if len(realReasons) < 50 {
		t.Fatalf("only %d real reasons: the table needs at least 50", len(realReasons))
	}
	var reasons, want []string
	for _, c := range cases {
		reasons = append(reasons, c.reason)
		want = append(want, c.template)
	}
	if d := testdiff.Lines(want, groupsOf(reasons)); d != "" {
		t.Errorf("groups differ:\n%s", d)
	}
	distinct := map[string]bool{}
	for _, w := range want[:len(realReasons)] {
		distinct[w] = true
	}
	// The 58 real reasons fall in far fewer groups.
	if n := len(distinct); n != 45 {
		t.Errorf("%d groups of %d real reasons, want 45", n, len(realReasons))
	}
}

func TestShapeValues(t *testing.T) {
	cases := []struct {
		in     string
		shape  string
		values []string
	}{
		{"Customer cus_9944 not found", "Customer <id> not found", []string{"cus_9944"}},
		{"order 42 of 1000 failed at 2024-05-01T12:03:44Z", "order <num> of <num> failed at <time>", []string{"42", "1000", "2024-05-01T12:03:44Z"}},
		{"id=7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b status=FAILED", "id=<uuid> status=<str>", []string{"7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b", "FAILED"}},
		{"commit deadbeef1234 pushed by ann@example.com from 192.168.1.20", "commit <hex> pushed by <email> from <ip>", []string{"deadbeef1234", "ann@example.com", "192.168.1.20"}},
		{"GET https://user:secret@api.example.com/v1/customers/cus_12/orders?page=3&sort=desc failed", "GET https://<user>@api.example.com/v1/customers/<id>/orders?page=<num>&sort=desc failed", []string{"cus_12", "3"}},
		{"retry in 250ms, then 1m30s", "retry in <time>, then <time>", []string{"250ms", "1m30s"}},
		{"lock held by 0x7f3a2c1b", "lock held by <hex>", []string{"0x7f3a2c1b"}},
		{`field "name" can't be empty`, `field "<str>" can't be empty`, []string{"name"}},
		{"connect [::1]:5672 refused", "connect [<ip>]:<num> refused", []string{"::1", "5672"}},
		{"  spaced \t out\n text ", "spaced out text", nil},
		{"utf-8 and base64 and sha256 stay words", "utf-8 and base64 and sha256 stay words", nil},
		{"SKU-7 and cus_0 are ids, UTF-16 is not", "<id> and <id> are ids, UTF-16 is not", []string{"SKU-7", "cus_0"}},
	}
	for _, c := range cases {
		sh, vals := Shape(c.in)
		if sh != c.shape {
			t.Errorf("Shape(%q):\n%s", c.in, testdiff.Lines([]string{c.shape}, []string{sh}))
		}
		if d := testdiff.Lines(c.values, vals); d != "" {
			t.Errorf("values of %q:\n%s", c.in, d)
		}
	}
}

// The shape's values never include a secret of a URL's userinfo.
func TestShapeHidesURLCredentials(t *testing.T) {
	sh, vals := Shape("dial amqp://admin:hunter2@10.0.0.1:5672/vhost failed")
	if strings.Contains(sh+strings.Join(vals, " "), "hunter2") {
		t.Fatalf("password in %q %q", sh, vals)
	}
}

// Groups depend on the set of reasons only: shuffled input and input split
// among workers (each mining its own part, the parts' shapes mined
// together) give the same templates.
func TestMineOrderIndependent(t *testing.T) {
	var reasons []string
	for _, c := range append(append([]struct{ reason, template string }{}, realReasons...), mergedReasons...) {
		reasons = append(reasons, c.reason)
	}
	want := map[string]string{}
	for i, g := range groupsOf(reasons) {
		want[reasons[i]] = g
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		shuffled := append([]string(nil), reasons...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// Workers: each shapes a slice; the union of shapes is mined.
		workers := 1 + trial%4
		var shapes []string
		for w := range workers {
			for i := w; i < len(shuffled); i += workers {
				shapes = append(shapes, ShapeOf(shuffled[i]))
			}
		}
		tm := Mine(shapes)
		for _, rs := range shuffled {
			if got := tm[ShapeOf(rs)]; got != want[rs] {
				t.Fatalf("trial %d (%d workers): %q went to %q, want %q", trial, workers, rs, got, want[rs])
			}
		}
	}
}

func TestGroupIDStable(t *testing.T) {
	// Fixed forever: IDs are shared between runs, machines and people.
	cases := map[string]string{
		"Customer <id> not found": "9bd90d6e3e",
		"Unknown event type <*>":  "3a30911781",
		"rejected":                "20cd938a2e",
	}
	for tmpl, want := range cases {
		if got := GroupID(tmpl); got != want {
			t.Errorf("GroupID(%q) = %s, want %s", tmpl, got, want)
		}
	}
}

func TestMatchTemplate(t *testing.T) {
	cases := []struct {
		tmpl, shape string
		want        bool
	}{
		{"Unknown event type <*>", "Unknown event type OrderShipped", true},
		{"Unknown event type <*>", "Unknown event type", false},
		{"Unknown event type <*>", "Unknown event type a b", false},
		{"Unknown event kind <*>", "Unknown event type OrderShipped", false},
		{"rejected", "rejected", true},
		{"<*> b", "a b", true},
	}
	for _, c := range cases {
		if got := MatchTemplate(c.tmpl, c.shape); got != c.want {
			t.Errorf("MatchTemplate(%q, %q) = %v", c.tmpl, c.shape, got)
		}
	}
}

func TestPlaceholdersMatchValues(t *testing.T) {
	for _, c := range realReasons {
		sh, vals := Shape(c.reason)
		if n := len(placeholders(sh)); n != len(vals) {
			t.Errorf("%q: %d placeholders, %d values %q", sh, n, len(vals), vals)
		}
	}
}

func FuzzShape(f *testing.F) {
	for _, c := range realReasons[:20] {
		f.Add(c.reason)
	}
	f.Add("'unterminated \"quote")
	f.Add("http://[::1]:80/a?b=1&c")
	f.Add("<num> <*> <str>")
	f.Fuzz(func(t *testing.T, reason string) {
		sh, vals := Shape(reason)
		if again := ShapeOf(reason); again != sh {
			t.Fatalf("not a function of its input: %q then %q", sh, again)
		}
		if strings.ContainsAny(sh, "\n\r\t") || strings.HasPrefix(sh, " ") || strings.HasSuffix(sh, " ") || strings.Contains(sh, "  ") {
			t.Fatalf("shape not one spaced line: %q", sh)
		}
		if utf8.ValidString(reason) && !utf8.ValidString(sh) {
			t.Fatalf("shape of valid UTF-8 is not: %q", sh)
		}
		if len(vals) > maxShapeValues {
			t.Fatalf("%d values", len(vals))
		}
		for _, v := range vals {
			if !strings.Contains(reason, v) {
				t.Fatalf("value %q not in reason", v)
			}
		}
		// Shaping a shape changes nothing but typed placeholders' words.
		tm := Mine([]string{sh, ShapeOf(reason + " x")})
		if !MatchTemplate(tm[sh], sh) {
			t.Fatalf("shape %q does not match its template %q", sh, tm[sh])
		}
		_ = fmt.Sprint(GroupID(sh))
	})
}
