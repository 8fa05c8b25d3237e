package tui

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

type bodyMode int

const (
	bodyPretty bodyMode = iota
	bodyRaw
	bodyHex
)

func (b bodyMode) String() string { return [...]string{"pretty", "raw", "hex"}[b] }

const maxBodyShown = 256 << 10

// detailView shows one message: summary, death timeline, properties,
// headers, attributes and the body.
type detailView struct {
	c      *common
	r      *row
	index  int // position in the message list, for next/prev
	mode   bodyMode
	lines  []string
	offset int
}

func newDetailView(c *common, r *row, index int) detailView {
	d := detailView{c: c, r: r, index: index}
	d.relayout()
	return d
}

func (d *detailView) relayout() {
	if d.r == nil {
		return
	}
	d.lines = d.render()
	d.offset = min(d.offset, max(0, len(d.lines)-1))
}

// updateKey handles a key on the message: it scrolls and cycles the body
// here, and asks the root model for the rest.
func (d detailView) updateKey(k tea.KeyPressMsg) (detailView, tea.Cmd, tea.Msg) {
	km := d.c.keys.detail
	page := max(1, d.c.height-4)
	switch {
	case key.Matches(k, km.Up):
		d.offset--
	case key.Matches(k, km.Down):
		d.offset++
	case key.Matches(k, km.PageUp):
		d.offset -= page
	case key.Matches(k, km.PageDown):
		d.offset += page
	case key.Matches(k, km.Top):
		d.offset = 0
	case key.Matches(k, km.Bottom):
		d.offset = len(d.lines) - page
	case key.Matches(k, km.Raw):
		d.mode = (d.mode + 1) % 3
		d.relayout()
	case key.Matches(k, km.Next):
		return d, nil, openDetailMsg{index: d.index + 1, mode: d.mode}
	case key.Matches(k, km.Prev):
		return d, nil, openDetailMsg{index: d.index - 1, mode: d.mode}
	case key.Matches(k, km.Edit):
		return d, nil, openEditMsg{msg: d.r.msg}
	case key.Matches(k, km.Redrive):
		return d, nil, redriveMsg{ids: []string{d.r.id}, count: 1}
	case key.Matches(k, km.Discard):
		return d, nil, discardMsg{ids: []string{d.r.id}}
	case key.Matches(k, km.Export):
		return d, nil, exportMsg{ids: []string{d.r.id}, label: "message " + d.r.id}
	case key.Matches(k, d.c.keys.global.Back):
		return d, nil, navigateMsg{to: screenMessages}
	}
	d.offset = max(0, min(d.offset, len(d.lines)-page))
	return d, nil, nil
}

func (d *detailView) view(h, w int) []string {
	if d.r == nil {
		return nil
	}
	off := max(0, min(d.offset, len(d.lines)-h))
	end := min(len(d.lines), off+h)
	out := append([]string(nil), d.lines[off:end]...)
	if len(d.lines) > h && len(out) > 0 {
		pct := 100 * end / len(d.lines)
		out[0] = fit(out[0], max(0, w-8)) + d.c.styles.subtle.Render(fitRight(itoa(pct)+"%", 8))
	}
	return out
}

