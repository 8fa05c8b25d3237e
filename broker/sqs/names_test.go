package sqs

import (
	"context"
	"slices"
	"testing"
)

func TestQueueNames(t *testing.T) {
	b := openTest(t)
	base := baseName(t)
	createQueue(t, b, base+"-b", nil)
	createQueue(t, b, base+"-a-dlq", nil)
	got, err := b.QueueNames(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{base + "-a-dlq", base + "-b"}; !slices.Equal(got, want) {
		t.Errorf("QueueNames(%q) = %q, want %q", base, got, want)
	}
	got, err = b.QueueNames(context.Background(), base+"-b")
	if err != nil || !slices.Equal(got, []string{base + "-b"}) {
		t.Errorf("QueueNames(%q) = %q, %v", base+"-b", got, err)
	}
}
