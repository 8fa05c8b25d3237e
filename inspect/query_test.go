package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

func TestCompileErrors(t *testing.T) {
	cases := []struct{ expr, want string }{
		{".body | }", `column 9: unexpected token "}"`},
		{`.a == 'x'`, "jq strings use double quotes"},
		{".a ==", "unexpected end of expression"},
		{`"\q"`, "invalid escape sequence"},
		{"foo(1)", "function not defined: foo/1"},
		{"$x", "variable not defined"},
		{"input", "filters see one message only"},
		{"inputs", "filters see one message only"},
		{"$__loc__", "variable not defined"},
		{"  ", "empty jq expression"},
	}
	for _, c := range cases {
		_, err := Compile(c.expr)
		if err == nil {
			t.Errorf("Compile(%q) succeeded", c.expr)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%q) = %q, want one line containing %q", c.expr, err, c.want)
		}
	}
}

func TestEnvIsEmpty(t *testing.T) {
	t.Setenv("DLQ_SECRET_TEST", "s3cret")
	out, err := MustCompile(`[$ENV, env] | tostring`).Eval(context.Background(), nil)
	if err != nil || strings.Contains(out[0].(string), "s3cret") {
		t.Fatalf("environment leaked into jq: %v %v", out, err)
	}
}

func TestMatchAndEval(t *testing.T) {
	ctx := context.Background()
	m := rabbitMsg()
	for expr, want := range map[string]bool{
		`.reason == "card declined"`:     true,
		`.death.reason == "expired"`:     false,
		`.headers.tenant`:                true,
		`.headers.missing`:               false,
		`empty`:                          false,
		`false, true`:                    false, // first output decides
		`.body.order > 40 and .size > 0`: true,
	} {
		got, err := MustCompile(expr).Match(ctx, m)
		if err != nil || got != want {
			t.Errorf("Match(%s) = %v, %v; want %v", expr, got, err, want)
		}
	}
	out, err := MustCompile(`.body.order, .id`).Eval(ctx, Document(m))
	if err != nil || len(out) != 2 || out[1] != "m-1" {
		t.Errorf("Eval = %v, %v", out, err)
	}
	if _, err := MustCompile(`range(1e9)`).Eval(ctx, nil); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("unbounded generator: %v", err)
	}
	if _, err := MustCompile(`.a.b`).Match(ctx, &broker.Message{Body: []byte(`{"a":"s"}`)}); err != nil {
		t.Errorf(".a.b on null is null in jq, not an error: %v", err)
	}
	if _, err := MustCompile(`.body.a.b`).Match(ctx, &broker.Message{Body: []byte(`{"a":"s"}`)}); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("indexing a string must be a one-line error: %v", err)
	}
}

func TestEvalStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := MustCompile(`last(range(1e12))`).Eval(ctx, nil)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("endless evaluation not stopped: %v", err)
	}
}

func TestWalkFilterAndLimit(t *testing.T) {
	var msgs []*broker.Message
	for i := range 10 {
		r := "rejected"
		if i%2 == 1 {
			r = "expired"
		}
		msgs = append(msgs, &broker.Message{ID: string(rune('a' + i)), Death: &broker.Death{Reason: r}})
	}
	p := newFakePeeker(t, msgs...)
	var got []string
	rep, err := Walk(context.Background(), p, "q", WalkOptions{Filter: MustCompile(`.reason == "expired"`), Limit: 3}, func(m *broker.Message) error {
		got = append(got, m.ID)
		return nil
	})
	if err != nil || strings.Join(got, "") != "bdf" {
		t.Fatalf("Walk = %v, %v", got, err)
	}
	if rep.Read != 6 || p.calls[0].Limit != 0 {
		t.Errorf("read %d with peek limit %d; want 6 read, no peek limit with a filter", rep.Read, p.calls[0].Limit)
	}
	p2 := newFakePeeker(t, msgs...)
	Walk(context.Background(), p2, "q", WalkOptions{Limit: 4}, func(*broker.Message) error { return nil })
	if p2.calls[0].Limit != 4 {
		t.Errorf("unfiltered walk passes its limit to the peek: %d", p2.calls[0].Limit)
	}
	p3 := newFakePeeker(t, msgs...)
	n := 0
	_, err = Walk(context.Background(), p3, "q", WalkOptions{}, func(*broker.Message) error {
		n++
		if n == 2 {
			return broker.ErrStop
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("ErrStop ends the walk without error: n=%d err=%v", n, err)
	}
}

func TestExport(t *testing.T) {
	var msgs []*broker.Message
	for i := range 7 {
		msgs = append(msgs, &broker.Message{ID: string(rune('a' + i)), Body: []byte("x")})
	}
	p := newFakePeeker(t, msgs...)
	pub := &fakePublisher{}
	var progress []int64
	res, err := Export(context.Background(), p, "q", pub, broker.Destination{Kind: broker.ToFile, Path: "/x"}, ExportOptions{Batch: 3, Progress: func(n int64) { progress = append(progress, n) }})
	if err != nil || res.Exported != 7 || len(pub.got) != 7 || pub.batches != 3 {
		t.Fatalf("export: exported %d, published %d, %v (%d batches); want 7, 7, nil, 3 batches", res.Exported, len(pub.got), err, pub.batches)
	}
	if pub.got[0].Message == msgs[0] {
		t.Error("exported messages must be clones")
	}
	if len(progress) != 3 || progress[2] != 7 {
		t.Errorf("progress %v", progress)
	}
}
