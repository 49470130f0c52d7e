// Package version names the build. Version and Commit are set with -ldflags -X
// at build time; the defaults describe a development build.
package version

import "runtime"

var (
	Version = "0.1.0-dev"
	Commit  = "unknown"
)

// Info is the light summary served by GET /version.
type Info struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	API       string `json:"api"`
}

// Get returns the summary of this build.
func Get() Info {
	return Info{Name: "svcd", Version: Version, Commit: Commit, GoVersion: runtime.Version(), API: "v1"}
}
