package cmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/redrive"
)

// Escape sequences a hostile producer or broker can plant in a message's
// fields: a colour, a screen clear, an OSC 8 hyperlink, an 8-bit CSI.
const (
	escRed   = "\x1b[31m"
	escLink  = "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\"
	escClear = "\x1b[2J"
	escCSI8  = "\u009b1m"
)

// hostileArchive is an archive of one message whose ID, death record
// (queue, reason, exchange, routing key) and a header (name and value)
// carry escape sequences.
func hostileArchive(t *testing.T) (path string, m *broker.Message) {
	t.Helper()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	m = &broker.Message{
		ID: "id-" + escRed + "1", Queue: "orders.dlq", Timestamp: at,
		Exchange: "ex" + escLink, RoutingKey: "rk" + escClear,
		Headers: map[string]any{
			"x-exception-message": "boom " + escRed + "red" + escCSI8,
			"x-note" + escClear:   "v" + escLink,
		},
		Body: []byte(`{"a":1}`),
		Death: &broker.Death{Reason: "rejected" + escClear, Queue: "orders" + escLink, Count: 1, First: at, Last: at,
			History: []broker.DeathEntry{{Reason: "rejected" + escClear, Queue: "orders" + escLink, Exchange: "dlx" + escRed, RoutingKeys: []string{"k" + escCSI8}, Count: 1, Time: at}}},
	}
	path = filepath.Join(t.TempDir(), "hostile.jsonl")
	w, err := archive.NewWriter(path, archive.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(m); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, m
}

// rawControl returns the first control character in s other than those
// allowed (a line's newline), or -1.
func rawControl(s, allowed string) rune {
	for _, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(allowed, r) {
			return r
		}
	}
	return -1
}

// Values from a message reach the terminal with their escape sequences
// shown, not acted on, in every table and in show, with or without a
// terminal and colour; JSON keeps them exactly.
func TestHostileFieldsShowOnTheTerminal(t *testing.T) {
	path, m := hostileArchive(t)
	ref := "file://" + path
	for _, args := range [][]string{
		{"peek", ref},
		{"peek", ref, "--limit", "0"},
		{"show", ref, m.ID},
		{"stats", ref},
		{"stats", ref, "--group-by", "source,exchange,routing-key,header:x-exception-message"},
		{"queues", "--broker", ref},
	} {
		for _, tty := range []bool{false, true} {
			stdout, stderr, code := runDLQWith(t, runOpts{TTY: tty}, args...)
			if code != ExitOK {
				t.Fatalf("%v (tty %v): exit %d %s", args, tty, code, stderr)
			}
			allowed := "\n\t" // peek without a terminal separates cells with tabs
			if tty {
				// dlq's own styling: bold headers, colours.
				stdout = stripOwnStyles(stdout)
			}
			if r := rawControl(stdout, allowed); r != -1 {
				t.Errorf("%v (tty %v): stdout carries a raw %U:\n%q", args, tty, r, stdout)
			}
			if r := rawControl(stripOwnStyles(stderr), allowed+"\r"); r != -1 {
				t.Errorf("%v (tty %v): stderr carries a raw %U:\n%q", args, tty, r, stderr)
			}
		}
	}
	// The escapes are shown, so a reader sees what the message holds.
	stdout, _, _ := runDLQ(t, "show", ref, m.ID)
	for _, want := range []string{`id-\x1b[31m1`, `orders\x1b]8;;http://evil\x1b\text\x1b]8;;\x1b\`, `rejected\x1b[2J`, `x-note\x1b[2J`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, stdout)
		}
	}
	// An error that quotes a name shows its escapes too.
	_, stderr, code := runDLQ(t, "--broker", "demo:", "peek", "orders"+escClear)
	if code != ExitError || rawControl(stderr, "\n") != -1 || !strings.Contains(stderr, `orders\x1b[2J`) {
		t.Errorf("error line: exit %d, %q", code, stderr)
	}
	// JSON keeps every byte.
	for _, args := range [][]string{{"peek", ref, "-o", "json"}, {"show", ref, m.ID, "-o", "json"}} {
		stdout, stderr, code := runDLQ(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		var doc struct {
			ID    string `json:"id"`
			Death struct {
				Queue  string `json:"queue"`
				Reason string `json:"reason"`
			} `json:"death"`
		}
		b := bytes.TrimSpace([]byte(stdout))
		if args[0] == "peek" {
			b = bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("[")), []byte("]"))
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if doc.ID != m.ID || doc.Death.Queue != m.Death.Queue || doc.Death.Reason != m.Death.Reason {
			t.Errorf("%v: JSON changed the values: id %q queue %q reason %q", args, doc.ID, doc.Death.Queue, doc.Death.Reason)
		}
	}
}

// stripOwnStyles removes the SGR sequences dlq itself writes on a
// terminal (bold, colours, reset) and its progress line's erase, leaving
// any other escape in place.
func stripOwnStyles(s string) string {
	for _, c := range []string{"\x1b[1m", "\x1b[0m", "\x1b[31m", "\x1b[33m", "\x1b[32m", "\x1b[2m", "\x1b[K", "\x1b[34;1m", "\x1b[90m"} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

// A redrive's summary and preview name messages by ID and quote their
// errors: escape sequences in them show instead of acting.
func TestRedriveSummaryShowsEscapes(t *testing.T) {
	id := "id-" + escLink
	s := redrive.Summary{Source: "orders.dlq", Examined: 3, Moved: 1,
		Destinations: map[string]int64{"queue:orders" + escClear: 1},
		Skipped:      map[string]int64{redrive.ReasonFiltered: 1},
		Failed:       map[string]int64{redrive.ReasonRejected: 1},
		IDs:          []string{id}, Errors: []string{id + ": refused " + escRed},
		Resent: 1, ResentIDs: []string{id},
		Resumed: &redrive.ResumeReport{Journals: 1, InFlight: 1, InFlightIDs: []string{id}, MaybeNotAcked: 1, MaybeNotAckedIDs: []string{id}},
		Diffs:   []redrive.Diff{{ID: id, Lines: "- a\n+ b"}},
	}
	ios, _, out, _ := Test()
	f := NewFactory(ios, nil)
	if err := printSummary(f, OutputTable, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	var preview bytes.Buffer
	printPreview(&preview, "orders.dlq", s)
	for name, text := range map[string]string{"summary": out.String(), "preview": preview.String()} {
		if r := rawControl(text, "\n"); r != -1 {
			t.Errorf("%s carries a raw %U:\n%q", name, r, text)
		}
		if !strings.Contains(text, `id-\x1b]8;;http://evil`) {
			t.Errorf("%s does not show the ID's escapes:\n%s", name, text)
		}
	}
}
