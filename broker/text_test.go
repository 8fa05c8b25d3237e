package broker

import "testing"

func TestIsText(t *testing.T) {
	for _, tt := range []struct {
		b    string
		want bool
	}{
		{"", true}, {"plain", true}, {"tab\tnl\ncr\r", true}, {"héllo 😀", true}, {"\uFFFD", true},
		{"nul\x00", false}, {"bell\x07", false}, {"del\x7f", false}, {"\xff\xfe", false}, {"caf\xc3", false},
	} {
		if got := IsText([]byte(tt.b)); got != tt.want {
			t.Errorf("IsText(%q) = %v, want %v", tt.b, got, tt.want)
		}
	}
}
