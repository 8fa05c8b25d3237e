package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/aymanbagabas/go-udiff"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// Every screen at 100×30 against golden files (go test -update rewrites them).

func TestQueuesScreen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{})
	h.waitFor("orders.dlq", "payments.dlq", "ROLE", "retry")
	m := h.final()
	golden.RequireEqual(t, m.Plain())
	if m.Screen() != "queues" {
		t.Fatalf("screen = %s", m.Screen())
	}
}

func TestQueuesFilterSortOpen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{})
	h.waitFor("payments.dlq")
	h.key("/")
	h.typeText("dlq")
	h.key("enter")
	h.waitFor("filter: dlq", "2/5 queues")
	h.key("s", "s") // sort by depth: orders.dlq (6) before payments.dlq (0)
	h.waitFor("sort: depth")
	h.key("enter")
	h.waitFor("msg-00000", "6 read")
	m := h.final()
	if m.Screen() != "messages" || m.msgs.queue != "orders.dlq" {
		t.Fatalf("screen %s queue %q, want messages of orders.dlq", m.Screen(), m.msgs.queue)
	}
}

// TestQueuesRoleSort: the third sort puts dead letters first (dlq, then
// parking), then retry steps, then work queues, each by name.
func TestQueuesRoleSort(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{})
	h.waitFor("payments.dlq", "* role from the name")
	h.key("s", "s", "s")
	h.waitFor("sort: dlq first")
	m := h.final()
	var got []string
	for _, i := range m.queues.visible {
		got = append(got, m.queues.all[i].Name+" "+roleLabel(m.queues.all[i]))
	}
	want := []string{"orders.dlq dlq", "payments.dlq dlq*", "orders.retry retry", "orders work", "payments work"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

func TestMessagesScreen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("msg-00005", "6 read")
	m := h.final()
	golden.RequireEqual(t, m.Plain())
	if m.Loaded() != 6 {
		t.Fatalf("loaded %d, want 6", m.Loaded())
	}
}

func TestMessagesFilterAndSelectAllMatching(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("/")
	h.typeText(".body.amount > 100")
	h.key("enter")
	h.waitFor("jq: .body.amount > 100", "match")
	h.key("a")
	h.waitFor("3 selected")
	m := h.final()
	// amounts are (i*73)%250: 0, 73, 146, 219, 42, 115 → 2, 3, 5 are > 100
	want := []string{"msg-00002", "msg-00003", "msg-00005"}
	if got := m.Selected(); !slices.Equal(got, want) {
		t.Fatalf("selected %v, want %v", got, want)
	}
	if m.Visible() != 3 {
		t.Fatalf("visible %d, want 3", m.Visible())
	}
}

func TestMessagesInvalidFilterKeepsBarOpen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("/")
	h.typeText("nonsense")
	h.key("enter")
	h.waitFor("filter: syntax error at position 1")
	m := h.final()
	if !m.msgs.filtering || m.msgs.filtered {
		t.Fatalf("after a bad filter the bar should stay open and nothing be filtered")
	}
}

func TestMessagesSelectWithSpaceAndReasonGroup(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("space", "space") // selects 0 and 1, cursor moves down each time
	h.waitFor("2 selected")
	h.key("g")
	h.waitFor("failure reasons", "3 failure groups", "payment declined")
	h.key("down", "enter") // the second group by count (ties sorted by name)
	h.waitFor("group 373c48d61b (schema mismatch", "2 match")
	m := h.final()
	if got := m.Selected(); !slices.Equal(got, []string{"msg-00000", "msg-00001"}) {
		t.Fatalf("selected %v", got)
	}
	if m.Visible() != 2 {
		t.Fatalf("visible %d, want 2", m.Visible())
	}
}

func TestDetailScreen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("down", "enter")
	h.waitFor("message msg-00001", "death history")
	m := h.final()
	golden.RequireEqual(t, m.Plain())
}

func TestDetailRawAndHex(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("enter")
	h.waitFor("· pretty (r cycles)")
	h.key("r")
	h.waitFor("· raw (r cycles)", `{"order_id":1000`)
	h.key("r")
	h.waitFor("· hex (r cycles)", "00000000  7b 22 6f 72")
	h.key("n")
	h.waitFor("message msg-00001")
	m := h.final()
	if m.detail.mode != bodyHex || m.Cursor() != 1 {
		t.Fatalf("mode %v cursor %d", m.detail.mode, m.Cursor())
	}
}

