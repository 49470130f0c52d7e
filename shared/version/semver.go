package version

import (
	"strconv"
	"strings"
)

// Release is the MAJOR.MINOR.PATCH of a version string ("0.2.1",
// "v0.2.1-rc1+abc", "0.1.0-dev+abcdef"); pre-release and build suffixes are
// dropped: the data dir's downgrade rule compares major and minor only.
type Release struct{ Major, Minor, Patch int }

// ParseRelease reads a version string; ok is false for anything that is not
// MAJOR.MINOR.PATCH with an optional leading v and -/+ suffix ("unknown", "").
func ParseRelease(s string) (r Release, ok bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Release{}, false
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
			return Release{}, false
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || strconv.Itoa(v) != p {
			return Release{}, false
		}
		n[i] = v
	}
	return Release{n[0], n[1], n[2]}, true
}

// NewerMinor reports whether r is a later major.minor than o (a patch
// release of the same minor is not newer for this purpose).
func (r Release) NewerMinor(o Release) bool {
	if r.Major != o.Major {
		return r.Major > o.Major
	}
	return r.Minor > o.Minor
}

func (r Release) String() string {
	return strconv.Itoa(r.Major) + "." + strconv.Itoa(r.Minor) + "." + strconv.Itoa(r.Patch)
}
