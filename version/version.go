// Package version reports which Sluice build is running.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time (-ldflags "-X github.com/sluice-search/sluice/version.Version=v0.1.0");
// builds without it report "dev".
var Version = "dev"

// Info describes the running build.
type Info struct {
	Version   string
	Commit    string // VCS revision, from the Go build info
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string
	Platform  string
}

// Get returns the running build's Info.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String formats Info on one line.
func (i Info) String() string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	} else if len(commit) > 12 {
		commit = commit[:12]
	}
	if i.Modified {
		commit += "-dirty"
	}
	return fmt.Sprintf("sluice %s (commit %s, %s, %s)", i.Version, commit, i.GoVersion, i.Platform)
}