func writeEditor(t *testing.T, sedExpr string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "ed.sh")
	script := "#!/bin/sh\nsed -i '" + sedExpr + "' \"$1\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEditExternalDiffAndSave(t *testing.T) {
	f := newFake()
	f.expectCall("replace")
	ed := writeEditor(t, `s/"status": "failed"/"status": "fixed"/`)
	h := start(t, f.backend(false), Options{Queue: "orders.dlq", Editor: ed, TempDir: t.TempDir()})
	h.waitFor("6 read")
	h.key("enter")
	h.waitFor("message msg-00000")
	h.key("e")
	h.waitFor("edit msg-00000", "locked system headers")
	h.key("ctrl+e")
	h.waitFor(`"status": "fixed"`)
	h.key("ctrl+s")
	h.waitFor("review the change", `+     "status": "fixed"`)
	h.key("enter")
	h.waitFor("publish the edited message to", "origin")
	h.key("enter")
	h.waitFor("save edited message?")
	h.key("y")
	h.waitFor("published edited msg-00000 to origin")
	m := h.final()
	f.verify(t)
	if len(f.replaces) != 1 {
		t.Fatalf("replace calls %d", len(f.replaces))
	}
	r := f.replaces[0]
	if r.Dest.Kind != broker.ToOrigin || r.Queue != "orders.dlq" || r.Original.ID != "msg-00000" {
		t.Fatalf("replace request %+v", r)
	}
	if !strings.Contains(string(r.Edited.Body), `"status":"fixed"`) || strings.Contains(string(r.Edited.Body), "failed") {
		t.Fatalf("edited body %s", r.Edited.Body)
	}
	if _, ok := r.Edited.Headers["x-death"]; !ok {
		t.Fatalf("locked x-death header was dropped")
	}
	if m.Screen() != "messages" {
		t.Fatalf("after saving the list reloads; screen %s", m.Screen())
	}
}

func TestEditScreenGoldenAndInvalidJSON(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("enter", "e")
	h.waitFor("edit msg-00000")
	golden.RequireEqual(t, stripStyles(*h.frame.Load()))
	h.typeText("oops")
	h.key("ctrl+s")
	h.waitFor("✗ line 1, column 1: invalid JSON")
	m := h.final()
	if m.edit.stage != stageEditing || len(f.replaces) != 0 {
		t.Fatalf("an invalid document must not be saved")
	}
}

func TestEditReviewGolden(t *testing.T) {
	f := newFake()
	ed := writeEditor(t, `s/"amount": 0/"amount": 10/`)
	h := start(t, f.backend(false), Options{Queue: "orders.dlq", Editor: ed, TempDir: t.TempDir()})
	h.waitFor("6 read")
	h.key("enter", "e")
	h.waitFor("edit msg-00000")
	h.key("ctrl+e")
	h.waitFor(`"amount": 10`)
	h.key("ctrl+s")
	h.waitFor("review the change")
	m := h.final()
	golden.RequireEqual(t, m.Plain())
}

