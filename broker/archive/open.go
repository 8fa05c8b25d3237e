package archive

import (
	"context"
	"fmt"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// Adapter is the archive adapter for a front end's registry: file://PATH,
// an archive to read (every message of it is one queue argument) or to
// append to (a destination).
func Adapter() broker.Adapter {
	return broker.Adapter{
		Name:    "archive",
		Schemes: []string{"file://"},
		About:   []string{"an archive file"},
		Open:    openSettings,
		QueueIn: func(ref string) (string, string, bool) { return ref, "", true },
		Files:   true,
		Target:  target,
	}
}

// DemoAdapter is the embedded sample archive: demo: is the broker, and
// demo:NAME one queue of it.
func DemoAdapter() broker.Adapter {
	return broker.Adapter{
		Name:    "demo",
		Schemes: []string{"demo:"},
		About:   []string{"the embedded sample archive"},
		Open: func(_ context.Context, s broker.Settings) (broker.Broker, error) {
			if _, rest, _ := strings.Cut(s.Ref, ":"); rest != "" {
				return nil, broker.Hintf("%s takes no queue: pass the queue as the argument (%s)", broker.OptBroker.With("demo:"), broker.Cmd("peek orders.dlq", broker.OptBroker.With("demo:")))
			}
			b, err := Demo()
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		QueueIn: func(ref string) (string, string, bool) {
			return "demo:", strings.TrimPrefix(ref, "demo:"), true
		},
	}
}

func openSettings(_ context.Context, s broker.Settings) (broker.Broker, error) {
	path, err := FilePath(s.Ref)
	if err != nil {
		return nil, err
	}
	b, err := Open(path)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func target(s broker.Settings, generator string) (broker.Broker, string, error) {
	path, err := FilePath(s.Ref)
	if err != nil {
		return nil, "", err
	}
	b, err := Target(path, WriterOptions{Generator: generator})
	if err != nil {
		return nil, "", err
	}
	return b, "file://" + path, nil
}

// FilePath is the path of file://PATH (file:///abs, file://rel, file://~/x).
func FilePath(ref string) (string, error) {
	p := strings.TrimPrefix(ref, "file://")
	if p == ref || p == "" {
		return "", fmt.Errorf("malformed archive reference %q: want file://PATH (file://dead.jsonl, file:///var/dlq/dead.jsonl.gz)", ref)
	}
	return broker.LocalPath(p), nil
}
