package cmd

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestBuildInfoFrom(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(settings ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(settings); i += 2 {
			s = append(s, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return s
	}
	tests := []struct {
		name                  string
		version, commit, date string // as -ldflags -X sets them
		info                  *debug.BuildInfo
		want                  buildInfo
	}{
		{
			name:    "release: ldflags win over build info",
			version: "1.4.0", commit: "0123456789abcdef0123456789abcdef01234567", date: "2026-05-01T10:00:00Z",
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "ffff", "vcs.time", "2020-01-01T00:00:00Z")},
			want: buildInfo{Version: "1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-05-01T10:00:00Z"},
		},
		{
			name: "go install module@v1.4.0: the module version, without the v",
			info: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			want: buildInfo{Version: "1.4.0"},
		},
		{
			name: "go install module@commit: the pseudo-version",
			info: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260501100000-0123456789ab"}},
			want: buildInfo{Version: "0.0.0-20260501100000-0123456789ab"},
		},
		{
			name: "build in a checkout: dev, with the VCS revision, time and modified flag",
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "abcdef0123456789", "vcs.time", "2026-04-30T08:00:00Z", "vcs.modified", "true")},
			want: buildInfo{Version: "dev", Commit: "abcdef0123456789", Date: "2026-04-30T08:00:00Z", Modified: true},
		},
		{
			name: "no build info",
			want: buildInfo{Version: "dev"},
		},
		{
			name:    "placeholders of a release tool that could not read the repository say nothing",
			version: "0.0.1-next", commit: "none", date: "0001-01-01T00:00:00Z",
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "abc", "vcs.time", "2026-04-30T08:00:00Z")},
			want: buildInfo{Version: "0.0.1-next", Commit: "abc", Date: "2026-04-30T08:00:00Z"},
		},
		{
			name:    "a version that is not v-digit keeps its v",
			version: "vnext",
			want:    buildInfo{Version: "vnext"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.GoVersion, tt.want.Platform = runtime.Version(), platform
			got := buildInfoFrom(tt.version, tt.commit, tt.date, tt.info)
			if d := testdiff.JSON(t, tt.want, got); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestVersionStamped runs `dlq version` with the variables a release sets.
func TestVersionStamped(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "1.4.0", "0123456789abcdef0123456789abcdef01234567", "2026-05-01T10:00:00Z"

	stdout, stderr, code := runDLQ(t, "version")
	want := "dlq 1.4.0 (0123456789ab)\nbuilt 2026-05-01T10:00:00Z with " + runtime.Version() + " for " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if d := testdiff.Text(want, stdout); d != "" {
		t.Error(d)
	}

	stdout, _, code = runDLQ(t, "version", "-o", "json")
	var got buildInfo
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	if got.Version != "1.4.0" || got.Commit != commit || got.Date != date {
		t.Errorf("json: %s", strings.TrimSpace(stdout))
	}
}
