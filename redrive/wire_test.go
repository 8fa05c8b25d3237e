package redrive_test

// Wire checks for the fault tests: loopback proxies between dlq and the
// servers that read what dlq says and what it is told, and hold dlq to its
// contract on the wire — a source message is acknowledged (AMQP basic.ack)
// or deleted (SQS DeleteMessage[Batch]) only after the destination confirmed
// a publish of that message (a publisher confirm; a successful
// SendMessage[Batch] entry). The servers' end state is counted separately;
// this proves the order of the steps, whatever an emulator does afterwards.
//
// Every message of the fault tests has its ID as its body, so the proxies
// know a message by its body in both directions.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker/brokertest"
	dlqsqs "github.com/dlq-tools/dlq/broker/sqs"
)

// wireLedger is what the proxies saw: which message IDs a destination
// confirmed, and every removal from a source that came before its confirm.
type wireLedger struct {
	mu        sync.Mutex
	confirmed map[string]bool
	// sent counts the sends of each message ID to each queue, "queue/id"
	// (every attempt: the SDK's retries pass the proxy too); nil where the
	// proxy does not count them.
	sent     map[string]int
	removals int      // acknowledgements or deletes checked
	bad      []string // removals with no confirm before them
}

func newWireLedger() *wireLedger { return &wireLedger{confirmed: map[string]bool{}} }

func (l *wireLedger) confirm(id string) {
	l.mu.Lock()
	l.confirmed[id] = true
	l.mu.Unlock()
}

// send counts one send of id to queue.
func (l *wireLedger) send(queue, id string) {
	l.mu.Lock()
	if l.sent == nil {
		l.sent = map[string]int{}
	}
	l.sent[queue+"/"+id]++
	l.mu.Unlock()
}

// sends is how many times dlq sent id to queue; ok is false where the
// proxy does not count sends.
func (l *wireLedger) sends(queue, id string) (n int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent == nil {
		return 0, false
	}
	return l.sent[queue+"/"+id], true
}

// remove checks a removal from the source: it must follow a confirm.
func (l *wireLedger) remove(id, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removals++
	if !l.confirmed[id] {
		l.bad = append(l.bad, fmt.Sprintf("%s %s before any destination confirmed it", how, id))
	}
}

// check fails the test for every removal that came before its confirm, and
// returns how many removals were checked.
func (l *wireLedger) check(t *testing.T) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range l.bad {
		if i == 10 {
			t.Errorf("… and %d more", len(l.bad)-10)
			break
		}
		t.Errorf("on the wire: %s", b)
	}
	return l.removals
}

// ---------------------------------------------------------------------------
// SQS (the JSON protocol)

// sqsWire is an HTTP proxy in front of an SQS endpoint.
type sqsWire struct {
	*wireLedger
	srv      *httptest.Server
	upstream *url.URL
	handles  sync.Map // receipt handle → message ID, from ReceiveMessage answers
}

func newSQSWire(t *testing.T, endpoint string) *sqsWire {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	w := &sqsWire{wireLedger: newWireLedger(), upstream: u}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// URL is the proxy's endpoint, for dlq's --endpoint-url.
func (w *sqsWire) URL() string { return w.srv.URL }

type sqsEntry struct {
	ID            string `json:"Id"`
	MessageBody   string `json:"MessageBody"`
	ReceiptHandle string `json:"ReceiptHandle"`
}

func (w *sqsWire) serve(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	var req struct {
		QueueUrl      string
		MessageBody   string
		ReceiptHandle string
		Entries       []sqsEntry
	}
	_ = json.Unmarshal(body, &req)
	// A delete is checked when it is sent: its send must have been
	// answered with success already.
	switch op {
	case "SendMessage":
		w.send(path.Base(req.QueueUrl), req.MessageBody)
	case "SendMessageBatch":
		for _, e := range req.Entries {
			w.send(path.Base(req.QueueUrl), e.MessageBody)
		}
	case "DeleteMessage":
		w.remove(w.idOf(req.ReceiptHandle), "DeleteMessage of")
	case "DeleteMessageBatch":
		for _, e := range req.Entries {
			w.remove(w.idOf(e.ReceiptHandle), "DeleteMessageBatch entry for")
		}
	}

	out, err := http.NewRequestWithContext(r.Context(), r.Method, w.upstream.String()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	// Answers are recorded before dlq can read them.
	if resp.StatusCode == http.StatusOK {
		w.record(op, req.MessageBody, req.Entries, answer)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			rw.Header().Add(k, v)
		}
	}
	rw.WriteHeader(resp.StatusCode)
	_, _ = rw.Write(answer)
}

func (w *sqsWire) record(op, body string, entries []sqsEntry, answer []byte) {
	switch op {
	case "ReceiveMessage":
		var a struct {
			Messages []struct{ Body, ReceiptHandle string }
		}
		if json.Unmarshal(answer, &a) == nil {
			for _, m := range a.Messages {
				w.handles.Store(m.ReceiptHandle, m.Body)
			}
		}
	case "SendMessage":
		var a struct{ MessageId string }
		if json.Unmarshal(answer, &a) == nil && a.MessageId != "" {
			w.confirm(body)
		}
	case "SendMessageBatch":
		var a struct{ Successful []struct{ Id string } }
		if json.Unmarshal(answer, &a) != nil {
			return
		}
		byEntry := map[string]string{}
		for _, e := range entries {
			byEntry[e.ID] = e.MessageBody
		}
		for _, s := range a.Successful {
			if id, ok := byEntry[s.Id]; ok {
				w.confirm(id)
			}
		}
	}
}

func (w *sqsWire) idOf(handle string) string {
	if id, ok := w.handles.Load(handle); ok {
		return id.(string)
	}
	return "(a message never received through this proxy, receipt handle " + handle + ")"
}

// ---------------------------------------------------------------------------
// AMQP 0-9-1

// amqpWire is a TCP proxy in front of a RabbitMQ node that follows the
// frames of every connection through it.
type amqpWire struct {
	*wireLedger
	ln       net.Listener
	upstream string
	// open counts the client connections open through the proxy.
	open atomic.Int32
}

// newAMQPWire starts a proxy to upstream that records into ledger.
func newAMQPWire(t *testing.T, upstream string, ledger *wireLedger) *amqpWire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &amqpWire{wireLedger: ledger, ln: ln, upstream: upstream}
	go w.accept()
	t.Cleanup(func() { ln.Close() })
	return w
}

