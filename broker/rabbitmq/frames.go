package rabbitmq

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// amqp091-go refuses, on purpose, a message whose headers nest tables or
// arrays deeper than clientMaxDepth or hold more than clientMaxEntries
// entries (a guard against stack and heap exhaustion), and a header table it
// cannot parse. Its reader then closes the connection, and RabbitMQ returns
// every delivery the connection held: on a quorum queue each with
// x-delivery-count +1, and on RabbitMQ 4.3 at the back of the queue, as a
// failed delivery. One such message would cost every other message dlq held
// a delivery, and reorder the queue, on every read.
//
// guardFrames keeps the connection: it reads the frames the broker sends
// before amqp091-go does, checks the headers table of each content header
// against the client's limits, and replaces a table the client would refuse
// with one header, unreadableHeader, that says why (marked with this
// process's nonce, so that a publisher cannot forge it). The client then
// reads the message as any other; fromDelivery marks it Unreadable, and the
// consumers stop at it and give back what they hold with an explicit nack.
// Every other byte passes unchanged, and the guard never changes what dlq
// sends: a delivery so marked is never republished (its headers are not
// the message's).

// unreadableHeader is the one header of a message whose headers the guard
// replaced.
const unreadableHeader = "x-dlq-unreadable"

// unreadableNonce marks the guard's own unreadableHeader.
var unreadableNonce = newTag("guard")

// maxGuardedHeader bounds the content header frames the guard reads whole;
// a larger one (amqp091-go refuses frames above the negotiated frame_max,
// 128 KiB by default) passes unchanged.
const maxGuardedHeader = 16 << 20

type guardedConn struct {
	net.Conn
	r    *bufio.Reader
	out  []byte // the rest of a frame the guard read whole
	buf  []byte // the content header frame read last
	pass int64  // bytes of the current frame still to pass unchanged
	raw  bool   // not a frame stream (or its end): pass everything
}

// guardFrames wraps c (see above). Only amqp091-go's reader goroutine
// reads.
func guardFrames(c net.Conn) net.Conn {
	return &guardedConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer)}
}

const (
	frameHeaderLen = 7
	frameEndOctet  = 0xCE
)

func (g *guardedConn) Read(p []byte) (int, error) {
	for {
		switch {
		case len(g.out) > 0:
			n := copy(p, g.out)
			g.out = g.out[n:]
			return n, nil
		case g.raw:
			return g.r.Read(p)
		case g.pass > 0:
			if int64(len(p)) > g.pass {
				p = p[:g.pass]
			}
			n, err := g.r.Read(p)
			g.pass -= int64(n)
			return n, err
		}
		h, err := g.r.Peek(frameHeaderLen)
		if err != nil {
			// The stream ends (or fails) within a frame header: the
			// client gets what there is, then the error.
			g.raw = true
			continue
		}
		typ, size := h[0], int64(binary.BigEndian.Uint32(h[3:7]))
		switch typ {
		case 1, 3, 8: // method, body, heartbeat
			g.pass = frameHeaderLen + size + 1
			continue
		case 2: // content header
		default:
			// Not a frame (a server's protocol header, say): the client
			// decides what it is.
			g.raw = true
			continue
		}
		if size > maxGuardedHeader {
			g.pass = frameHeaderLen + size + 1
			continue
		}
		// g.out is consumed before the next frame is read: one buffer does.
		if need := int(frameHeaderLen + size + 1); cap(g.buf) < need {
			g.buf = make([]byte, need)
		} else {
			g.buf = g.buf[:need]
		}
		frame := g.buf
		n, err := io.ReadFull(g.r, frame)
		if err != nil {
			g.out, g.raw = frame[:n], true
			continue
		}
		g.out = guardHeaderFrame(frame)
	}
}

