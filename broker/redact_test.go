package broker

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"queue:orders", "queue:orders"},
		{"amqp://ops@rabbit:5672/shop", "amqp://ops@rabbit:5672/shop"},
		{"amqp://ops:s3cret@rabbit:5672/shop", "amqp://ops:xxxxx@rabbit:5672/shop"},
		{"amqps://ops:s3cret@rabbit:5671/%2F?heartbeat=10", "amqps://ops:xxxxx@rabbit:5671/%2F?heartbeat=10"},
		// The user information ends at the last @, as url.Parse reads it.
		{"amqp://u:Kx9@Zq7Leak@host/", "amqp://u:xxxxx@host/"},
		{"amqp://u:a:b:c@host/", "amqp://u:xxxxx@host/"},
		{"amqp://u:p%40ss%3Aw%25rd@host/", "amqp://u:xxxxx@host/"},
		{"amqp://u:@host/", "amqp://u:xxxxx@host/"},
		{"amqp://u:p@[::1]:5672/v", "amqp://u:xxxxx@[::1]:5672/v"},
		{"amqp://u:p@@[fe80::1%25eth0]:5672", "amqp://u:xxxxx@[fe80::1%25eth0]:5672"},
		{"amqp://u:p@host?auth_mechanism=plain#frag", "amqp://u:xxxxx@host?auth_mechanism=plain#frag"},
		{"//u:p@host/path", "//u:xxxxx@host/path"},
		// Lists of cluster nodes, in one URL or one URL each.
		{"amqp://u:p@h1:5672,h2:5672/v", "amqp://u:xxxxx@h1:5672,h2:5672/v"},
		{"amqp://u:p@[::1]:5672,h2/", "amqp://u:xxxxx@[::1]:5672,h2/"},
		{"amqp://u:p1@h1/,amqp://u:p@2@h2/", "amqp://u:xxxxx@h1/,amqp://u:xxxxx@h2/"},
		{"amqp://u:p1@h1,amqp://u:p2@h2/", "amqp://u:xxxxx@h1,amqp://u:xxxxx@h2/"},
		// Management URLs with basic authentication, SQS endpoints.
		{"http://admin:pw@rabbit:15672,http://admin:pw@rabbit-b:15672", "http://admin:xxxxx@rabbit:15672,http://admin:xxxxx@rabbit-b:15672"},
		{"https://mon:p@ss@rabbit.example.com/api/", "https://mon:xxxxx@rabbit.example.com/api/"},
		{"http://key:secret@127.0.0.1:9324/000000000000/orders", "http://key:xxxxx@127.0.0.1:9324/000000000000/orders"},
		// A password with a / ? or # url.Parse refuses: masked to its last @.
		{"open sqs: invalid endpoint \"http://user:dlqSECRET/9f8e?x#y@127.0.0.1:1\": use a URL", "open sqs: invalid endpoint \"http://user:xxxxx@127.0.0.1:1\": use a URL"},
		{"amqp://u:pa/ss@host/v hello", "amqp://u:xxxxx@host/v hello"},
		{"amqp://host:5672/path", "amqp://host:5672/path"},
		{"https://sqs.eu-west-1.amazonaws.com/123/q?X-Amz-Signature=abc123&X-Amz-Date=20260101", "https://sqs.eu-west-1.amazonaws.com/123/q?X-Amz-Signature=xxxxx&X-Amz-Date=20260101"},
		{"https://h/?token=t0k&x=1&password=p#f", "https://h/?token=xxxxx&x=1&password=xxxxx#f"},
		{"sqs://eu-west-1", "sqs://eu-west-1"},
		{"file:///tmp/a@b:c.jsonl", "file:///tmp/a@b:c.jsonl"},
		// Free text: error messages and command lines.
		{"dial amqp://u:p@h1:5672: connection refused", "dial amqp://u:xxxxx@h1:5672: connection refused"},
		{`open "amqp://u:p@h/": no; retry amqps://v:q@r@h2/ or http://w:z@m:15672`, `open "amqp://u:xxxxx@h/": no; retry amqps://v:xxxxx@h2/ or http://w:xxxxx@m:15672`},
		{"dlq redrive q --to amqp://u:Kx9@Zq7Leak@host/#queue:x --yes", "dlq redrive q --to amqp://u:xxxxx@host/#queue:x --yes"},
		{"mail ops@example.com: user:pass is not a URL", "mail ops@example.com: user:pass is not a URL"},
		{"what? is this", "what? is this"},
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		if got := Redact(tt.want); got != tt.want {
			t.Errorf("Redact is not idempotent on %q: %q", tt.want, got)
		}
	}
}

func TestUnmask(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"amqp://u:xxxxx@h/", "amqp://u@h/"},
		{"amqp://u:xxxxx@h1,amqp://v:xxxxx@h2/", "amqp://u@h1,amqp://v@h2/"},
		{"amqp://u:s3cret@h/", "amqp://u:s3cret@h/"},
		{"amqp://u@h/", "amqp://u@h/"},
		{"queue:a:xxxxx@b", "queue:a:xxxxx@b"},
		{Redact("amqps://ops:Kx9@Zq7:%41@rabbit:5671/prod") + "#queue:orders", "amqps://ops@rabbit:5671/prod#queue:orders"},
	} {
		if got := Unmask(tt.in); got != tt.want {
			t.Errorf("Unmask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHasPassword(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"amqp://u@h/", false},
		{"amqp://h/?password=x", false},
		{"amqp://u:p@h/", true},
		{"amqp://u:xxxxx@h/", true},
		{"amqp://u:p@[::1]:5672,h2/", true},
		{"amqp://u@h1,amqp://u:p@h2", true},
	} {
		if got := HasPassword(tt.in); got != tt.want {
			t.Errorf("HasPassword(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzRedact checks Redact against url.Parse: whatever URL it accepts with
// a password, the redacted URL keeps its scheme, user and host and has
// the mask for a password; embedded in text, the URL is redacted the same.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"amqp://u:Kx9@Zq7Leak@host/",
		"amqps://ops:p%40ss@[::1]:5671/%2F?heartbeat=10",
		"http://a:b:c@h:15672/api",
		"//u:p@h",
		"amqp://u:p@h1:5672,h2:5672/v",
		"http://k:s@127.0.0.1:9324/0/q?x=1#f",
		"a://u:p@h/x//y:z@w",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			return
		}
		if _, ok := u.User.Password(); !ok {
			return
		}
		got := Redact(raw)
		r, err := url.Parse(got)
		if err != nil {
			t.Fatalf("Redact(%q) = %q, which url.Parse refuses: %v", raw, got, err)
		}
		if pw, _ := r.User.Password(); r.User == nil || pw != Mask {
			t.Fatalf("Redact(%q) = %q: password %q, want %q", raw, got, pw, Mask)
		}
		if r.Scheme != u.Scheme || r.Host != u.Host || r.User.Username() != u.User.Username() {
			t.Fatalf("Redact(%q) = %q: scheme, host or user changed", raw, got)
		}
		const before, after = "dial failed: ", " refused\n"
		if text := Redact(before + raw + after); text != before+got+after {
			t.Fatalf("in text, Redact(%q)\n got %q\nwant %q", raw, text, before+got+after)
		}
		if list := Redact(raw + "," + raw); !strings.ContainsAny(raw, "?#") && list != got+","+got {
			t.Fatalf("in a list, Redact(%q)\n got %q\nwant %q", raw, list, got+","+got)
		}
		if !strings.Contains(got, ":"+Mask+"@") {
			t.Fatalf("Redact(%q) = %q: no mask", raw, got)
		}
	})
}
