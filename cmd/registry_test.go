package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

// A new adapter is wired by listing it: its scheme opens it, its flag is
// on the command line and reaches it as the context field it overrides,
// and the scheme list in errors names it. cmd is not edited.
func TestRegistryAdapterIsWired(t *testing.T) {
	var got broker.Settings
	opened := errors.New("opened")
	f := testFactory(t, "")
	f.Registry = broker.NewRegistry(broker.Adapter{
		Name: "nats", Schemes: []string{"nats://"}, About: []string{"NATS JetStream"},
		Flags: []broker.Flag{{Option: "stream-domain", Field: "region", Usage: "JetStream domain"}},
		Open: func(_ context.Context, s broker.Settings) (broker.Broker, error) {
			got = s
			return nil, opened
		},
	})
	ios, _, _, errOut := Test()
	f.IO = ios
	if code := execute(context.Background(), f, []string{"--broker", "nats://h:4222", "--stream-domain", "hub", "queues"}); code != ExitError {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got.Ref != "nats://h:4222" || got.Field("region") != "hub" || !got.FromFlag["region"] {
		t.Errorf("the adapter got ref %q, region %q (from a flag: %v); want nats://h:4222, hub, true", got.Ref, got.Field("region"), got.FromFlag["region"])
	}
	ios, _, _, errOut = Test()
	f.IO = ios
	execute(context.Background(), f, []string{"--broker", "amqp://h/", "queues"})
	if !strings.Contains(errOut.String(), "use nats:// or a context name") {
		t.Errorf("the scheme list does not come from the registry: %q", errOut)
	}
}

// A new adapter whose references are files is completed from the registry:
// its scheme is offered, the paths after it listed, and it is a `--to`
// destination when it writes. cmd names no scheme for it.
func TestRegistryFileAdapterCompletes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dumps"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dumps", "a.blob"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"its scheme", []string{"peek", "bl"}, "blob://\n" + dirNoSpace},
		{"paths after it", []string{"peek", "blob://dumps/"}, "blob://dumps/a.blob\n" + dirNoFile},
		{"--broker paths", []string{"queues", "--broker", "blob://d"}, "blob://dumps/\n" + dirNoSpace},
		{"a --to destination", []string{"redrive", "orders.dlq", "--to", "b"}, "blob://\ta blob file\n" + dirNoSpace},
		{"--to paths", []string{"redrive", "orders.dlq", "--to", "blob://dumps/a"}, "blob://dumps/a.blob\n" + dirNoFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFactory(t, "")
			f.Registry = broker.NewRegistry(broker.Adapter{
				Name: "blob", Schemes: []string{"blob://"}, About: []string{"a blob file"}, Files: true,
				Open: func(context.Context, broker.Settings) (broker.Broker, error) { return nil, errors.New("no broker") },
				Target: func(broker.Settings, string) (broker.Broker, string, error) {
					return nil, "", errors.New("not written")
				},
			})
			ios, _, out, _ := Test()
			f.IO = ios
			execute(context.Background(), f, append([]string{"__complete"}, tt.args...))
			if d := testdiff.Text(tt.want, out.String()); d != "" {
				t.Error(d)
			}
		})
	}
}