// guardHeaderFrame returns frame, or, when the client would refuse its
// headers table, the frame with that table replaced (see above).
func guardHeaderFrame(frame []byte) []byte {
	if frame[len(frame)-1] != frameEndOctet {
		return frame
	}
	payload := frame[frameHeaderLen : len(frame)-1]
	// class-id, weight, body size, property flags.
	if len(payload) < 14 || binary.BigEndian.Uint16(payload[0:2]) != 60 {
		return frame
	}
	flags := binary.BigEndian.Uint16(payload[12:14])
	if flags&1 != 0 {
		return frame // a continued flag word: basic has no such properties
	}
	off := 14
	for _, bit := range []uint16{0x8000, 0x4000} { // content-type, content-encoding
		if flags&bit != 0 {
			if off >= len(payload) {
				return frame
			}
			off += 1 + int(payload[off])
		}
	}
	if flags&0x2000 == 0 || off+4 > len(payload) {
		return frame
	}
	n := int64(binary.BigEndian.Uint32(payload[off:]))
	end := int64(off) + 4 + n
	if end > int64(len(payload)) {
		return frame // the client's own parse fails, as it should
	}
	why := checkTable(payload[off+4:end], 0)
	if why == "" {
		return frame
	}
	marker := encodeMarker(why)
	out := make([]byte, 0, len(frame)-int(n)+len(marker))
	out = append(out, frame[:frameHeaderLen]...)
	out = append(out, payload[:off]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(marker)))
	out = append(out, marker...)
	out = append(out, payload[end:]...)
	binary.BigEndian.PutUint32(out[3:7], uint32(len(out)-frameHeaderLen))
	return append(out, frameEndOctet)
}

// encodeMarker is the table {unreadableHeader: "NONCE why"}.
func encodeMarker(why string) []byte {
	v := unreadableNonce + " " + why
	b := []byte{byte(len(unreadableHeader))}
	b = append(b, unreadableHeader...)
	b = append(b, 'S')
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// unreadableMark says why the guard replaced the headers of d, if it did.
func unreadableMark(h amqp.Table) (string, bool) {
	if len(h) != 1 {
		return "", false
	}
	s, ok := h[unreadableHeader].(string)
	if !ok {
		return "", false
	}
	return strings.CutPrefix(s, unreadableNonce+" ")
}

// The reasons, as unreadableWhy words them for the management API's copy.
var (
	whyDeep      = fmt.Sprintf("its headers nest tables or arrays more than %d deep, and dlq's AMQP client reads at most %d", clientMaxDepth, clientMaxDepth)
	whyEntries   = fmt.Sprintf("its headers hold a table or array of more than %d entries, and dlq's AMQP client reads at most %d", clientMaxEntries, clientMaxEntries)
	whyMalformed = "its headers are not a well-formed AMQP field table"
)

// checkTable checks the content of a field table at depth (the headers
// table is at 0) as amqp091-go's readTableDepth reads it, and says why the
// client would refuse it ("" when it would not). It is at least as strict
// as the client: a table with more than clientMaxEntries entries is refused
// even where repeated keys would keep the client's map within the limit.
func checkTable(b []byte, depth int) string { return checkContainer(b, depth, true) }

// checkArray checks the content of a field array at depth, as
// readArrayDepth reads it.
func checkArray(b []byte, depth int) string { return checkContainer(b, depth, false) }

// checkContainer checks the entries of a table (keyed) or an array.
func checkContainer(b []byte, depth int, keyed bool) string {
	if depth > clientMaxDepth {
		return whyDeep
	}
	entries := 0
	for len(b) > 0 {
		if keyed {
			k := 1 + int(b[0])
			if k > len(b) {
				return whyMalformed
			}
			b = b[k:]
		}
		rest, why := checkField(b, depth)
		if why != "" {
			return why
		}
		if entries++; entries > clientMaxEntries {
			return whyEntries
		}
		b = rest
	}
	return ""
}

// checkField checks one typed field value within a container at depth, and
// returns what follows it.
func checkField(b []byte, depth int) ([]byte, string) {
	if len(b) < 1 {
		return nil, whyMalformed
	}
	typ, b := b[0], b[1:]
	n := -1
	switch typ {
	case 'V':
		n = 0
	case 't', 'B', 'b':
		n = 1
	case 's', 'u':
		n = 2
	case 'I', 'i', 'f':
		n = 4
	case 'D':
		n = 5
	case 'l', 'd', 'T':
		n = 8
	case 'S', 'x', 'F', 'A':
	default:
		return nil, fmt.Sprintf("its headers hold a field of type %q, which dlq's AMQP client does not read", typ)
	}
	if n >= 0 {
		if n > len(b) {
			return nil, whyMalformed
		}
		return b[n:], ""
	}
	if len(b) < 4 {
		return nil, whyMalformed
	}
	size := int64(binary.BigEndian.Uint32(b))
	if size > math.MaxInt32 || 4+size > int64(len(b)) {
		return nil, whyMalformed
	}
	body, rest := b[4:4+size], b[4+size:]
	switch typ {
	case 'F':
		if why := checkTable(body, depth+1); why != "" {
			return nil, why
		}
	case 'A':
		if why := checkArray(body, depth+1); why != "" {
			return nil, why
		}
	}
	return rest, ""
}
