package rabbitmq

import "testing"

func TestRequeueCounts(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"3.10.8", true},
		{"3.13.7", true},
		{"4.0.5", true},
		{"4.2.1", true},
		{"4.3.0", false},
		{"4.3.6", false},
		{"4.3.0-rc.1", false},
		{"4.10.0", false},
		{"5.0.0", false},
		{"", true},
		{"unknown", true},
		{"4", true},
		{"4.x", true},
	} {
		if got := requeueCounts(tc.version); got != tc.want {
			t.Errorf("requeueCounts(%q) = %v, want %v", tc.version, got, tc.want)
		}
	}
}