func (d *detailView) render() []string {
	st := d.c.styles
	m := d.r.msg
	now := d.c.now()
	var out []string
	section := func(title string) {
		out = append(out, "", st.title.Render("── "+title+" ")+st.subtle.Render(strings.Repeat("─", max(0, 40-len(title)))))
	}
	// kv shows a name and a value from the message, both through vis.
	kv := func(k, v string) {
		if v == "" {
			return
		}
		out = append(out, "  "+st.subtle.Render(fit(vis(k), 24))+" "+vis(v))
	}
	out = append(out, st.header.Render("message "+vis(d.r.id)))
	if m.Unreadable != "" {
		// dlq's client could not decode it: what is shown came another way
		// (the management API), and every read of the queue stops at it.
		out = append(out, "  "+st.danger.Render(fit("UNREADABLE", 24))+" "+st.danger.Render(vis(m.Unreadable)))
		if m.Position != "" {
			kv("position", m.Position+" (`dlq redrive --position "+m.Position+"` or `dlq discard --position "+m.Position+"` takes it)")
		}
	}
	kv("queue", m.Queue)
	kv("system", string(m.System))
	if d.r.reason != "" {
		out = append(out, "  "+st.subtle.Render(fit("reason", 24))+" "+st.danger.Render(vis(d.r.reason)))
	}
	if age := m.Age(now); age > 0 {
		kv("age", humanAge(age))
	}
	kv("size", humanBytes(int64(m.Size())))
	kv("delivery count", itoa64(m.DeliveryCount))
	if m.AcquiredCount > 0 {
		kv("acquired count", itoa64(m.AcquiredCount))
	}
	if m.Redelivered {
		kv("redelivered", "yes")
	}
	kv("exchange", m.Exchange)
	kv("routing key", m.RoutingKey)
	kv("position", m.Position)
	if !m.Timestamp.IsZero() {
		kv("published", m.Timestamp.UTC().Format(time.RFC3339))
	}

	if f := inspect.FailureOf(m); f != nil {
		section("failure · " + f.Framework)
		kv("exception type", f.ExceptionType)
		kv("message", f.Message)
		if o := f.Origin; o != nil {
			kv("origin", o.Destination().String()+" (from "+o.From+")")
		}
		if f.Attempts > 0 {
			kv("attempts", itoa64(f.Attempts))
		}
		if !f.FailedAt.IsZero() {
			kv("failed at", f.FailedAt.UTC().Format(time.RFC3339))
		}
		kv("consumer", f.Consumer)
		kv("message type", f.MessageType)
		kv("id", f.ID)
		if f.Envelope != "" {
			kv("envelope", f.Envelope+" (the body below is the payload inside it)")
		}
		if f.Stack != "" {
			out = append(out, "  "+st.subtle.Render("stack (folded to its causes)"))
			for _, l := range inspect.FoldStack(strings.Split(strings.TrimRight(f.Stack, "\n"), "\n"), 3) {
				out = append(out, "    "+vis(strings.ReplaceAll(strings.TrimRight(l, "\r"), "\t", "    ")))
			}
		}
	}
	if dth := m.Death; dth != nil {
		section("death history (newest first)")
		out = append(out, deathTimeline(st, dth)...)
	}

	body, kind := m.Body, "binary"
	if d.c.backend.Decode != nil {
		body, kind = d.c.backend.Decode(m)
	} else if broker.IsText(body) {
		kind = "text"
		if _, ok := prettyJSON(body); ok {
			kind = "json"
		}
	}
	section(fmt.Sprintf("body · %s · %s · %s (%s cycles)", kind, humanBytes(int64(len(m.Body))), d.mode, d.c.keys.detail.Raw.Help().Key))
	out = append(out, d.bodyLines(body, kind)...)
	p := m.Properties
	props := [][2]string{
		{"content_type", p.ContentType}, {"content_encoding", p.ContentEncoding},
		{"message_id", p.MessageID}, {"correlation_id", p.CorrelationID},
		{"type", p.Type}, {"app_id", p.AppID}, {"user_id", p.UserID},
		{"reply_to", p.ReplyTo}, {"expiration", p.Expiration},
	}
	if p.DeliveryMode != 0 {
		props = append(props, [2]string{"delivery_mode", fmt.Sprint(p.DeliveryMode)})
	}
	if p.Priority != 0 {
		props = append(props, [2]string{"priority", fmt.Sprint(p.Priority)})
	}
	if !p.Timestamp.IsZero() {
		props = append(props, [2]string{"timestamp", p.Timestamp.UTC().Format(time.RFC3339)})
	}
	var shown [][2]string
	for _, kvp := range props {
		if kvp[1] != "" {
			shown = append(shown, kvp)
		}
	}
	if len(shown) > 0 {
		section("properties")
		for _, kvp := range shown {
			kv(kvp[0], kvp[1])
		}
	}
	if len(m.Headers) > 0 {
		section("headers")
		keys := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := headerString(m.Headers[k])
			if lockedHeader(k) {
				out = append(out, "  "+st.locked.Render(fit(vis(k), 24)+" "+oneLine(v, 200)+"  🔒"))
				continue
			}
			kv(k, oneLine(v, 200))
		}
	}
	if len(m.Attributes) > 0 {
		section("message attributes")
		keys := make([]string, 0, len(m.Attributes))
		for k := range m.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := m.Attributes[k]
			v := a.StringValue
			if a.BinaryValue != nil {
				v = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			out = append(out, "  "+st.subtle.Render(fit(vis(k), 24))+" "+oneLine(v, 200)+st.subtle.Render(" ("+vis(a.DataType)+")"))
		}
	}
	if len(m.SystemAttributes) > 0 {
		section("system attributes")
		keys := make([]string, 0, len(m.SystemAttributes))
		for k := range m.SystemAttributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv(k, m.SystemAttributes[k])
		}
	}

	return out
}

