package cmd

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestStatsFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		output  string
		wantErr string
		check   func(t *testing.T, o *statsOptions)
	}{
		{name: "defaults", args: []string{"q"}, check: func(t *testing.T, o *statsOptions) {
			if len(o.groupBy) != 1 || o.groupBy[0].Name() != "reason" || o.Limit != 0 || o.Examples != 3 || o.format != OutputTable {
				t.Errorf("group by %q, limit %d, examples %d, format %v; want [reason], 0, 3, %v", testdiff.Pick(o.groupBy, inspect.Grouping.Name), o.Limit, o.Examples, o.format, OutputTable)
			}
		}},
		{name: "prom defaults to reason,source", args: []string{"q"}, output: "prom", check: func(t *testing.T, o *statsOptions) {
			if len(o.groupBy) != 2 || o.groupBy[1].Name() != "source" {
				t.Errorf("group by %q, want [reason source]", testdiff.Pick(o.groupBy, inspect.Grouping.Name))
			}
		}},
		{name: "prom keeps explicit group-by", args: []string{"q", "-g", "age"}, output: "prom", check: func(t *testing.T, o *statsOptions) {
			if len(o.groupBy) != 1 || o.groupBy[0].Name() != "age" {
				t.Errorf("group by %q, want [age]", testdiff.Pick(o.groupBy, inspect.Grouping.Name))
			}
		}},
		{name: "all flags", args: []string{"q", "-g", "reason,header:x-t,body:.a.b", "--filter", ".size>1", "--reason", ".headers.e", "--dup-key", ".body.id", "--examples", "5", "--max-groups", "7", "-n", "100", "--mode", "stream", "--offset", "first"}, output: "csv", check: func(t *testing.T, o *statsOptions) {
			if len(o.groupBy) != 3 || o.filter == nil || o.reason == nil || o.dupKey == nil || o.Examples != 5 || o.MaxGroups != 7 || o.Limit != 100 {
				t.Errorf("group by %q, filter set %t, reason set %t, dup key set %t, examples %d, max groups %d, limit %d; want 3 keys, true, true, true, 5, 7, 100",
					testdiff.Pick(o.groupBy, inspect.Grouping.Name), o.filter != nil, o.reason != nil, o.dupKey != nil, o.Examples, o.MaxGroups, o.Limit)
			}
			if po := o.Peek.options(inspectNow, o.Limit); po.Mode != broker.PeekStream || po.Limit != 100 || po.Offset != "first" {
				t.Errorf("peek mode %v, limit %d, offset %q; want %v, 100, first", po.Mode, po.Limit, po.Offset, broker.PeekStream)
			}
		}},
		{name: "bad group", args: []string{"q", "-g", "reason,colour"}, wantErr: "`--group-by`: unknown group \"colour\": use any of reason, reason-text, redrives, source"},
		{name: "bad body path", args: []string{"q", "-g", "body:.a[["}, wantErr: "`--group-by`: group \"body:.a[[\": invalid jq"},
		{name: "bad dup key", args: []string{"q", "--dup-key", "}"}, wantErr: "`--dup-key`: invalid jq"},
		{name: "dups contradiction", args: []string{"q", "--no-dups", "--dup-key", ".id"}, wantErr: "contradict"},
		{name: "bad output", args: []string{"q"}, output: "raw", wantErr: "use one of table, json, csv, prom"},
		{name: "bad max groups", args: []string{"q", "--max-groups", "0"}, wantErr: "`--max-groups` at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			f := &Factory{IO: ios, Options: &GlobalOptions{Output: c.output}}
			var got *statsOptions
			cmd := newCmdStats(f, func(o *statsOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			c.check(t, got)
		})
	}
}

func runStats(t *testing.T, b *fakeQueueBroker, tty bool, output string, args ...string) (string, string, error) {
	t.Helper()
	f, _, outputs := inspectFactory(t, b, tty)
	f.Options.Output = output
	cmd := newCmdStats(f, nil)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	out, errOut := outputs()
	return out, errOut, err
}