func TestRedriveSelected(t *testing.T) {
	f := newFake()
	f.expectCall("redrive")
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("space", "space", "R")
	h.waitFor("redrive 2 message(s) to", "queue:orders")
	h.key("enter")
	h.waitFor("redrive 2 message(s)?", "from orders.dlq to origin")
	h.key("y")
	h.waitFor("moved 2 messages to origin")
	m := h.final()
	f.verify(t)
	req := f.redrives[0]
	if !slices.Equal(req.IDs, []string{"msg-00000", "msg-00001"}) || req.Dest.Kind != broker.ToOrigin || req.Queue != "orders.dlq" {
		t.Fatalf("redrive request %+v", req)
	}
	if len(m.Selected()) != 0 {
		t.Fatalf("selection should be cleared after the action")
	}
	// Per-message errors of the run name settings in the TUI's words.
	if req.Words == nil {
		t.Fatal("the redrive request has no Words: its per-message errors would name flags")
	}
	hint := broker.Hintf("drop one with %s, or pass %s", broker.OptTransform.With("'del(.attributes.NAME)'"), broker.OptFilter)
	if got, want := broker.RenderError(hint, req.Words), "drop one with an edit of the message (e in its detail view), or pass the filter (/)"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

func TestRedriveAllMatchingUsesFilter(t *testing.T) {
	f := newFake()
	f.expectCall("redrive")
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("/")
	h.typeText(`.body.currency == "EUR"`)
	h.key("enter")
	h.waitFor("6 match")
	h.key("ctrl+a")
	h.waitFor("redrive 6 message(s) to")
	h.key("down", "enter") // queue:orders
	h.waitFor("from orders.dlq to queue:orders")
	h.key("y")
	h.waitFor("moved 0 messages")
	h.final()
	f.verify(t)
	req := f.redrives[0]
	if req.Filter != `.body.currency == "EUR"` || len(req.IDs) != 0 || req.Dest.Queue != "orders" || req.Expected != 6 {
		t.Fatalf("redrive request %+v", req)
	}
}

func TestRedriveCancel(t *testing.T) {
	f := newFake()
	f.block = true
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("R", "enter", "y")
	h.waitFor("⟳ redriving 1 to origin", "/1000")
	// The UI stays usable while the action runs.
	h.key("down")
	h.waitFor("row 2/6", "ctrl+x cancel")
	h.key("ctrl+x")
	h.waitFor("cancelled after")
	m := h.final()
	if m.job != nil {
		t.Fatalf("job still running after cancel")
	}
}

func TestQuitDuringActionCancelsAndWaits(t *testing.T) {
	f := newFake()
	f.block = true
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("R", "enter", "y")
	h.waitFor("⟳ redriving 1 to origin")
	h.key("q")
	h.waitFor("quit while redriving 1 to origin?")
	h.key("y")
	h.tm.WaitFinished(t, teatestFinalTimeout())
	m := h.tm.FinalModel(t).(probe).Model
	if m.job != nil || !m.quitAfterJob {
		t.Fatalf("quit before the action settled")
	}
}

func TestDiscardArchivesFirst(t *testing.T) {
	f := newFake()
	f.expectCall("discard")
	h := start(t, f.backend(false), Options{Queue: "orders.dlq", ArchiveDir: "/var/tmp"})
	h.waitFor("6 read")
	h.key("D")
	h.waitFor("discard: archive to", "/var/tmp/dlq-discarded-orders.dlq-20260314T120000Z.jsonl")
	h.key("enter")
	h.waitFor("discard 1 message(s)?")
	h.key("y")
	h.waitFor("discarded 1 (archived to /var/tmp/dlq-discarded-orders.dlq-20260314T120000Z.jsonl)")
	h.final()
	f.verify(t)
	if f.discards[0].Archive == "" || !slices.Equal(f.discards[0].IDs, []string{"msg-00000"}) {
		t.Fatalf("discard %+v", f.discards[0])
	}
}

func TestDiscardDeclined(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("D", "enter")
	h.waitFor("discard 1 message(s)?")
	h.key("enter") // enter does not confirm a dangerous dialog
	h.key("n")
	h.waitFor("6 read")
	h.final()
	if len(f.discards) != 0 {
		t.Fatalf("discard ran without a yes")
	}
}

func TestExport(t *testing.T) {
	f := newFake()
	f.expectCall("export")
	h := start(t, f.backend(true), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("x")
	h.waitFor("export message msg-00000 to")
	h.key("enter")
	h.waitFor("exported 1 to dlq-export-orders.dlq-")
	h.final()
	f.verify(t)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.exports) != 1 {
		t.Fatalf("%d export requests, want 1", len(f.exports))
	}
	req := f.exports[0]
	var got []string
	for _, m := range req.Messages {
		got = append(got, m.ID)
	}
	if req.Queue != "orders.dlq" || !slices.Equal(req.IDs, []string{"msg-00000"}) || !slices.Equal(got, []string{"msg-00000"}) ||
		!strings.HasPrefix(filepath.Base(req.Archive), "dlq-export-orders.dlq-") {
		t.Errorf("export request: queue %q, ids %v, messages %v, archive %q; want orders.dlq, [msg-00000] twice, dlq-export-orders.dlq-…",
			req.Queue, req.IDs, got, req.Archive)
	}
}

func TestStatsScreen(t *testing.T) {
	f := newFake()
	f.messages["orders.dlq"] = sampleMessages("orders.dlq", 60)
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("60 read")
	h.key("s")
	h.waitFor("group by reason", "60 messages, 3 groups", "33.3%")
	golden.RequireEqual(t, stripStyles(*h.frame.Load()))
	h.key("tab")
	h.waitFor("group by source", "1 group")
	h.key("/")
	h.typeText("body:.currency")
	h.key("enter")
	h.waitFor("group by body:.currency", "EUR")
	h.key("enter")
	h.waitFor("body:.currency = EUR", "60 match")
	m := h.final()
	if m.Screen() != "messages" || m.Visible() != 60 {
		t.Fatalf("screen %s visible %d", m.Screen(), m.Visible())
	}
}

func TestHelpScreen(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("?")
	h.waitFor("keys: messages", "redrive all matching")
	golden.RequireEqual(t, stripStyles(*h.frame.Load()))
	h.key("x") // any key closes help
	h.waitFor("6 read")
	m := h.final()
	if m.helpAll {
		t.Fatal("help still open")
	}
}

var dangerWords = regexp.MustCompile(`(?i)redrive|discard|edit and`)

func TestReadOnlyKeysAreAbsent(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(true), Options{Queue: "orders.dlq"})
	h.waitFor("6 read", "[read-only]")
	if dangerWords.MatchString(*h.frame.Load()) {
		t.Fatalf("read-only footer shows a dangerous key:\n%s", *h.frame.Load())
	}
	h.key("space", "R", "D", "ctrl+a")
	h.key("?")
	h.waitFor("keys: messages")
	if dangerWords.MatchString(*h.frame.Load()) {
		t.Fatalf("read-only help lists a dangerous key:\n%s", *h.frame.Load())
	}
	h.key("esc", "up", "enter")
	h.waitFor("message msg-00000")
	h.key("e", "R", "D")
	h.key("?")
	h.waitFor("keys: detail")
	golden.RequireEqual(t, stripStyles(*h.frame.Load()))
	h.key("esc")
	h.waitFor("message msg-00000")
	m := h.final()
	if m.Screen() != "detail" || m.dialog != nil || m.job != nil {
		t.Fatalf("a dangerous key did something in read-only mode: screen %s dialog %v", m.Screen(), m.dialog)
	}
	if len(f.redrives)+len(f.discards)+len(f.replaces) != 0 {
		t.Fatal("mutation in read-only mode")
	}
}

