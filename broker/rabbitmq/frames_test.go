package rabbitmq

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
)

// Hand-encoded AMQP 0-9-1: field tables and frames, as RabbitMQ sends them.

func shortstr(s string) []byte { return append([]byte{byte(len(s))}, s...) }

func longBytes(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// entry is one table entry: key, type and the value's encoding.
func entry(key string, typ byte, value []byte) []byte {
	return append(append(shortstr(key), typ), value...)
}

// nested is a table whose innermost table sits depth levels below it.
func nested(depth int) []byte {
	t := entry("leaf", 'S', longBytes([]byte("x")))
	for range depth {
		t = entry("n", 'F', longBytes(t))
	}
	return t
}

// nestedArrays is like nested with arrays.
func nestedArrays(depth int) []byte {
	a := append([]byte{'I'}, 0, 0, 0, 7)
	for range depth - 1 {
		a = append([]byte{'A'}, longBytes(a)...)
	}
	return entry("a", 'A', longBytes(a))
}

func entries(n int) []byte {
	var t []byte
	for i := range n {
		t = append(t, entry(strings.Repeat("k", 1+i%200)+string(rune('a'+i%26)), 'V', nil)...)
	}
	return t
}

// headerFrame is a basic content header frame with content-type, headers
// (table, the table's content) and message-id.
func headerFrame(table []byte) []byte {
	p := binary.BigEndian.AppendUint16(nil, 60)
	p = binary.BigEndian.AppendUint16(p, 0)
	p = binary.BigEndian.AppendUint64(p, 5)
	p = binary.BigEndian.AppendUint16(p, 0x8000|0x2000|0x0100)
	p = append(p, shortstr("text/plain")...)
	p = append(p, longBytes(table)...)
	p = append(p, shortstr("id-1")...)
	return frameOf(2, p)
}

func frameOf(typ byte, payload []byte) []byte {
	f := []byte{typ, 0, 1}
	f = binary.BigEndian.AppendUint32(f, uint32(len(payload)))
	f = append(f, payload...)
	return append(f, frameEndOctet)
}

func TestCheckTableMirrorsTheClientsLimits(t *testing.T) {
	for _, c := range []struct {
		name  string
		table []byte
		why   string
	}{
		{"empty", nil, ""},
		{"every type", bytes.Join([][]byte{
			entry("t", 't', []byte{1}), entry("b", 'b', []byte{1}), entry("B", 'B', []byte{1}),
			entry("s", 's', []byte{0, 1}), entry("u", 'u', []byte{0, 1}), entry("I", 'I', []byte{0, 0, 0, 1}),
			entry("i", 'i', []byte{0, 0, 0, 1}), entry("f", 'f', make([]byte, 4)), entry("l", 'l', make([]byte, 8)),
			entry("d", 'd', make([]byte, 8)), entry("T", 'T', []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
			entry("D", 'D', make([]byte, 5)), entry("V", 'V', nil), entry("S", 'S', longBytes([]byte("str"))),
			entry("x", 'x', longBytes([]byte{0, 1, 2})), entry("A", 'A', longBytes(nil)), entry("F", 'F', longBytes(nil)),
		}, nil), ""},
		// amqp091-go: the headers table is at depth 0, and a table or
		// array below depth 32 is refused.
		{"tables 32 deep", nested(32), ""},
		{"tables 33 deep", nested(33), whyDeep},
		{"arrays 32 deep", nestedArrays(32), ""},
		{"arrays 33 deep", nestedArrays(33), whyDeep},
		{"8192 entries", entries(8192), ""},
		{"8193 entries", entries(8193), whyEntries},
		{"an array of 8193", entry("a", 'A', longBytes(bytes.Repeat([]byte{'V'}, 8193))), whyEntries},
		{"an unknown type", entry("z", 'Z', nil), `its headers hold a field of type 'Z', which dlq's AMQP client does not read`},
		{"a key past the end", []byte{9, 'k'}, whyMalformed},
		{"a value past the end", entry("I", 'I', []byte{0, 1}), whyMalformed},
		{"a string past the end", entry("S", 'S', []byte{0, 0, 0, 9, 'x'}), whyMalformed},
		{"a negative byte array", entry("x", 'x', []byte{0xff, 0xff, 0xff, 0xff}), whyMalformed},
	} {
		if got := checkTable(c.table, 0); got != c.why {
			t.Errorf("%s: checkTable says %q, want %q", c.name, got, c.why)
		}
	}
}

// TestGuardFrames: the guard passes every frame unchanged but a content
// header whose headers the client would refuse, which it replaces with the
// marked table (the frame's size with it), however the stream is cut.
func TestGuardFrames(t *testing.T) {
	method := frameOf(1, []byte{0, 60, 0, 60, 1, 2, 3})
	body := frameOf(3, []byte("hello"))
	heartbeat := frameOf(8, nil)
	good := headerFrame(nested(32))
	bad := headerFrame(nested(40))
	var stream []byte
	for _, f := range [][]byte{method, good, body, heartbeat, method, bad, body} {
		stream = append(stream, f...)
	}
	want := bytes.Join([][]byte{method, good, body, heartbeat, method, headerFrame(encodeMarker(whyDeep)), body}, nil)
	for _, cut := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"a byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
	} {
		got, err := io.ReadAll(cut.r(guardFrames(pipeOf(stream))))
		if err != nil {
			t.Fatalf("%s: %v", cut.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the guarded stream differs from the one expected at byte %d of %d/%d", cut.name, firstDiff(got, want), len(got), len(want))
		}
	}
	why, ok := unreadableMark(map[string]any{unreadableHeader: unreadableNonce + " " + whyDeep})
	if !ok || why != whyDeep {
		t.Errorf("unreadableMark of the guard's marker: %q, %v", why, ok)
	}
	if _, ok := unreadableMark(map[string]any{unreadableHeader: "forged " + whyDeep}); ok {
		t.Error("unreadableMark took a publisher's header for the guard's marker")
	}
}

// TestGuardFramesPassesWhatIsNotAFrame: a protocol header (the broker's
// answer to a version it does not speak), a stream cut within a frame, and
// a frame larger than the guard reads whole all reach the client as sent.
func TestGuardFramesPassesWhatIsNotAFrame(t *testing.T) {
	bad := headerFrame(nested(40))
	for _, c := range []struct {
		name   string
		stream []byte
	}{
		{"protocol header", []byte("AMQP\x00\x00\x09\x01")},
		{"cut in a frame header", bad[:5]},
		{"cut in a content header", bad[:len(bad)-3]},
		{"a frame end that is not one", append(bad[:len(bad)-1:len(bad)-1], 0)},
	} {
		got, err := io.ReadAll(guardFrames(pipeOf(c.stream)))
		if err != nil || !bytes.Equal(got, c.stream) {
			t.Errorf("%s: read %q (%v), want it unchanged", c.name, got, err)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// pipeOf is a net.Conn that reads stream, then EOF.
func pipeOf(stream []byte) net.Conn {
	c, s := net.Pipe()
	go func() {
		_, _ = s.Write(stream)
		_ = s.Close()
	}()
	return c
}

// BenchmarkGuardFrames reads 10,000 deliveries (method, content header with
// an x-death record and a few headers, 1 KiB body) through the guard, and
// without it for comparison.
func BenchmarkGuardFrames(b *testing.B) {
	death := entry("count", 'l', make([]byte, 8))
	death = append(death, entry("queue", 'S', longBytes([]byte("orders")))...)
	death = append(death, entry("reason", 'S', longBytes([]byte("rejected")))...)
	death = append(death, entry("time", 'T', make([]byte, 8))...)
	death = append(death, entry("routing-keys", 'A', longBytes(append([]byte{'S'}, longBytes([]byte("orders"))...)))...)
	table := entry("x-death", 'A', longBytes(append([]byte{'F'}, longBytes(death)...)))
	table = append(table, entry("x-first-death-queue", 'S', longBytes([]byte("orders")))...)
	table = append(table, entry("x-exception", 'S', longBytes(bytes.Repeat([]byte("e"), 200)))...)
	one := bytes.Join([][]byte{frameOf(1, make([]byte, 40)), headerFrame(table), frameOf(3, bytes.Repeat([]byte("b"), 1024))}, nil)
	stream := bytes.Repeat(one, 10_000)
	for _, guarded := range []bool{false, true} {
		name := "unguarded"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				var c net.Conn = pipeOf(stream)
				if guarded {
					c = guardFrames(c)
				}
				if _, err := io.Copy(io.Discard, bufioReader{c}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bufioReader reads as amqp091-go does, through a 4 KiB buffer.
type bufioReader struct{ r io.Reader }

func (r bufioReader) Read(p []byte) (int, error) { return r.r.Read(p[:min(len(p), 4096)]) }
