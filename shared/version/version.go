// Package version names the build. Version, Commit and BuildDate are set with
// -ldflags -X at build time (make build, make dist). A plain `go build` leaves
// them unset; Commit and BuildDate then come from the VCS stamp Go embeds
// (vcs.revision, vcs.time: the commit's time), never from the clock, so two
// builds of one commit name the same date.
package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

var (
	Version   = "0.1.0-dev"
	Commit    = "unknown"
	BuildDate = "" // RFC 3339 UTC time of the commit (SOURCE_DATE_EPOCH in make dist)
)

// Info is the light summary served by GET /version and printed by
// `svcd version` and `svcctl version`.
type Info struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"` // "unknown" when neither -ldflags nor the VCS stamp gives it
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"` // GOOS/GOARCH of the binary
	API       string `json:"api"`
}

// Get returns the summary of this build.
func Get() Info {
	commit, date := stamp()
	return Info{Name: "svcd", Version: Version, Commit: commit, BuildDate: date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, API: "v1"}
}

// String is the one-line form the version commands print.
func (i Info) String() string {
	return i.Version + " (commit " + i.Commit + ", built " + i.BuildDate + ", " + i.GoVersion + ", " + i.Platform + ")"
}

var vcsOnce = sync.OnceValues(func() (revision, time string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			time = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if revision != "" && modified {
		revision += "-dirty"
	}
	return revision, time
})

// stamp prefers the -ldflags values and falls back to the VCS stamp.
func stamp() (commit, date string) {
	commit, date = Commit, BuildDate
	if commit == "unknown" || commit == "" || date == "" {
		rev, t := vcsOnce()
		if (commit == "unknown" || commit == "") && rev != "" {
			commit = rev
		}
		if date == "" {
			date = t
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	if date == "" {
		date = "unknown"
	}
	return commit, date
}
