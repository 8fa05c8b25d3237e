package cmd

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
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
