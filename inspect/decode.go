package inspect

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/broker"
)

// MaxInflated bounds how large a compressed body may grow when inflated, so
// that a hostile message cannot exhaust memory.
const MaxInflated = 64 << 20

// BodyKind says what a body turned out to be.
type BodyKind string

const (
	BodyEmpty  BodyKind = "empty"
	BodyJSON   BodyKind = "json"
	BodyText   BodyKind = "text"
	BodyBinary BodyKind = "binary"
)

// Decoded is a message body made readable: inflated when its content
// encoding (or gzip magic bytes) says so, then classified as JSON, text or
// binary.
type Decoded struct {
	Kind BodyKind
	// Encoding is the content encoding that was inflated ("gzip",
	// "deflate"), empty when the body was used as it came.
	Encoding string
	// Bytes is the body after inflation.
	Bytes []byte
	// Size is the body's size on the wire, before inflation.
	Size int
	// Value is the parsed JSON for BodyJSON (numbers as json.Number).
	Value any
	// Err is why inflation failed, when it did; the body is then shown as it
	// came.
	Err error
}

// Decode inflates and classifies the body of m.
func Decode(m *broker.Message) Decoded {
	d := Decoded{Bytes: m.Body, Size: len(m.Body)}
	enc := strings.ToLower(strings.TrimSpace(m.Properties.ContentEncoding))
	if enc != "" || isGzip(m.Body) {
		b, used, err := inflate(enc, m.Body)
		switch {
		case err != nil:
			d.Err = err
		case used != "":
			d.Bytes, d.Encoding = b, used
		}
	}
	switch {
	case len(d.Bytes) == 0:
		d.Kind = BodyEmpty
	default:
		if v, ok := parseJSON(d.Bytes); ok {
			d.Kind, d.Value = BodyJSON, v
		} else if utf8.Valid(d.Bytes) {
			d.Kind = BodyText
		} else {
			d.Kind = BodyBinary
		}
	}
	return d
}

func isGzip(b []byte) bool { return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8 }

// inflate undoes a content encoding. It returns the encoding it undid, or ""
// when the encoding is not a compression it knows (identity, utf-8, …).
func inflate(enc string, b []byte) ([]byte, string, error) {
	var r io.Reader
	used := enc
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, "", fmt.Errorf("gzip body: %w", err)
		}
		r, used = zr, "gzip"
	case "deflate", "zlib":
		// HTTP's "deflate" is zlib-wrapped; some producers send raw deflate.
		zr, err := zlib.NewReader(bytes.NewReader(b))
		if err != nil {
			r = flate.NewReader(bytes.NewReader(b))
		} else {
			r = zr
		}
		used = "deflate"
	default:
		if !isGzip(b) {
			return b, "", nil
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return b, "", nil
		}
		r, used = zr, "gzip"
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxInflated+1))
	if err != nil {
		return nil, "", fmt.Errorf("%s body: %w", used, err)
	}
	if len(out) > MaxInflated {
		return nil, "", errors.New(used + " body inflates beyond 64 MiB")
	}
	return out, used, nil
}

// Text is the body as text: JSON and text as they are, binary as base64.
func (d Decoded) Text() string {
	if d.Kind == BodyBinary {
		return base64.StdEncoding.EncodeToString(d.Bytes)
	}
	return string(d.Bytes)
}

// Base64 is the (inflated) body in standard base64.
func (d Decoded) Base64() string { return base64.StdEncoding.EncodeToString(d.Bytes) }

// HexDump is a hex dump of the first max bytes (all when max <= 0).
func (d Decoded) HexDump(max int) string {
	b := d.Bytes
	more := ""
	if max > 0 && len(b) > max {
		b = b[:max]
		more = fmt.Sprintf("… %d more bytes\n", len(d.Bytes)-max)
	}
	return hex.Dump(b) + more
}

// Pretty renders the body for a person: JSON indented (and coloured with
// ANSI escapes when color is true), text as it is, binary as a hex dump.
func (d Decoded) Pretty(color bool) string {
	switch d.Kind {
	case BodyJSON:
		var buf bytes.Buffer
		if err := json.Indent(&buf, d.Bytes, "", "  "); err != nil {
			return string(d.Bytes)
		}
		s := strings.TrimSpace(buf.String())
		if color {
			return colorJSON(s)
		}
		return s
	case BodyBinary:
		return d.HexDump(4096)
	default:
		return string(d.Bytes)
	}
}

// Preview is a one-line preview of at most width runes: compact JSON, text
// with control characters escaped, or a note and the first bytes in hex.
func (d Decoded) Preview(width int) string {
	var s string
	switch d.Kind {
	case BodyEmpty:
		return ""
	case BodyJSON:
		var buf bytes.Buffer
		if json.Compact(&buf, d.Bytes) == nil {
			s = buf.String()
		} else {
			s = string(d.Bytes)
		}
	case BodyText:
		s = string(d.Bytes)
	default:
		n := min(len(d.Bytes), 16)
		s = fmt.Sprintf("<binary %d bytes> %x", len(d.Bytes), d.Bytes[:n])
	}
	return oneLine(s, width)
}

// oneLine replaces line breaks and control characters with spaces, squeezes
// runs of white space, and truncates to width runes with an ellipsis.
func oneLine(s string, width int) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			if space || n == 0 {
				continue
			}
			space = true
			r = ' '
		} else {
			space = false
		}
		if width > 0 && n >= width {
			out := []rune(b.String())
			if width > 1 {
				return strings.TrimRight(string(out[:width-1]), " ") + "…"
			}
			return "…"
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// ANSI colours for JSON, as jq uses them.
const (
	ansiReset  = "\x1b[0m"
	ansiKey    = "\x1b[34;1m"
	ansiString = "\x1b[32m"
	ansiNumber = "\x1b[0m"
	ansiLit    = "\x1b[33m"
	ansiNull   = "\x1b[90m"
)

// colorJSON adds ANSI colours to valid, indented JSON.
func colorJSON(s string) string {
	b := []byte(s)
	var out strings.Builder
	out.Grow(len(b) * 3 / 2)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			end, _ := scanString(b, i)
			if end < 0 {
				out.Write(b[i:])
				return out.String()
			}
			j := skipWS(b, end)
			col := ansiString
			if j < len(b) && b[j] == ':' {
				col = ansiKey
			}
			out.WriteString(col)
			out.Write(b[i:end])
			out.WriteString(ansiReset)
			i = end
		case c == 't' || c == 'f' || c == 'n' || c == '-' || (c >= '0' && c <= '9'):
			end := skipValue(b, i)
			if end < 0 {
				end = len(b)
			}
			col := ansiNumber
			if c == 'n' {
				col = ansiNull
			} else if c == 't' || c == 'f' {
				col = ansiLit
			}
			out.WriteString(col)
			out.Write(b[i:end])
			out.WriteString(ansiReset)
			i = end
		default:
			out.WriteByte(c)
			i++
		}
	}
	return out.String()
}
