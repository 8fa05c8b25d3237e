package sqs

import (
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// TestQueueRefSettings: a queue URL or ARN takes its region (or an
// emulator's endpoint) over the default broker's, and keeps the rest.
func TestQueueRefSettings(t *testing.T) {
	def := broker.Settings{Ref: "sqs://eu-west-1", Context: "aws", Fields: map[string]string{"profile": "admin"}}
	tests := []struct {
		ref, region, endpoint string
	}{
		{"arn:aws:sqs:ap-south-1:1:orders", "ap-south-1", ""},
		{"http://127.0.0.1:9324/000000000000/orders", "eu-west-1", "http://127.0.0.1:9324"},
	}
	for _, tt := range tests {
		s, ok := queueRefSettings(tt.ref, def)
		if !ok || s.Ref != "sqs://" || s.Field("region") != tt.region || s.Field("endpoint") != tt.endpoint || s.Field("profile") != "admin" || s.Context != "aws" {
			t.Errorf("%s: ok %v, ref %q, region %q, endpoint %q, profile %q, context %q; want sqs://, %q, %q, admin, aws",
				tt.ref, ok, s.Ref, s.Field("region"), s.Field("endpoint"), s.Field("profile"), s.Context, tt.region, tt.endpoint)
		}
	}
	if def.Field("region") != "" {
		t.Errorf("the default's settings were changed: region %q", def.Field("region"))
	}
	if _, ok := queueRefSettings("orders", def); ok {
		t.Error("a queue name was taken for a URL or ARN")
	}
}