func (d *detailView) bodyLines(body []byte, kind string) []string {
	st := d.c.styles
	m := d.r.msg
	var text string
	switch d.mode {
	case bodyHex:
		text = hexDump(m.Body, maxBodyShown/4)
	case bodyRaw:
		if broker.IsText(m.Body) {
			text = string(m.Body[:min(len(m.Body), maxBodyShown)])
		} else {
			text = "(binary: shown as hex)\n" + hexDump(m.Body, maxBodyShown/4)
		}
	default:
		shown := body[:min(len(body), maxBodyShown)]
		switch {
		case kind == "json" || (kind != "binary" && broker.IsText(shown)):
			if p, ok := prettyJSON(shown); ok {
				text = highlightJSON(st, p)
			} else {
				text = string(shown)
			}
		case !broker.IsText(shown):
			text = hexDump(shown, maxBodyShown/4)
		default:
			text = string(shown)
		}
		if len(body) > maxBodyShown {
			text += fmt.Sprintf("\n… %s more not shown", humanBytes(int64(len(body)-maxBodyShown)))
		}
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + strings.ReplaceAll(l, "\t", "    ")
	}
	return lines
}

// deathTimeline draws the death history newest first, one entry a line,
// in the order of broker.Death.History and of `dlq show`.
func deathTimeline(st styles, d *broker.Death) []string {
	var out []string
	h := d.History
	if len(h) == 0 {
		h = []broker.DeathEntry{{Reason: d.Reason, Queue: d.Queue, Exchange: d.Exchange, RoutingKeys: d.RoutingKeys, Count: d.Count, Time: d.First}}
	}
	for i, e := range h {
		when := "                    "
		if !e.Time.IsZero() {
			when = e.Time.UTC().Format("2006-01-02 15:04:05Z")
		}
		glyph := "├─"
		if i == len(h)-1 {
			glyph = "└─"
		}
		if i == 0 {
			glyph = "┌─"
			if len(h) == 1 {
				glyph = "──"
			}
		}
		line := fmt.Sprintf("  %s %s %s in %s", st.subtle.Render(when), glyph, st.danger.Render(vis(e.Reason)), st.header.Render(vis(e.Queue)))
		if e.Count > 1 {
			line += fmt.Sprintf(" ×%d", e.Count)
		}
		if e.Exchange != "" || len(e.RoutingKeys) > 0 {
			line += st.subtle.Render(fmt.Sprintf("  via exchange %q key %s", e.Exchange, vis(strings.Join(e.RoutingKeys, ","))))
		}
		out = append(out, line)
	}
	sum := fmt.Sprintf("  died %d time(s)", d.Count)
	if !d.First.IsZero() {
		sum += " · first " + d.First.UTC().Format(time.RFC3339)
	}
	if !d.Last.IsZero() {
		sum += " · last " + d.Last.UTC().Format(time.RFC3339)
	}
	if d.QueueARN != "" {
		sum += " · source " + d.QueueARN
	}
	out = append(out, st.subtle.Render(sum))
	return out
}

func headerString(v any) string {
	switch x := v.(type) {
	case []byte:
		if broker.IsText(x) {
			return string(x)
		}
		return "base64:" + base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case string:
		return x
	}
	b, err := jsonMarshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
