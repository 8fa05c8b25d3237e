package tui

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/dlq-tools/dlq/internal/human"
)

// fit truncates or pads s (which may hold ANSI styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// cutWords shortens plain text s to at most w cells at a token boundary
// (a space, or after / : , ; =), ending in "…"; a first token longer than
// half of w is cut where it must be.
func cutWords(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	t := ansi.Truncate(s, w-1, "")
	if i := strings.LastIndexAny(t, " /:,;="); i >= (w-1)/2 {
		if t[i] != ' ' {
			i++ // keep the separator
		}
		t = t[:i]
	}
	return strings.TrimRight(t, " ") + "…"
}

// fitRight right-aligns s in w cells.
func fitRight(s string, w int) string {
	n := ansi.StringWidth(s)
	if n >= w {
		return fit(s, w)
	}
	return strings.Repeat(" ", w-n) + s
}

// oneLine flattens whitespace so that a preview takes one row, writes
// control characters and escape sequences visibly (vis), and keeps at most
// max runes.
func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' || r == ' ' {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	out := vis(b.String())
	if utf8.RuneCountInString(out) > max {
		out = string([]rune(out)[:max])
	}
	return out
}

// vis is how every value from a message or a broker (an ID, a queue, a
// reason, a header) reaches the screen: control characters and escape
// sequences are written as Go escapes, so they show instead of acting.
var vis = human.Visible

// humanAge and humanBytes are the formatters the CLI uses too.
var (
	humanAge   = human.Age
	humanBytes = human.Bytes
)

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last w samples, scaled between their min and max.
func sparkline(samples []int64, w int) string {
	if len(samples) > w {
		samples = samples[len(samples)-w:]
	}
	if len(samples) == 0 {
		return ""
	}
	lo, hi := samples[0], samples[0]
	for _, s := range samples {
		lo, hi = min(lo, s), max(hi, s)
	}
	var b strings.Builder
	for _, s := range samples {
		i := 0
		if hi > lo {
			i = int((s - lo) * int64(len(sparkRunes)-1) / (hi - lo))
		} else if hi > 0 {
			i = len(sparkRunes) / 2
		}
		b.WriteRune(sparkRunes[i])
	}
	return b.String()
}

// bar draws a horizontal bar of w cells filled to frac.
func bar(frac float64, w int) (fill, empty string) {
	if w <= 0 {
		return "", ""
	}
	frac = max(0, min(1, frac))
	eighths := int(frac*float64(w*8) + 0.5)
	full := eighths / 8
	rest := eighths % 8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if rest > 0 && full < w {
		b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[rest])
		full++
	}
	return b.String(), strings.Repeat(" ", w-full)
}

// prettyJSON indents a JSON body; ok is false when it is not JSON.
func prettyJSON(body []byte) (string, bool) {
	if !json.Valid(body) {
		return "", false
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return "", false
	}
	return out.String(), true
}

// highlightJSON colours indented JSON token by token. It never changes the
// text, only wraps tokens in styles, so a body that is not valid JSON comes
// out unchanged apart from colour.
func highlightJSON(st styles, s string) string {
	if !st.color {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(s) {
				j++
			}
			tok := s[i:min(j, len(s))]
			// A key is a string followed by a colon.
			k := j
			for k < len(s) && (s[k] == ' ') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				b.WriteString(st.jsonKey.Render(tok))
			} else {
				b.WriteString(st.jsonString.Render(tok))
			}
			i = j
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && strings.IndexByte("0123456789.eE+-", s[j]) >= 0 {
				j++
			}
			b.WriteString(st.jsonNumber.Render(s[i:j]))
			i = j
		case strings.HasPrefix(s[i:], "true"), strings.HasPrefix(s[i:], "null"):
			b.WriteString(st.jsonLiteral.Render(s[i : i+4]))
			i += 4
		case strings.HasPrefix(s[i:], "false"):
			b.WriteString(st.jsonLiteral.Render(s[i : i+5]))
			i += 5
		case strings.IndexByte("{}[],:", c) >= 0:
			b.WriteString(st.jsonPunct.Render(s[i : i+1]))
			i++
		default:
			j := i + 1
			for j < len(s) && strings.IndexByte("\"-0123456789tfn{}[],:", s[j]) < 0 {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		}
	}
	return b.String()
}

// hexDump renders bytes like `hexdump -C`, at most maxBytes of them.
func hexDump(body []byte, maxBytes int) string {
	truncated := len(body) > maxBytes
	if truncated {
		body = body[:maxBytes]
	}
	s := hex.Dump(body)
	if truncated {
		s += fmt.Sprintf("… %d more bytes not shown\n", len(body)-maxBytes)
	}
	return s
}

// overlay places box centred over the lines of base (both plain rows of the
// same screen), replacing the rows it covers.
func overlay(base []string, box string, width int) []string {
	bl := strings.Split(box, "\n")
	top := max(0, (len(base)-len(bl))/2)
	out := append([]string(nil), base...)
	for i, l := range bl {
		if top+i >= len(out) {
			break
		}
		w := ansi.StringWidth(l)
		left := max(0, (width-w)/2)
		out[top+i] = strings.Repeat(" ", left) + l
	}
	return out
}