func TestReadOnlyKeymap(t *testing.T) {
	ro := newKeyMap(capabilitiesOf(Backend{ReadOnly: true, Redrive: func(context.Context, ActionRequest, func(Progress)) (Result, error) { return Result{}, nil }}))
	for name, b := range map[string]key.Binding{
		"messages.Redrive": ro.messages.Redrive, "messages.RedriveAll": ro.messages.RedriveAll,
		"messages.Discard": ro.messages.Discard, "detail.Edit": ro.detail.Edit,
		"detail.Redrive": ro.detail.Redrive, "detail.Discard": ro.detail.Discard,
	} {
		if b.Enabled() || len(b.Keys()) != 0 {
			t.Errorf("%s is bound in read-only mode: %v", name, b.Keys())
		}
	}
	for _, hm := range []helpMap{ro.messagesHelp(), ro.detailHelp()} {
		for _, col := range append(hm.full, hm.short) {
			for _, b := range col {
				if dangerWords.MatchString(b.Help().Desc) {
					t.Errorf("read-only help lists %q", b.Help().Desc)
				}
			}
		}
	}
	rw := newKeyMap(capabilitiesOf(newFake().backend(false)))
	if !rw.messages.Redrive.Enabled() || !rw.detail.Edit.Enabled() || !rw.messages.Discard.Enabled() {
		t.Fatal("writable keymap lacks the action keys")
	}
}

