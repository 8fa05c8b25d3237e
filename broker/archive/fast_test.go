package archive

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// slowRecord decodes a line with encoding/json, the reference.
func slowRecord(b []byte) (record, bool) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil || l.DLQArchive != nil {
		return record{}, false
	}
	return l.record, true
}

// checkFast fails when the fast decoder accepts a line and its result
// differs from encoding/json's.
func checkFast(t *testing.T, b []byte) bool {
	t.Helper()
	var fast record
	if !fastRecord(b, &fast) {
		return false
	}
	slow, ok := slowRecord(b)
	if !ok {
		t.Fatalf("fast decoder accepted a line encoding/json rejects: %s", b)
	}
	fm, ferr := fromRecord(&fast)
	sm, serr := fromRecord(&slow)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("fromRecord differs: %v / %v", ferr, serr)
	}
	if ferr == nil && (fm.ID != sm.ID || !bytes.Equal(fm.Body, sm.Body) || (fm.Body == nil) != (sm.Body == nil)) {
		t.Fatalf("messages differ on %s: %q %q / %q %q", b, fm.ID, fm.Body, sm.ID, sm.Body)
	}
	textAsBody(&fast)
	fast.normaliseTimes()
	slow.normaliseTimes()
	fb, ferr := marshalLine(fast)
	sb, serr := marshalLine(slow)
	if (ferr == nil) != (serr == nil) || !bytes.Equal(fb, sb) {
		t.Fatalf("decoders differ on %s:\nfast %s (%v)\nslow %s (%v)", b, fb, ferr, sb, serr)
	}
	return true
}

// textAsBody moves the body and headers the fast decoder keeps in the
// message's form to Body and Headers, where encoding/json puts them, so that
// the two records compare.
func textAsBody(r *record) {
	if r.text != nil {
		s := string(r.text)
		r.Body, r.text = &s, nil
	}
	if r.headerValues != nil {
		r.Headers = headerMap{}
		for k, v := range r.headerValues {
			r.Headers[k] = typedValue{v}
		}
		r.headerValues = nil
	}
}

// checkMeta fails when fastMeta accepts a line that encoding/json reads
// differently into the listing fields.
func checkMeta(t *testing.T, b []byte) {
	t.Helper()
	var rec record
	if !fastMeta(b, &rec) {
		return
	}
	textAsBody(&rec)
	var l metaLine
	if err := json.Unmarshal(b, &l); err != nil || l.DLQArchive != nil {
		t.Fatalf("fastMeta accepted a line encoding/json rejects (%v): %s", err, b)
	}
	rec.normaliseTimes()
	same := rec.Queue == l.Queue && rec.System == l.System && rec.BodyEncoding == l.BodyEncoding &&
		(rec.Body == nil) == (l.Body == nil) && (rec.Body == nil || *rec.Body == *l.Body) &&
		rec.Timestamp.Equal(l.Timestamp.Time) && (rec.Death == nil) == (l.Death == nil) &&
		(rec.Death == nil || (rec.Death.Queue == l.Death.Queue && rec.Death.First.Equal(l.Death.First.Time)))
	if !same {
		t.Fatalf("fastMeta differs from encoding/json on %s", b)
	}
}

func TestFastRecordMatchesEncodingJSON(t *testing.T) {
	lines := [][]byte{}
	for _, m := range []*broker.Message{fullMessage(), {ID: "a"}, {ID: "b", Body: []byte{0, 1, 2}}, {ID: "c", Body: []byte("é \"q\" \\ \u2028 😀")}} {
		b, err := Marshal(m, "amqp://h/", t0)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	var headers []any
	headers = append(headers, int8(-1), int16(2), int32(3), int64(4), uint8(5), uint16(6), uint32(7), uint64(8), float32(1.5), 2.25, "s", []byte{1}, t0, broker.Decimal{Scale: 1, Value: 2}, nil, true, map[string]any{"a": []any{int32(1), "x"}})
	for _, h := range headers {
		b, _ := Marshal(&broker.Message{ID: "h", Headers: map[string]any{"h": h}}, "", time.Time{})
		lines = append(lines, b)
	}
	for _, b := range lines {
		checkMeta(t, b)
		if !checkFast(t, b) {
			t.Errorf("fast decoder gave up on a line this package wrote: %s", b)
		}
	}
	// Lines it must leave to encoding/json.
	for _, s := range []string{
		`{"ID":"a"}`, `{"id":"a","id":"b"}`, `{"id":null}`, `{"id":"a","extra":1}`,
		`{"id":"caf` + "\xe9" + `"}`, `{"id":"\ud800"}`, `{"delivery_count":1e3}`,
		`{"headers":{"h":{"value":1,"type":"int8"}}}`, `{"headers":{"h":{"type":"int8","value":1,"x":2}}}`,
		`{"dlq_archive":1}`, `{"id":"a"} x`,
	} {
		var r record
		if fastRecord([]byte(s), &r) {
			t.Errorf("fast decoder accepted %s", s)
		}
	}
}

func FuzzFastRecord(f *testing.F) {
	b, _ := Marshal(fullMessage(), "amqp://h/", t0)
	f.Add(b)
	b, _ = Marshal(extremeMessage(1<<62), "amqp://h/", t0)
	f.Add(b)
	f.Add([]byte(`{"id":"a","headers":{"h":{"type":"array","value":[{"type":"float32","value":"NaN"},{"type":"decimal","value":{"scale":2,"value":-5}}]}}}`))
	f.Add([]byte(`{"id":"\u00e9\n","body":"AAE=","body_encoding":"base64","attributes":{"b":{"data_type":"Binary","binary_value":"AQI="}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if strings.Contains(string(b), "\n") {
			return // one line per record
		}
		checkFast(t, b)
		checkMeta(t, b)
	})
}
