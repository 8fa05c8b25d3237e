package brokertest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// AMQPWire is a TCP proxy in front of a RabbitMQ node (AMQP 0-9-1) that
// follows the frames of every connection through it and records into its
// WireLedger: a publisher confirm confirms its message (unless the broker
// returned it unroutable), and a basic.ack of a delivery is checked.
type AMQPWire struct {
	*WireLedger
	ln       net.Listener
	upstream string
	// open counts the client connections open through the proxy.
	open atomic.Int32
}

// NewAMQPWire starts a proxy to upstream (host:port) that records into
// ledger; several proxies (one per cluster node) may share one. It stops
// when the test ends.
func NewAMQPWire(t testing.TB, upstream string, ledger *WireLedger) *AMQPWire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &AMQPWire{WireLedger: ledger, ln: ln, upstream: upstream}
	go w.accept()
	t.Cleanup(func() { ln.Close() })
	return w
}

// Addr is the proxy's host:port.
func (w *AMQPWire) Addr() string { return w.ln.Addr().String() }

// Open is how many client connections are open through the proxy now.
func (w *AMQPWire) Open() int { return int(w.open.Load()) }

func (w *AMQPWire) accept() {
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		go w.proxy(c)
	}
}

func (w *AMQPWire) proxy(client net.Conn) {
	w.open.Add(1)
	defer w.open.Add(-1)
	defer client.Close()
	server, err := net.Dial("tcp", w.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	st := &amqpConnState{ledger: w.WireLedger, chans: map[uint16]*amqpChan{}}
	done := make(chan struct{}, 2)
	go func() { _ = st.pump(client, server, true); server.Close(); done <- struct{}{} }()
	go func() { _ = st.pump(server, client, false); client.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// amqpConnState follows one connection's channels.
type amqpConnState struct {
	ledger *WireLedger
	mu     sync.Mutex
	chans  map[uint16]*amqpChan
}

type amqpChan struct {
	confirming bool
	nextSeq    uint64
	pending    map[uint64]string // publish sequence number → message ID
	delivered  map[uint64]string // delivery tag → message ID
	returned   map[string]int    // IDs the broker returned (unroutable)
	// The message whose content frames are being read, per direction.
	in, out *amqpContent
}

// amqpContent collects a message's body across frames.
type amqpContent struct {
	size int
	body []byte
	done func(id string)
}

func (s *amqpConnState) ch(n uint16) *amqpChan {
	c := s.chans[n]
	if c == nil {
		c = &amqpChan{pending: map[uint64]string{}, delivered: map[uint64]string{}, returned: map[string]int{}}
		s.chans[n] = c
	}
	return c
}

// pump copies frames from src to dst, following each before it passes on.
func (s *amqpConnState) pump(src, dst net.Conn, fromClient bool) error {
	r := bufio.NewReaderSize(src, 64<<10)
	if fromClient {
		hdr := make([]byte, 8) // "AMQP" 0 0 9 1
		if _, err := io.ReadFull(r, hdr); err != nil {
			return err
		}
		if _, err := dst.Write(hdr); err != nil {
			return err
		}
	}
	hdr := make([]byte, 7)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return err
		}
		size := binary.BigEndian.Uint32(hdr[3:])
		frame := make([]byte, 7+int(size)+1)
		copy(frame, hdr)
		if _, err := io.ReadFull(r, frame[7:]); err != nil {
			return err
		}
		s.follow(hdr[0], binary.BigEndian.Uint16(hdr[1:]), frame[7:7+size], fromClient)
		if _, err := dst.Write(frame); err != nil {
			return err
		}
	}
}

// follow reads one frame.
func (s *amqpConnState) follow(typ byte, chn uint16, p []byte, fromClient bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ch(chn)
	content := &c.in
	if fromClient {
		content = &c.out
	}
	switch typ {
	case 1: // method
		if len(p) < 4 {
			return
		}
		s.method(c, chn, binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]), p[4:], fromClient)
	case 2: // content header: class, weight, body size
		if *content == nil || len(p) < 12 {
			return
		}
		(*content).size = int(binary.BigEndian.Uint64(p[4:]))
		if (*content).size == 0 {
			(*content).done("")
			*content = nil
		}
	case 3: // body
		if *content == nil {
			return
		}
		(*content).body = append((*content).body, p...)
		if len((*content).body) >= (*content).size {
			(*content).done(string((*content).body))
			*content = nil
		}
	}
}

func (s *amqpConnState) method(c *amqpChan, chn uint16, class, method uint16, args []byte, fromClient bool) {
	a := amqpArgs{b: args}
	switch {
	case class == 20 && (method == 10 || method == 41): // channel.open, close-ok: a new channel
		delete(s.chans, chn)
	case class == 85 && method == 10 && fromClient: // confirm.select
		c.confirming, c.nextSeq = true, 1
	case class == 60 && method == 40 && fromClient: // basic.publish
		if !c.confirming {
			c.out = &amqpContent{done: func(string) {}}
			return
		}
		seq := c.nextSeq
		c.nextSeq++
		c.out = &amqpContent{done: func(id string) { c.pending[seq] = id }}
	case class == 60 && (method == 60 || method == 71) && !fromClient: // basic.deliver, basic.get-ok
		if method == 60 {
			a.shortstr() // consumer tag
		}
		tag := a.longlong()
		c.in = &amqpContent{done: func(id string) { c.delivered[tag] = id }}
	case class == 60 && method == 50 && !fromClient: // basic.return
		c.in = &amqpContent{done: func(id string) { c.returned[id]++ }}
	case class == 60 && (method == 80 || method == 120): // basic.ack, basic.nack
		tag, multiple := a.longlong(), a.octet()&1 == 1
		if fromClient {
			if method == 80 {
				for _, id := range c.take(c.delivered, tag, multiple) {
					s.ledger.Remove(id, "basic.ack of")
				}
			} else {
				c.take(c.delivered, tag, multiple)
			}
			return
		}
		for _, id := range c.take(c.pending, tag, multiple) {
			switch {
			case method == 120:
			case c.returned[id] > 0:
				c.returned[id]-- // returned unroutable: the ack that follows confirms nothing
			default:
				s.ledger.Confirm(id)
			}
		}
	case class == 60 && method == 90 && fromClient: // basic.reject
		c.take(c.delivered, a.longlong(), false)
	}
}

// take removes tag (and with multiple every smaller one) from m and
// returns their IDs.
func (c *amqpChan) take(m map[uint64]string, tag uint64, multiple bool) []string {
	var ids []string
	if !multiple {
		if id, ok := m[tag]; ok {
			ids = append(ids, id)
			delete(m, tag)
		}
		return ids
	}
	for k, id := range m {
		if k <= tag || tag == 0 {
			ids = append(ids, id)
			delete(m, k)
		}
	}
	return ids
}

// amqpArgs reads method arguments.
type amqpArgs struct {
	b   []byte
	err error
}

func (a *amqpArgs) need(n int) []byte {
	if a.err != nil || len(a.b) < n {
		a.err = errors.New("short frame")
		return make([]byte, n)
	}
	v := a.b[:n]
	a.b = a.b[n:]
	return v
}

func (a *amqpArgs) octet() byte      { return a.need(1)[0] }
func (a *amqpArgs) longlong() uint64 { return binary.BigEndian.Uint64(a.need(8)) }
func (a *amqpArgs) shortstr() string { return string(a.need(int(a.octet()))) }