func TestErrorsAreDismissibleNotices(t *testing.T) {
	f := newFake()
	f.queueErr = errors.New("queue `x` not found on vhost `/`: check `--queue`")
	h := start(t, f.backend(false), Options{})
	h.waitFor("✗ queue `x` not found", "(esc to dismiss)")
	h.key("esc")
	h.waitFor("no queues")
	m := h.final()
	if m.Notice() != "" {
		t.Fatalf("notice not dismissed: %q", m.Notice())
	}
}

func TestPeekErrorAndPanicDoNotCrash(t *testing.T) {
	f := newFake()
	b := f.backend(false)
	b.Peek = func(ctx context.Context, queue string, visit func(*broker.Message) error) (broker.PeekReport, error) {
		return broker.PeekReport{}, broker.Errorf(broker.ErrUnsafe, "peek `orders.dlq`", "delivery limit 3 is near: peek with --mode rotate")
	}
	// The first listing works; the one made on the way back panics, so the
	// two notices come in a known order.
	list := b.Queues
	var calls atomic.Int32
	b.Queues = func(ctx context.Context) ([]broker.Queue, error) {
		if calls.Add(1) > 1 {
			panic("boom")
		}
		return list(ctx)
	}
	h := start(t, b, Options{Queue: "orders.dlq"})
	h.waitFor("delivery limit 3 is near")
	h.key("esc")
	h.key("esc") // back to queues
	h.waitFor("internal error: boom")
	m := h.final()
	if m.Screen() != "queues" {
		t.Fatalf("screen %s", m.Screen())
	}
}

func TestResize(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.tm.Send(tea.WindowSizeMsg{Width: 60, Height: 12})
	h.waitFor("6 read")
	teatestWaitLines(t, h, 12, 60)
	h.tm.Send(tea.WindowSizeMsg{Width: 140, Height: 40})
	teatestWaitLines(t, h, 40, 140)
	h.final()
}

