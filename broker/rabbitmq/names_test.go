package rabbitmq

import (
	"context"
	"slices"
	"testing"

	"github.com/dlq-tools/dlq/broker/brokertest"
)

func TestNames(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	base := brokertest.Name(t, "names")
	q1, q2 := base+".a.dlq", base+".b.q"
	declareQueue(t, b, q1, nil)
	declareQueue(t, b, q2, nil)
	x := base + ".x"
	declareExchange(t, b, x, "topic")

	got, err := b.QueueNames(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{q1, q2}; !slices.Equal(got, want) {
		t.Errorf("QueueNames(%q) = %q, want %q", base, got, want)
	}
	got, err = b.QueueNames(ctx, base+".b")
	if err != nil || !slices.Equal(got, []string{q2}) {
		t.Errorf("QueueNames(%q) = %q, %v; want [%s]", base+".b", got, err, q2)
	}
	got, err = b.ExchangeNames(ctx, base)
	if err != nil || !slices.Equal(got, []string{x}) {
		t.Errorf("ExchangeNames(%q) = %q, %v; want [%s]", base, got, err, x)
	}
	all, err := b.ExchangeNames(ctx, "")
	if err != nil || slices.Contains(all, "") || !slices.Contains(all, "amq.topic") {
		t.Errorf("ExchangeNames(\"\") = %q, %v; want amq.topic and no nameless exchange", all, err)
	}
}
