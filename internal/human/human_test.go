package human

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "-"}, {-time.Second, "-"}, {1500 * time.Millisecond, "1s"}, {59 * time.Second, "59s"},
		{time.Minute, "1m"}, {59*time.Minute + 59*time.Second, "59m"}, {time.Hour, "1h"},
		{47 * time.Hour, "47h"}, {48 * time.Hour, "2d"}, {100 * 24 * time.Hour, "100d"},
	} {
		if got := Age(tt.d); got != tt.want {
			t.Errorf("Age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1.0K"}, {1536, "1.5K"}, {1<<20 - 1, "1024.0K"},
		{1 << 20, "1.0M"}, {3 << 29, "1.5G"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
