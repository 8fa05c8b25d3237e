package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set with -ldflags "-X github.com/dlq-tools/dlq/cmd.version=1.2.0 -X …commit=… -X …date=…";
// otherwise read from the module and VCS information Go embeds.
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildInfo is what `dlq version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readBuildInfo() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildInfoFrom(version, commit, date, info)
}

// buildInfoFrom combines the values a release stamps with -ldflags -X
// (which win) with what Go embeds: the module version of a
// `go install …@v1.2.0` build and the VCS revision, time and modified flag
// of a build from a checkout. info may be nil.
func buildInfoFrom(version, commit, date string, info *debug.BuildInfo) buildInfo {
	// A release tool that cannot read the repository stamps placeholders
	// (GoReleaser: commit "none", the zero time): they say nothing.
	if commit == "none" || commit == "unknown" {
		commit = ""
	}
	if strings.HasPrefix(date, "0001-01-01") {
		date = ""
	}
	bi := buildInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if bi.Commit == "" {
					bi.Commit = s.Value
				}
			case "vcs.time":
				if bi.Date == "" {
					bi.Date = s.Value
				}
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
	}
	// A release stamps 1.2.0, `go install` reports v1.2.0: print one form.
	if len(bi.Version) > 1 && bi.Version[0] == 'v' && bi.Version[1] >= '0' && bi.Version[1] <= '9' {
		bi.Version = bi.Version[1:]
	}
	if bi.Version == "" {
		bi.Version = "dev"
	}
	return bi
}

// versionString is "1.2.0" or "dev (abc1234)".
func versionString() string {
	bi := readBuildInfo()
	s := bi.Version
	if bi.Commit != "" {
		c := bi.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (" + c
		if bi.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

type versionOptions struct {
	f *Factory
}

func newCmdVersion(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	opts := &versionOptions{f: f}
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print dlq's version, commit and build date",
		Args:    cobra.NoArgs,
		Example: "  dlq version\n  dlq version --output json",
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON)
	return c
}

func versionRun(opts *versionOptions) error {
	format, err := outputFormat(opts.f, OutputTable, OutputJSON)
	if err != nil {
		return err
	}
	bi := readBuildInfo()
	if format == OutputJSON {
		return writeJSON(opts.f.IO.Out, bi)
	}
	fmt.Fprintf(opts.f.IO.Out, "dlq %s\n", versionString())
	if bi.Date != "" {
		fmt.Fprintf(opts.f.IO.Out, "built %s with %s for %s\n", bi.Date, bi.GoVersion, bi.Platform)
	} else {
		fmt.Fprintf(opts.f.IO.Out, "built with %s for %s\n", bi.GoVersion, bi.Platform)
	}
	return nil
}