func teatestWaitLines(t *testing.T, h *harness, lines, width int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		fr := *h.frame.Load()
		ls := strings.Split(fr, "\n")
		ok := len(ls) == lines
		for _, l := range ls {
			if ansi.StringWidth(l) > width {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("frame is not %d×%d:\n%s", width, lines, fr)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

func TestNoColor(t *testing.T) {
	f := newFake()
	for _, color := range []bool{false, true} {
		m := New(context.Background(), f.backend(false), Options{Color: color, Now: func() time.Time { return testNow }, Refresh: -1}, nil)
		var mm tea.Model = m
		mm, _ = mm.Update(queuesMsg{queues: f.queues, at: testNow})
		out := mm.View().Content
		hasColor := strings.Contains(out, "\x1b[38") || strings.Contains(out, "\x1b[3") && regexp.MustCompile(`\x1b\[[0-9;]*3[0-9]m`).MatchString(out)
		if hasColor != color {
			t.Errorf("color=%v but output has colour codes=%v", color, hasColor)
		}
	}
}

func TestLiveDepthTrend(t *testing.T) {
	f := newFake()
	h := start(t, f.backend(false), Options{Refresh: 10 * time.Millisecond})
	h.waitFor("orders.dlq")
	depths := []int64{111, 222, 333, 444}
	for _, d := range depths {
		f.mu.Lock()
		f.queues[1].Depth = d
		f.mu.Unlock()
		h.waitFor(" " + itoa64(d) + " ")
	}
	m := h.final()
	hist := m.queues.history["orders.dlq"]
	// The samples hold every depth the refresh saw, in order.
	i := 0
	for _, d := range hist {
		if i < len(depths) && d == depths[i] {
			i++
		}
	}
	if i != len(depths) || hist[0] != 6 {
		t.Fatalf("depth history %v does not hold %v after 6", hist, depths)
	}
}

func TestManyMessagesLoadInPagesAndScroll(t *testing.T) {
	f := newFake()
	f.messages["big"] = sampleMessages("big", 20_000)
	h := start(t, f.backend(false), Options{Queue: "big"})
	h.waitFor("20000 read")
	h.key("end")
	h.waitFor("msg-19999")
	h.key("pgdown", "up")
	h.waitFor("msg-19998")
	m := h.final()
	if m.Cursor() != 19_998 || m.Loaded() != 20_000 {
		t.Fatalf("cursor %d loaded %d", m.Cursor(), m.Loaded())
	}
}

func TestLimitStopsReading(t *testing.T) {
	f := newFake()
	f.messages["big"] = sampleMessages("big", 500)
	h := start(t, f.backend(false), Options{Queue: "big", Limit: 100})
	h.waitFor("100 read")
	m := h.final()
	if m.Loaded() != 100 {
		t.Fatalf("loaded %d, want 100", m.Loaded())
	}
}

// incidentMessages are the dead letters of an incident: customers not
// found (ids vary), 503s naming SKUs, timeouts that stopped two hours ago.
func incidentMessages(queue string) []*broker.Message {
	var out []*broker.Message
	for i := range 45 {
		var reason string
		at := testNow.Add(-time.Duration(i+1) * 10 * time.Minute)
		switch i % 3 {
		case 0:
			reason = fmt.Sprintf("Customer cus_%d not found", 9900+i%4)
		case 1:
			reason = fmt.Sprintf("Inventory service returned 503 for SKU-%d", 4821+i%2)
			at = testNow.Add(-time.Duration(i+1) * 3 * time.Minute)
		case 2:
			reason = fmt.Sprintf("Read timed out after %dms", 5000+i)
			at = at.Add(-2 * time.Hour)
		}
		m := sampleMessages(queue, 1)[0]
		m.ID = fmt.Sprintf("inc-%02d", i)
		m.Body = []byte(fmt.Sprintf(`{"order_id":%d,"error":%q}`, i, reason))
		m.Death.First, m.Death.Last, m.Timestamp = at, at, at
		out = append(out, m)
	}
	return out
}

func TestGroupViewTrendsAndGroupActions(t *testing.T) {
	f := newFake()
	f.messages["orders.dlq"] = incidentMessages("orders.dlq")
	f.expectCall("redrive")
	f.expectCall("discard")
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("45 read", "Customer <id>")
	h.key("s")
	customers := inspect.GroupID("Customer <id> not found")
	h.waitFor("group by reason", "45 messages, 3 groups", customers, "hot: <id> cus_9900×4")
	golden.RequireEqual(t, stripStyles(*h.frame.Load()))

	// R on the cursor's group (sorted by count, then key: customers first).
	h.key("R")
	h.waitFor("redrive 15 message(s) to")
	h.key("enter")
	// A group's redrive offers the canary first; all at once here.
	h.waitFor("redrive 15 message(s): how", "canary", "all at once")
	h.key("down", "enter")
	h.waitFor("redrive 15 message(s)?")
	h.key("y")
	h.waitFor("moved 15 messages to origin", "45 read")
	// Back in the list, reloaded; the group view again, the next group,
	// once the groups are counted again (until then it shows the old ones).
	h.key("esc", "s")
	h.waitFrame(func(frame string) bool {
		return strings.Contains(frame, "group by reason") && strings.Contains(frame, "45 messages, 3 groups") && !strings.Contains(frame, "counting…")
	})
	h.key("down", "D")
	h.waitFor("discard: archive to")
	h.key("enter")
	h.waitFor("discard 15 message(s)?")
	h.key("y")
	h.waitFor("discarded")
	h.final()
	f.verify(t)
	var want []string
	for i := 0; i < 45; i += 3 {
		want = append(want, fmt.Sprintf("inc-%02d", i))
	}
	req := f.redrives[0]
	if d := cmpLines(want, req.IDs); d != "" || !slices.Equal(req.Groups, []string{customers}) || req.Canary {
		t.Fatalf("redrive of the customers group: groups %v, canary %t, ids:\n%s", req.Groups, req.Canary, d)
	}
	dreq := f.discards[0]
	if len(dreq.IDs) != 15 || !slices.Equal(dreq.Groups, []string{inspect.GroupID("Inventory service returned <num> for <id>")}) {
		t.Fatalf("discard of the 503 group: %+v", dreq)
	}
}

// TestGroupRedriveOffersTheCanary: R on a group, enter on the destination
// and enter on the offer ask for a canary redrive, which the confirmation
// explains and the request carries.
func TestGroupRedriveOffersTheCanary(t *testing.T) {
	f := newFake()
	f.messages["orders.dlq"] = incidentMessages("orders.dlq")
	f.expectCall("redrive")
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("45 read", "Customer <id>")
	h.key("s")
	h.waitFor("group by reason", "45 messages, 3 groups")
	h.key("R")
	h.waitFor("redrive 15 message(s) to")
	h.key("enter")
	h.waitFor("redrive 15 message(s): how", "stops if any come back")
	h.key("enter")
	h.waitFor("canary redrive 15 message(s)?", "in steps of 1, 5, 10%, 25%, then the rest")
	h.key("y")
	h.waitFor("moved 15 messages to origin")
	h.final()
	f.verify(t)
	if req := f.redrives[0]; !req.Canary || len(req.IDs) != 15 {
		t.Fatalf("request canary %t with %d ids; want a canary of 15", req.Canary, len(req.IDs))
	}
}

// cmpLines is a unified diff of two lists, "" when equal.
func cmpLines(want, got []string) string {
	w, g := strings.Join(want, "\n")+"\n", strings.Join(got, "\n")+"\n"
	if w == g {
		return ""
	}
	return udiff.Unified("want", "got", w, g)
}

// TestErrorNoticeWordsSettingsForTheTUI: a library error that names
// settings shows the TUI's words (a key, a context entry), never a flag.
func TestErrorNoticeWordsSettingsForTheTUI(t *testing.T) {
	f := newFake()
	f.queueErr = broker.Errorf(broker.ErrNotFound, "list queues", "check %s and %s, or change %s", broker.OptBroker, broker.OptCAFile, broker.OptFilter)
	h := start(t, f.backend(false), Options{})
	want := "list queues: check the broker URL (broker in the context) and the CA file (ca_file in the context), or change the filter (/)"
	h.waitFor("✗ list queues: check the broker URL")
	if got := h.final().Notice(); got != want {
		t.Errorf("notice %q, want %q", got, want)
	}
}

// TestReasonGroupsMergeAsStatsDoes: the g dialog lists the failure groups
// `dlq stats` counts, reasons that differ in one word merged into one
// template, and choosing it shows all of its messages.
func TestReasonGroupsMergeAsStatsDoes(t *testing.T) {
	f := newFake()
	msgs := sampleMessages("orders.dlq", 4)
	for i, typ := range []string{"OrderShipped", "OrderShipped", "OrderCancelled", "InvoiceIssued"} {
		msgs[i].Headers["x-exception-message"] = "Unknown event type " + typ
	}
	f.messages["orders.dlq"] = msgs
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("4 read")
	h.key("g")
	h.waitFor("4 messages, 1 failure group —", "Unknown event type <*>")
	h.key("enter")
	h.waitFor("group "+inspect.GroupID("Unknown event type <*>")+" (Unknown event type <*>)", "4 match")
	if m := h.final(); m.Visible() != 4 {
		t.Fatalf("visible %d, want 4", m.Visible())
	}
}

// The detail view shows a message's failure record, its Java trace folded
// to its causes and their first frames.
func TestDetailShowsTheFailureRecord(t *testing.T) {
	f := newFake()
	m := f.messages["orders.dlq"][0]
	m.Headers = map[string]any{
		"x-exception-message": "Listener method threw exception",
		"x-exception-stacktrace": "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: Listener method threw exception\n" +
			"\tat org.springframework.amqp.rabbit.listener.A.a(A.java:1)\n\tat org.springframework.amqp.rabbit.listener.A.b(A.java:2)\n" +
			"\tat org.springframework.amqp.rabbit.listener.A.c(A.java:3)\n\tat org.springframework.amqp.rabbit.listener.A.d(A.java:4)\n" +
			"Caused by: java.lang.IllegalStateException: price missing for sku 42\n\tat com.example.Orders.handle(Orders.java:17)\n\t... 12 more\n",
		"x-original-exchange":   "shop",
		"x-original-routingKey": "order.created",
	}
	h := start(t, f.backend(false), Options{Queue: "orders.dlq"})
	h.waitFor("6 read")
	h.key("enter")
	h.waitFor("failure · spring", "java.lang.IllegalStateException", "exchange:shop:order.created (from x-original-exchange)",
		"A.c(A.java:3)", "Caused by: java.lang.IllegalStateException: price missing for sku 42", "… 1 lines")
}
