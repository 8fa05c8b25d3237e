package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// nodeNamer shortens RabbitMQ node names for the table: the names before
// the @ when they tell the nodes apart (n1@host, n2@host → n1, n2), else the
// first label of the host (rabbit@rabbit-1.example.com → rabbit-1), else
// the whole name.
func nodeNamer(qs []broker.Queue) func(string) string {
	seen := map[string]bool{}
	for i := range qs {
		for _, m := range qs[i].Members {
			seen[m] = true
		}
		if qs[i].Leader != "" {
			seen[qs[i].Leader] = true
		}
	}
	local := func(n string) string { l, _, _ := strings.Cut(n, "@"); return l }
	host := func(n string) string {
		_, h, ok := strings.Cut(n, "@")
		if !ok {
			return n
		}
		first, _, _ := strings.Cut(h, ".")
		return first
	}
	distinct := func(fn func(string) string) bool {
		got := map[string]bool{}
		for n := range seen {
			s := fn(n)
			if s == "" || got[s] {
				return false
			}
			got[s] = true
		}
		return true
	}
	switch {
	case distinct(local):
		return local
	case distinct(host):
		return host
	}
	return func(n string) string { return n }
}

// spanAge prints a duration the way people say it: 45s, 12m, 3h05m, 4d02h.
func spanAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
