// Package human formats durations and sizes briefly, for tables and the
// terminal UI.
package human

import (
	"strconv"
	"time"
)

// Age renders a duration the way k9s does: 42s, 5m, 3h, 2d ("-" for none).
func Age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// Bytes renders a size: 512B, 1.2K, 3.4M, 1.1G.
func Bytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + "K"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "M"
	default:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "G"
	}
}