func TestStatsRunTable(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprint("tty=", tty), func(t *testing.T) {
			b := &fakeQueueBroker{msgs: deadLetters(30), report: broker.PeekReport{Mode: broker.PeekRotate}}
			out, errOut, err := runStats(t, b, tty, "", "orders.dlq", "-g", "reason,source")
			if err != nil {
				t.Fatal(err)
			}
			if b.peeks[0].Limit != 0 {
				t.Errorf("stats must read the whole queue: limit %d", b.peeks[0].Limit)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 7 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "REASON") {
				t.Fatalf("table:\n%s", out)
			}
			// i%3: 0 rejected, 1 expired, 2 timeout (body); i%2 source.
			want := map[string]string{
				inspect.GroupID("rejected") + " rejected orders":   "5",
				inspect.GroupID("rejected") + " rejected payments": "5",
				inspect.GroupID("expired") + " expired orders":     "5",
				inspect.GroupID("expired") + " expired payments":   "5",
			}
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				if strings.Contains(l, "timeout") {
					if f[0] != inspect.GroupID(`timeout "<str>" line2`) || f[1] != "timeout" || f[2] != `"<str>"` {
						t.Errorf("timeout row %q", l)
					}
					continue
				}
				if want[f[0]+" "+f[1]+" "+f[2]] != f[3] {
					t.Errorf("row %q", l)
				}
			}
			if !strings.Contains(errOut, "30 messages") || !strings.Contains(errOut, "0 duplicates by id") {
				t.Errorf("summary %q", errOut)
			}
		})
	}
}

func TestStatsRunJSONAndCSV(t *testing.T) {
	msgs := deadLetters(12)
	msgs = append(msgs, msgs[0].Clone(), msgs[0].Clone())
	out, _, err := runStats(t, &fakeQueueBroker{msgs: msgs}, false, "json", "q", "-g", "body:.tier")
	if err != nil {
		t.Fatal(err)
	}
	var res inspect.StatsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Total != 14 || len(res.Groups) != 2 || res.Groups[0].Key["body:.tier"] != "t0" || res.Groups[0].Count != 8 || res.Duplicates.Messages != 2 {
		t.Errorf("json result: total %d, groups %v, duplicate messages %d; want 14, [body:.tier=t0 ×8, another], 2",
			res.Total, testdiff.Pick(res.Groups, func(g inspect.GroupStats) string { return fmt.Sprintf("%v ×%d", g.Key, g.Count) }), res.Duplicates.Messages)
	}
	out, _, err = runStats(t, &fakeQueueBroker{msgs: deadLetters(6)}, false, "csv", "q", "-g", "source")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 3 || strings.Join(recs[0], ",") != "source,count,share,last_1h,trend,oldest,newest,bytes,examples" || recs[1][1] != "3" {
		t.Errorf("csv %v %v", recs, err)
	}
	// orders: deaths at 11:55, 11:57 and 11:59 in 19 s buckets from 11:54.
	if d := testdiff.Text("orders,3,0.500000,3,0;0;0;1;0;0;0;0;0;1;0;0;0;0;0;1,2026-03-01T11:55:00Z,2026-03-01T11:59:00Z,88,id-000;id-002;id-004", strings.Join(recs[1], ",")); d != "" {
		t.Errorf("csv row:\n%s", d)
	}
}

