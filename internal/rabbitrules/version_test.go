package rabbitrules

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
		if got := RequeueCounts(ParseVersion(tc.version)); got != tc.want {
			t.Errorf("RequeueCounts(%q) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

func TestDefaultLimit(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    int64
		ok      bool
	}{{"3.10.8", 0, false}, {"", 0, false}, {"4.0.5", 20, true}, {"4.3.6", 20, true}} {
		if n, ok := DefaultLimit(ParseVersion(tc.version)); n != tc.want || ok != tc.ok {
			t.Errorf("DefaultLimit(%q) = %d, %v; want %d, %v", tc.version, n, ok, tc.want, tc.ok)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	v := func(s string) Version { return ParseVersion(s) }
	for _, tc := range []struct {
		name    string
		args    map[string]any
		version Version
		want    string // "arg refused|ignored", or "" for nothing on that version
	}{
		{"v1 on 4.3", map[string]any{"x-queue-version": int64(1)}, v("4.3.6"), "x-queue-version refused"},
		{"v1 from JSON on 4.3", map[string]any{"x-queue-version": float64(1)}, v("4.3.0"), "x-queue-version refused"},
		{"v1 on 4.0", map[string]any{"x-queue-version": int64(1)}, v("4.0.5"), ""},
		{"v1 on an unknown version", map[string]any{"x-queue-version": int64(1)}, Version{}, ""},
		{"v2 on 4.3", map[string]any{"x-queue-version": int64(2)}, v("4.3.6"), ""},
		{"lazy on 4.3", map[string]any{"x-queue-mode": "lazy"}, v("4.3.6"), "x-queue-mode ignored"},
		{"lazy on 3.10", map[string]any{"x-queue-mode": "lazy"}, v("3.10.8"), ""},
		{"none", nil, v("4.3.6"), ""},
		{"delayed retry on 4.0", map[string]any{"x-delayed-retry-type": "failed"}, v("4.0.5"), "x-delayed-retry-type ignored"},
		{"delayed retry on 3.10", map[string]any{"x-delayed-retry-type": "all"}, v("3.10.8"), "x-delayed-retry-type ignored"},
		{"delayed retry on 4.3", map[string]any{"x-delayed-retry-type": "failed"}, v("4.3.6"), ""},
		{"delayed retry, unknown version", map[string]any{"x-delayed-retry-type": "failed"}, Version{}, ""},
		{"delayed retry disabled on 4.0", map[string]any{"x-delayed-retry-type": "disabled"}, v("4.0.5"), ""},
	} {
		got := ""
		for _, f := range CheckArgs(tc.args) {
			if f.On(tc.version) {
				got = f.Arg + map[bool]string{true: " refused", false: " ignored"}[f.Refused]
			}
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEquivalenceArgs(t *testing.T) {
	got := EquivalenceArgs(map[string]any{"x-queue-type": "classic", "x-max-length": int64(5)})
	if _, ok := got["x-queue-type"]; ok || len(got) != 1 {
		t.Errorf("x-queue-type classic kept: %v", got)
	}
	if got := EquivalenceArgs(map[string]any{"x-queue-type": "quorum"}); got["x-queue-type"] != "quorum" {
		t.Errorf("x-queue-type quorum dropped: %v", got)
	}
}

// TestCheckQueuePolicy: a policy's delayed-retry-type counts as the
// argument does, and the finding says the retry is missing, not refused.
func TestCheckQueuePolicy(t *testing.T) {
	fs := CheckQueue(nil, map[string]any{"delayed-retry-type": "all"})
	if len(fs) != 1 || fs[0].Arg != "delayed-retry-type" || fs[0].Refused || !fs[0].Missing || !fs[0].On(ParseVersion("4.2.1")) || fs[0].On(ParseVersion("4.3.0")) {
		t.Errorf("findings %+v", fs)
	}
}
