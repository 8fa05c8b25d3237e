package archive

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

const hdr = `{"dlq_archive":1,"created":"2025-03-14T09:30:00Z"}`

func readAll(t *testing.T, data string) ([]*broker.Message, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(data), "t.jsonl")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*broker.Message
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name, data string
		read       int
		want       string
	}{
		{"no header", `{"id":"a"}` + "\n", 0, "t.jsonl line 1: not a dlq archive"},
		{"not json", "hello\n", 0, "t.jsonl line 1: not a dlq archive"},
		{"future version", `{"dlq_archive":2}` + "\n", 0, "line 1: archive format version 2 is not one this dlq reads (1 to 1): upgrade dlq"},
		{"future version later", hdr + "\n" + `{"id":"a"}` + "\n" + `{"dlq_archive":9}` + "\n", 1, "line 3: archive format version 9"},
		{"malformed middle", hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":` + "\n" + `{"id":"c"}` + "\n", 1, "t.jsonl line 3: invalid JSON"},
		{"wrong type", hdr + "\n" + `{"id":"a","delivery_count":"x"}` + "\n", 0, `line 2: field "delivery_count"`},
		{"bad header value", hdr + "\n\n" + `{"id":"a","headers":{"h":{"type":"nope","value":1}}}` + "\n", 0, `line 3: header "h": unknown header type "nope"`},
		{"torn last line", hdr + "\n" + `{"id":"a"}` + "\n" + `{"id":"b","bo`, 1, "line 3: archive truncated"},
		{"array line", hdr + "\n[1]\n", 0, "line 2: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if len(got) != tt.read {
				t.Errorf("read %d messages before the error, want %d", len(got), tt.read)
			}
		})
	}
}

func TestReaderAccepts(t *testing.T) {
	tests := []struct {
		name, data string
		ids        []string
	}{
		{"empty file", "", nil},
		{"header only", hdr + "\n", nil},
		{"blank lines and CRLF", hdr + "\r\n\r\n" + `{"id":"a"}` + "\r\n\n" + `{"id":"b"}`, []string{"a", "b"}},
		{"concatenated archives", hdr + "\n" + `{"id":"a"}` + "\n" + hdr + "\n" + `{"id":"b"}` + "\n", []string{"a", "b"}},
		{"unknown fields ignored", hdr + "\n" + `{"id":"a","future_field":{"x":1}}` + "\n", []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range got {
				ids = append(ids, m.ID)
			}
			if !reflect.DeepEqual(ids, tt.ids) {
				t.Errorf("ids = %v, want %v", ids, tt.ids)
			}
		})
	}
}

func TestReaderLongLine(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // beyond bufio's default 64 KiB
	got, err := readAll(t, hdr+"\n"+`{"id":"a","body":"`+big+`"}`+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Body) != len(big) {
		t.Fatalf("long body not read whole")
	}
}

func TestReaderHeader(t *testing.T) {
	r, err := NewReader(strings.NewReader(`{"dlq_archive":1,"created":"2025-03-14T10:30:00+01:00","source":{"system":"rabbitmq","broker":"amqp://h/","queue":"q"},"generator":"dlq 1"}`+"\n"+`{"id":"a"}`), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	want := &Header{Version: 1, Created: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC), Source: Source{System: broker.RabbitMQ, Broker: "amqp://h/", Queue: "q"}, Generator: "dlq 1"}
	if !reflect.DeepEqual(r.Header(), want) {
		t.Errorf("header (-want +got):\n%s", testdiff.Diff(want, r.Header()))
	}
	if r.Line() != 2 {
		t.Errorf("line = %d, want 2", r.Line())
	}
}

func TestWriterReaderRoundTrip(t *testing.T) {
	for _, name := range []string{"a.jsonl", "a.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			msgs := []*broker.Message{fullMessage(), {ID: "b", Body: []byte{0xff}}, {ID: "c", Body: []byte("text")}}
			now := func() time.Time { return t0 }
			// Two writers in turn: the second appends.
			for i, part := range [][]*broker.Message{msgs[:1], msgs[1:]} {
				w, err := NewWriter(path, WriterOptions{Source: Source{Broker: "amqp://u:hunter2@h/"}, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range part {
					if err := w.Write(m); err != nil {
						t.Fatal(err)
					}
				}
				if i == 1 {
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			raw, _ := os.ReadFile(path)
			if strings.HasSuffix(name, ".gz") {
				if !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
					t.Fatal(".gz file is not gzip")
				}
				zr, _ := gzip.NewReader(bytes.NewReader(raw))
				raw, _ = io.ReadAll(zr)
			}
			if bytes.Contains(raw, []byte("hunter2")) {
				t.Fatal("archive holds the password")
			}
			if n := bytes.Count(raw, []byte(`"dlq_archive"`)); n != 1 {
				t.Errorf("%d headers, want 1 (appending must not repeat it)", n)
			}
			r, err := OpenReader(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for i, want := range msgs {
				got, err := r.Next()
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("message %d (-want +got):\n%s", i, testdiff.Diff(want, got))
				}
			}
			if _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("after the last message: %v, want io.EOF", err)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
}

func TestWriterRepairsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(hdr+"\n"+`{"id":"a"}`+"\n"+`{"id":"b","bo`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&broker.Message{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got, err := readAll(t, string(data))
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "c" {
		t.Errorf("got %d messages, want a and c", len(got))
	}
}

func TestGzipTruncatedMember(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl.gz")
	w, err := NewWriter(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		w.Write(&broker.Message{ID: id})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	data, _ := os.ReadFile(path)
	got, err := readAll(t, string(data[:len(data)-25])) // into b's deflate data
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if len(got) != 1 || got[0].ID != "a" {
		t.Errorf("got %d messages before the truncation, want 1", len(got))
	}
}

func TestWriterErrors(t *testing.T) {
	_, err := NewWriter(filepath.Join(t.TempDir(), "missing", "a.jsonl"), WriterOptions{})
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "directory does not exist") {
		t.Errorf("err = %v, want ErrNotFound about the directory", err)
	}
	_, err = OpenReader(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, broker.ErrNotFound) || !strings.Contains(err.Error(), "file://") {
		t.Errorf("err = %v, want ErrNotFound naming file://", err)
	}
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, and
// whatever it accepts must survive a write and a second read unchanged.
func FuzzReader(f *testing.F) {
	f.Add([]byte(hdr + "\n" + `{"id":"a","body":"x"}` + "\n"))
	f.Add([]byte(hdr + "\n" + `{"id":"a","body":"AAE=","body_encoding":"base64","headers":{"h":{"type":"table","value":{"a":{"type":"array","value":[{"type":"decimal","value":{"scale":2,"value":5}},{"type":"float32","value":"NaN"}]}}}}}` + "\n"))
	f.Add([]byte(hdr + "\n" + `{"id":"a","attributes":{"b":{"data_type":"Binary","binary_value":"AQI="}},"death":{"reason":"r","queue":"q","count":1,"history":[{"reason":"r","queue":"q","count":1}]}}`))
	f.Add([]byte(`{"dlq_archive":2}`))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for range 1000 {
			m, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error: %q", err)
				}
				return
			}
			b, err := Marshal(m, "", time.Time{})
			if err != nil {
				// NaN inside a table cannot be compared, but it must encode.
				t.Fatalf("re-encoding an accepted record: %v", err)
			}
			again, err := Unmarshal(b)
			if err != nil {
				t.Fatalf("re-reading %s: %v", b, err)
			}
			b2, err := Marshal(again, "", time.Time{})
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("second round trip differs:\n%s\n%s", b, b2)
			}
		}
	})
}
