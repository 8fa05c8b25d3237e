package broker

import (
	"context"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	open := func(context.Context, Settings) (Broker, error) { return nil, nil }
	r := NewRegistry(
		Adapter{Name: "a", Schemes: []string{"amqp://", "amqps://"}, Open: open},
		Adapter{Name: "q", Schemes: []string{"sqs://"}, Open: open,
			QueueRef: func(ref string, def Settings) (Settings, bool) {
				return def.With("seen", ref), ref == "arn:q"
			}},
		Adapter{Name: "d", Schemes: []string{"demo:"}, Open: open},
	)
	if got, want := r.Schemes(), "amqp://, amqps://, sqs://, demo:"; got != want {
		t.Errorf("Schemes() = %q, want %q", got, want)
	}
	for ref, want := range map[string]string{"amqp://h/": "a", "AMQPS://h": "a", "sqs:": "q", "demo:x": "d", "file://x": "", "prod": ""} {
		a, ok := r.Lookup(ref)
		if a.Name != want || ok != (want != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", ref, a.Name, ok, want)
		}
	}
	for ref, want := range map[string]bool{"file://x": true, "demo:": true, "sqs:": true, "prod": false, "prod-eu": false} {
		if got := r.IsRef(ref); got != want {
			t.Errorf("IsRef(%q) = %v, want %v", ref, got, want)
		}
	}
	a, s, ok := r.QueueRef("arn:q", func(a Adapter) Settings { return Settings{Ref: "def-of-" + a.Name} })
	if !ok || a.Name != "q" || s.Ref != "def-of-q" || s.Field("seen") != "arn:q" {
		t.Errorf("QueueRef(arn:q) = %q, %+v, %v; want adapter q with its default's settings", a.Name, s, ok)
	}
	if _, _, ok := r.QueueRef("orders", func(Adapter) Settings { return Settings{} }); ok {
		t.Error("QueueRef(orders) recognised a plain name")
	}
}

// TestSettingsWith: With leaves the settings it was called on unchanged,
// so that an adapter can derive a queue's settings from the default's.
func TestSettingsWith(t *testing.T) {
	s := Settings{Fields: map[string]string{"region": "eu-west-1"}}
	d := s.With("region", "us-east-1")
	if s.Field("region") != "eu-west-1" || d.Field("region") != "us-east-1" {
		t.Errorf("With changed the original: %q, derived %q", s.Field("region"), d.Field("region"))
	}
}

func TestRegistryDescribed(t *testing.T) {
	r := NewRegistry(Adapter{Name: "a", Schemes: []string{"amqp://", "amqps://"}, About: []string{"RabbitMQ", "RabbitMQ over TLS"}},
		Adapter{Name: "d", Schemes: []string{"demo:"}})
	got := strings.Join(r.Described(), "|")
	if want := "amqp://\tRabbitMQ|amqps://\tRabbitMQ over TLS|demo:"; got != want {
		t.Errorf("Described() = %q, want %q", got, want)
	}
}

// A reference to a file is told by its adapter's Files, not by a scheme the
// registry knows: its path, its scheme for completion, and whether it can
// be written to (a Target) all come from the adapter.
func TestRegistryFiles(t *testing.T) {
	open := func(context.Context, Settings) (Broker, error) { return nil, nil }
	target := func(Settings, string) (Broker, string, error) { return nil, "", nil }
	r := NewRegistry(
		Adapter{Name: "a", Schemes: []string{"amqp://"}, Open: open},
		Adapter{Name: "f", Schemes: []string{"file://"}, About: []string{"an archive file"}, Open: open, Files: true, Target: target},
		Adapter{Name: "s", Schemes: []string{"snap://"}, Open: open, Files: true},
		Adapter{Name: "d", Schemes: []string{"demo:"}, Open: open},
	)
	t.Setenv("HOME", "/home/ops")
	for ref, want := range map[string]string{"file://x.jsonl": "x.jsonl", "file://": "", "snap://a/b": "a/b",
		"file://~/dead.jsonl": "/home/ops/dead.jsonl", "file://localhost/var/x.jsonl": "/var/x.jsonl", "file:///var/x.jsonl": "/var/x.jsonl"} {
		if got, ok := r.FilePath(ref); !ok || got != want {
			t.Errorf("FilePath(%q) = %q, %v; want %q, true", ref, got, ok, want)
		}
	}
	for _, ref := range []string{"amqp://h/", "demo:x", "FILE://x", "x.jsonl", "file:/x"} {
		if got, ok := r.FilePath(ref); ok {
			t.Errorf("FilePath(%q) = %q, true; want not a file", ref, got)
		}
	}
	if a, s, ok := r.Scheme("demo:orders"); !ok || a.Name != "d" || s != "demo:" {
		t.Errorf("Scheme(demo:orders) = %q, %q, %v; want d, demo:", a.Name, s, ok)
	}
	if got, want := strings.Join(r.FileSchemes(false), " "), "file:// snap://"; got != want {
		t.Errorf("FileSchemes(false) = %q, want %q", got, want)
	}
	if got, want := strings.Join(r.FileSchemes(true), " "), "file://"; got != want {
		t.Errorf("FileSchemes(true) = %q, want %q", got, want)
	}
	if got, want := strings.Join(r.Targets(), " "), "file://\tan archive file"; got != want {
		t.Errorf("Targets() = %q, want %q", got, want)
	}
}