// TestStatsOutOfReach: messages the peek could not see (an SQS FIFO queue
// shows only each group's head) are reported in every output, apart from
// the counts of what was read.
func TestStatsOutOfReach(t *testing.T) {
	report := broker.PeekReport{Mode: broker.PeekReceive, OutOfReach: 2}
	out, _, err := runStats(t, &fakeQueueBroker{msgs: deadLetters(1), report: report}, false, "json", "q")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res["read"] != 1.0 || res["total"] != 1.0 || res["out_of_reach"] != 2.0 {
		t.Errorf("json read %v, total %v, out_of_reach %v; want 1, 1, 2\n%s", res["read"], res["total"], res["out_of_reach"], out)
	}
	out, _, err = runStats(t, &fakeQueueBroker{msgs: deadLetters(1)}, false, "json", "q")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"out_of_reach": 0`) {
		t.Errorf("json without a shortfall has no out_of_reach 0:\n%s", out)
	}

	out, _, err = runStats(t, &fakeQueueBroker{msgs: deadLetters(1), report: report}, false, "prom", "q")
	if err != nil {
		t.Fatal(err)
	}
	s := parseProm(t, out)
	for k, v := range map[string]float64{`dlq_dead_letter_messages{queue=q}`: 1, `dlq_dead_letter_messages_out_of_reach{queue=q}`: 2} {
		if got, ok := s[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v\n%s", k, got, ok, v, out)
		}
	}
	if !strings.Contains(out, "# TYPE dlq_dead_letter_messages_out_of_reach gauge\n") {
		t.Errorf("no TYPE line for the out-of-reach gauge:\n%s", out)
	}

	_, errOut, err := runStats(t, &fakeQueueBroker{msgs: deadLetters(1), report: report}, false, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "1 messages, ") || !strings.Contains(errOut, ", 2 more out of reach (not read, not counted)") {
		t.Errorf("summary does not give the shortfall:\n%s", errOut)
	}
}

// promSample matches one sample line of the text exposition format.
var (
	promName   = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promLabelN = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)
)

// parseProm checks text against the Prometheus text exposition format 0.0.4
// as node_exporter's textfile collector reads it, and returns the samples as
// "name{sorted labels}" → value.
func parseProm(t *testing.T, text string) map[string]float64 {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("exposition must end with a newline")
	}
	samples := map[string]float64{}
	typed := map[string]bool{}
	done := map[string]bool{}
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(msg string) { t.Fatalf("line %d %q: %s", i+1, line, msg) }
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a comment
			}
			if !promName.MatchString(f[2]) || promName.FindString(f[2]) != f[2] {
				fail("bad metric name")
			}
			if f[1] == "TYPE" {
				if typed[f[2]] || len(f) != 4 || f[3] != "gauge" {
					fail("duplicate or bad TYPE")
				}
				typed[f[2]] = true
			}
			continue
		}
		name := promName.FindString(line)
		if name == "" {
			fail("no metric name")
		}
		if !typed[name] {
			fail("sample before its TYPE")
		}
		if name != current {
			if done[name] {
				fail("samples of a metric are not contiguous")
			}
			done[current] = true
			current = name
		}
		rest := line[len(name):]
		var labels []string
		if strings.HasPrefix(rest, "{") {
			rest = rest[1:]
			seen := map[string]bool{}
			for !strings.HasPrefix(rest, "}") {
				ln := promLabelN.FindString(rest)
				if ln == "" || strings.HasPrefix(ln, "__") || seen[ln] {
					fail("bad or repeated label name")
				}
				seen[ln] = true
				rest = rest[len(ln):]
				if !strings.HasPrefix(rest, `="`) {
					fail("label without =\"")
				}
				rest = rest[2:]
				var val strings.Builder
				for {
					if rest == "" {
						fail("unterminated label value")
					}
					c := rest[0]
					if c == '"' {
						rest = rest[1:]
						break
					}
					if c == '\n' {
						fail("raw newline in label value")
					}
					if c == '\\' {
						if len(rest) < 2 || !strings.ContainsRune(`\"n`, rune(rest[1])) {
							fail("bad escape in label value")
						}
						val.WriteString(rest[:2])
						rest = rest[2:]
						continue
					}
					val.WriteByte(c)
					rest = rest[1:]
				}
				labels = append(labels, ln+"="+val.String())
				if strings.HasPrefix(rest, ",") {
					rest = rest[1:]
				}
			}
			rest = rest[1:]
		}
		if !strings.HasPrefix(rest, " ") {
			fail("no space before the value")
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 {
			fail("want a value and an optional timestamp")
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil && fields[0] != "NaN" && fields[0] != "+Inf" && fields[0] != "-Inf" {
			fail("bad value")
		}
		sort.Strings(labels)
		key := name + "{" + strings.Join(labels, ",") + "}"
		if _, dup := samples[key]; dup {
			fail("duplicate series")
		}
		samples[key] = v
	}
	return samples
}

func TestStatsProm(t *testing.T) {
	msgs := deadLetters(9)
	msgs[4].Death.Queue = "pay\"ments\\eu\nwest"
	out, _, err := runStats(t, &fakeQueueBroker{msgs: msgs}, false, "prom", "orders.dlq")
	if err != nil {
		t.Fatal(err)
	}
	s := parseProm(t, out)
	exp, rej, tmo := inspect.GroupID("expired"), inspect.GroupID("rejected"), inspect.GroupID(`timeout "<str>" line2`)
	want := map[string]float64{
		`dlq_dead_letters{group=` + exp + `,queue=orders.dlq,reason=expired,source=payments}`:                  2,
		`dlq_dead_letters{group=` + rej + `,queue=orders.dlq,reason=rejected,source=orders}`:                   2,
		`dlq_dead_letters{group=` + tmo + `,queue=orders.dlq,reason=timeout \"<str>\" line2,source=payments}`:  1,
		`dlq_dead_letters{group=` + exp + `,queue=orders.dlq,reason=expired,source=pay\"ments\\eu\nwest}`:      0,
		`dlq_dead_letters_last_hour{group=` + rej + `,queue=orders.dlq,reason=rejected,source=orders}`:         2,
		`dlq_dead_letter_messages{queue=orders.dlq}`:                                                           9,
		`dlq_dead_letter_duplicates{queue=orders.dlq}`:                                                         0,
		`dlq_dead_letter_oldest_age_seconds{group=` + rej + `,queue=orders.dlq,reason=rejected,source=orders}`: 7 * 60,
	}
	for k, v := range want {
		got, ok := s[k]
		if v == 0 && k[:16] == "dlq_dead_letters" {
			// msgs[4] is rejected (4%3=1 → expired); its odd source must parse.
			if !ok {
				t.Errorf("series %s missing (escaping)", k)
			}
			continue
		}
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v\n%s", k, got, ok, v, out)
		}
	}
	if _, ok := s[`dlq_dead_letter_stats_timestamp_seconds{queue=orders.dlq}`]; !ok {
		t.Error("no timestamp gauge")
	}
	// The textfile collector reads *.prom files: write one and read it back.
	path := filepath.Join(t.TempDir(), "dlq.prom")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(path)
	parseProm(t, string(back))
}

