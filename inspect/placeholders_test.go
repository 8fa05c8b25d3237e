package inspect

import "testing"

// placeholderCount agrees with placeholders on shapes, unknown or unclosed
// placeholders and text around them.
func TestPlaceholderCount(t *testing.T) {
	for _, s := range []string{
		"", "no placeholders", "Customer <id> not found", "<num><num> <uuid>", "<x> <num",
		"a <<num>> b", "<str> at <time> from <ip> by <email>: <hex> <*>", "<> <num>", "<num> <unknown> <id>",
	} {
		if got, want := placeholderCount([]byte(s)), len(placeholders(s)); got != want {
			t.Errorf("placeholderCount(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzPlaceholderCount(f *testing.F) {
	f.Add("Customer <id> not found <num>")
	f.Add("<<num>")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := placeholderCount([]byte(s)), len(placeholders(s)); got != want {
			t.Errorf("placeholderCount(%q) = %d, want %d", s, got, want)
		}
	})
}
