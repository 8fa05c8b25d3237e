package brokertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
)

// SQSWire is an HTTP proxy in front of an SQS endpoint (the JSON protocol)
// that records into its WireLedger: a successful send entry confirms its
// message, and a delete is checked when it is sent.
type SQSWire struct {
	*WireLedger
	srv      *httptest.Server
	upstream *url.URL
	handles  sync.Map // receipt handle → message ID, from ReceiveMessage answers
}

// NewSQSWire starts a proxy to endpoint with a ledger of its own; it stops
// when the test ends.
func NewSQSWire(t testing.TB, endpoint string) *SQSWire {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	w := &SQSWire{WireLedger: NewWireLedger(), upstream: u}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// URL is the proxy's endpoint, for dlq's --endpoint-url.
func (w *SQSWire) URL() string { return w.srv.URL }

type sqsEntry struct {
	ID            string `json:"Id"`
	MessageBody   string `json:"MessageBody"`
	ReceiptHandle string `json:"ReceiptHandle"`
}

func (w *SQSWire) serve(rw http.ResponseWriter, r *http.Request) {
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
		w.Send(path.Base(req.QueueUrl), req.MessageBody)
	case "SendMessageBatch":
		for _, e := range req.Entries {
			w.Send(path.Base(req.QueueUrl), e.MessageBody)
		}
	case "DeleteMessage":
		w.Remove(w.idOf(req.ReceiptHandle), "DeleteMessage of")
	case "DeleteMessageBatch":
		for _, e := range req.Entries {
			w.Remove(w.idOf(e.ReceiptHandle), "DeleteMessageBatch entry for")
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

func (w *SQSWire) record(op, body string, entries []sqsEntry, answer []byte) {
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
			w.Confirm(body)
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
				w.Confirm(id)
			}
		}
	}
}

func (w *SQSWire) idOf(handle string) string {
	if id, ok := w.handles.Load(handle); ok {
		return id.(string)
	}
	return "(a message never received through this proxy, receipt handle " + handle + ")"
}