func TestPromLabel(t *testing.T) {
	for in, want := range map[string]string{"reason": "reason", "routing-key": "routing_key", "header:x-tenant": "header_x_tenant", "body:.customer.tier": "body_customer_tier", "attr:queue": "attr_queue", "queue": "group_queue"} {
		if got := promLabel(in); got != want {
			t.Errorf("promLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatsDemoAcceptance(t *testing.T) {
	stdout, stderr, code := runDLQ(t, "stats", "--broker", "demo:", "--group-by", "reason,source", "--output", "json", "orders.dlq")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res inspect.StatsResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Total == 0 {
		t.Fatalf("%v %s", err, stdout)
	}
	var sum int64
	for _, g := range res.Groups {
		sum += g.Count
	}
	if sum != res.Total {
		t.Errorf("groups add up to %d, total %d", sum, res.Total)
	}
}

// A long template is cut in its prom label; the group label carries the ID.
func TestStatsPromTemplateBounded(t *testing.T) {
	msgs := deadLetters(3)
	long := "Validation failed: " + strings.Repeat("field amount is required and ", 10) + "more"
	for _, m := range msgs {
		m.Headers["x-exception-message"] = long
	}
	out, _, err := runStats(t, &fakeQueueBroker{msgs: msgs}, false, "prom", "orders.dlq", "-g", "reason")
	if err != nil {
		t.Fatal(err)
	}
	s := parseProm(t, out)
	// The reason itself is cut to inspect.MaxReasonLen first.
	id := inspect.GroupID(inspect.ShapeOf(inspect.Reason(msgs[0])))
	key := `dlq_dead_letters{group=` + id + `,queue=orders.dlq,reason=` + truncate(long, promTemplateLen) + `}`
	if v, ok := s[key]; !ok || v != 3 {
		t.Fatalf("no series %s = 3 in\n%s", key, out)
	}
	if utf8.RuneCountInString(truncate(long, promTemplateLen)) != promTemplateLen {
		t.Fatal("the label is not cut to its bound")
	}
}

// The summary under the stats table holds at the extremes: a span between
// timestamps 0 and 2^62 is longer than a Duration, and is shown as the
// longest one rather than wrapping to "-".
func TestStatsSummaryAtTheExtremes(t *testing.T) {
	oldest, newest := time.Unix(0, 0).UTC(), time.Unix(1<<62, 0).UTC()
	r := inspect.StatsResult{Total: 2, Read: 2, Bytes: math.MaxInt64, Oldest: &oldest, Newest: &newest, Now: time.Unix(1772366400, 0),
		TrendStart: &oldest, TrendStepSeconds: float64(int64(1<<62) / inspect.TrendBuckets)}
	want := "2 messages, 8589934592.0G, oldest 20513d ago, 0 in the last hour; TREND spans 106751d, 106751d a bar"
	if d := testdiff.Text(want, statsSummary(r)); d != "" {
		t.Errorf("statsSummary (-want +got):\n%s", d)
	}
}

// TestStatsNarrowTerminalShrinksReason: on 80 columns a long REASON gives
// up its width, so that COUNT, SHARE, LAST 1H and TREND stay on the screen.
func TestStatsNarrowTerminalShrinksReason(t *testing.T) {
	msgs := deadLetters(30)
	for i, m := range msgs {
		if i%3 == 2 {
			m.Body = []byte(`{"error":"Inventory service unavailable: GET http://inventory.internal/v1/reserve returned 503 after 3 attempts"}`)
		}
	}
	b := &fakeQueueBroker{msgs: msgs, report: broker.PeekReport{Mode: broker.PeekRotate}}
	f, ios, outputs := inspectFactory(t, b, true)
	ios.width = 80
	cmd := newCmdStats(f, nil)
	cmd.SetArgs([]string{"orders.dlq"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, _ := outputs()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	cols := regexp.MustCompile(`\S+( 1H)?`).FindAllString(lines[0], -1)
	want := []string{"ID", "REASON", "COUNT", "SHARE", "LAST 1H", "TREND"}
	if len(cols) < len(want) || testdiff.Lines(want, cols[:len(want)]) != "" {
		t.Errorf("the header on 80 columns:\n%s", testdiff.Lines(want, cols[:min(len(cols), len(want))]))
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("a line of %d cells on 80 columns: %q", w, l)
		}
		if strings.Contains(l, "Inventory") && !strings.Contains(l, "Inventory service una") {
			t.Errorf("the reason is cut too short: %q", l)
		}
	}
}
