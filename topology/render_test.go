package topology

import (
	"strings"
	"testing"
	"unicode"
)

// Names and values in a plan come from the spec and from the broker: their
// escape sequences show instead of acting on the terminal.
func TestWritePlanShowsEscapes(t *testing.T) {
	const link = "\x1b]8;;http://evil\x1b\\q\x1b]8;;\x1b\\"
	p := &Plan{System: "rabbitmq", Broker: "amqp://h/", Vhost: "/" + link,
		Changes: []Change{
			{Action: Create, Kind: "queue", Name: "orders" + link, From: "spec" + link, Diffs: []Diff{{Field: "x-queue-type", New: "quorum\x1b[2J"}}},
			{Action: Conflict, Kind: "queue", Name: "q\u009b1m", Problem: "type " + link, Fix: "delete " + link},
		},
		Warnings: []string{"policy " + link},
	}
	var b strings.Builder
	if err := WritePlan(&b, p, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.String() {
		if r != '\n' && unicode.IsControl(r) {
			t.Fatalf("plan carries a raw %U:\n%q", r, b.String())
		}
	}
	if !strings.Contains(b.String(), `orders\x1b]8;;http://evil`) {
		t.Errorf("plan does not show the name's escapes:\n%s", b.String())
	}
}