// Addr is the proxy's host:port.
func (w *amqpWire) Addr() string { return w.ln.Addr().String() }

func (w *amqpWire) accept() {
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		go w.proxy(c)
	}
}

func (w *amqpWire) proxy(client net.Conn) {
	w.open.Add(1)
	defer w.open.Add(-1)
	defer client.Close()
	server, err := net.Dial("tcp", w.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	st := &amqpConnState{ledger: w.wireLedger, chans: map[uint16]*amqpChan{}}
	done := make(chan struct{}, 2)
	go func() { _ = st.pump(client, server, true); server.Close(); done <- struct{}{} }()
	go func() { _ = st.pump(server, client, false); client.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// amqpConnState follows one connection's channels.
type amqpConnState struct {
	ledger *wireLedger
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
					s.ledger.remove(id, "basic.ack of")
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
				s.ledger.confirm(id)
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

// The proxies catch what they are there to catch: a removal from the source
// with no confirm before it fails the check, one after a confirm passes.
func TestWireChecksCatchARemovalBeforeItsConfirm(t *testing.T) {
	t.Run("amqp", func(t *testing.T) {
		env := brokertest.RabbitMQ(t)
		ledger := newWireLedger()
		conn, err := amqp.Dial(proxiedURL(t, env.AMQPURL, ledger))
		if err != nil {
			t.Fatal(redactSecrets(err.Error()))
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		src, dst := brokertest.Name(t, "src"), brokertest.Name(t, "dst")
		for _, q := range []string{src, dst} {
			if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"early", "proper"} {
			if err := ch.PublishWithContext(context.Background(), "", src, false, false, amqp.Publishing{Body: []byte(id)}); err != nil {
				t.Fatal(err)
			}
		}
		get := func() amqp.Delivery {
			for i := 0; i < 100; i++ {
				d, ok, err := ch.Get(src, false)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					return d
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Fatal("no message")
			return amqp.Delivery{}
		}
		// Acknowledged without publishing it anywhere: a violation.
		if err := get().Ack(false); err != nil {
			t.Fatal(err)
		}
		// Published with a confirm, then acknowledged: fine.
		d := get()
		pc, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Confirm(false); err != nil {
			t.Fatal(err)
		}
		c, err := pc.PublishWithDeferredConfirmWithContext(context.Background(), "", dst, true, false, amqp.Publishing{Body: d.Body})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.WaitContext(context.Background()); !ok || err != nil {
			t.Fatalf("confirm: %v %v", ok, err)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		_ = ch.Close() // the ack is on the wire once the close is answered
		if got := wireVerdict(ledger); got != "2 removals; bad: basic.ack of early before any destination confirmed it" {
			t.Errorf("the AMQP proxy saw: %s", got)
		}
	})
	t.Run("sqs", func(t *testing.T) {
		env := brokertest.SQS(t)
		b := newSQS(t, "sqs", env.Endpoint)
		src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
		b.Fill(t, src, []string{"early", "proper"})
		cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
		if err != nil {
			t.Fatal(err)
		}
		c := sqs.NewFromConfig(cfg, dlqsqs.OwnRequestBodies, func(o *sqs.Options) { o.BaseEndpoint = aws.String(b.wire.URL()) })
		ctx := context.Background()
		got := map[string]string{}
		for len(got) < 2 {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.url(t, src)), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				got[aws.ToString(m.Body)] = aws.ToString(m.ReceiptHandle)
			}
		}
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(b.url(t, src)), ReceiptHandle: aws.String(got["early"])}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.url(t, dst)),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String("proper")}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.url(t, src)),
			Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String(got["proper"])}}}); err != nil {
			t.Fatal(err)
		}
		if got := wireVerdict(b.wire.wireLedger); got != "2 removals; bad: DeleteMessage of early before any destination confirmed it" {
			t.Errorf("the SQS proxy saw: %s", got)
		}
	})
}

func wireVerdict(l *wireLedger) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d removals; bad: %s", l.removals, strings.Join(l.bad, "; "))
}
