package raftstore

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/version"
)

// The downgrade rule (issue 35). An older build (b9402a8) started on a data
// dir a newer build had written and served it with cluster_id null and the
// pairing state invisible: it read state it did not understand as empty.
// So from now on every build records itself in FORMAT as the last writer
// (version and commit), and a build refuses a data dir last written by a
// newer major.minor release unless the operator says -allow-downgrade. A
// newer format_version is refused even then: that layout cannot be read.
// Patch releases of one minor may go back and forth.

// VersionOptions are what Open needs for the version check.
type VersionOptions struct {
	// AllowDowngrade opens a data dir last written by a newer minor release
	// (allow_downgrade, -allow-downgrade), with a warning.
	AllowDowngrade bool
	Logger         hclog.Logger
}

// DowngradeError is a data dir last written by a newer minor release.
type DowngradeError struct {
	Dir       string
	WrittenBy string
	Running   string
}

func (e *DowngradeError) Error() string {
	return fmt.Sprintf("data dir %s was last written by svcd %s, a newer release than this svcd %s: it may hold state this build would read as empty; run that release or a newer one, or start with -allow-downgrade (allow_downgrade = true) after reading docs/deploy.md (Downgrading)",
		e.Dir, e.WrittenBy, e.Running)
}

// thisBuild is "VERSION (commit C)" of the running binary, and its parts.
func thisBuild() (by, ver, commit string) {
	i := version.Get()
	return i.Version + " (commit " + i.Commit + ")", i.Version, i.Commit
}

func stampWriter(f *DataFormat) {
	f.WrittenBy, f.WrittenVersion, f.WrittenCommit = thisBuild()
}

// writtenVersion is the version that last wrote f: WrittenVersion, or for
// files from before it the first word of WrittenBy.
func writtenVersion(f DataFormat) string {
	if f.WrittenVersion != "" {
		return f.WrittenVersion
	}
	v, _, _ := strings.Cut(strings.TrimSpace(f.WrittenBy), " ")
	return v
}

// recordWriter applies the downgrade rule to an existing FORMAT, then makes
// this build its last writer, logging the step (from which build, which
// format) when it changes anything.
func recordWriter(dataDir string, f DataFormat, o VersionOptions) (DataFormat, error) {
	by, ver, commit := thisBuild()
	if f.WrittenBy == by && f.WrittenVersion == ver && f.WrittenCommit == commit {
		return f, nil
	}
	prev, ok := version.ParseRelease(writtenVersion(f))
	cur, curOK := version.ParseRelease(ver)
	if ok && curOK && prev.NewerMinor(cur) {
		if !o.AllowDowngrade {
			return f, &DowngradeError{Dir: dataDir, WrittenBy: f.WrittenBy, Running: by}
		}
		if o.Logger != nil {
			o.Logger.Warn("opening a data dir written by a newer release (-allow-downgrade)", "data_dir", dataDir, "written_by", f.WrittenBy, "running", by)
		}
	}
	if o.Logger != nil {
		o.Logger.Info("data dir written by another build; recording this one", "data_dir", dataDir,
			"written_by", f.WrittenBy, "running", by,
			"format_step", fmt.Sprintf("%d -> %d", f.FormatVersion, DataFormatVersion))
	}
	if f.CreatedBy == "" {
		f.CreatedBy = f.WrittenBy
	}
	f.FormatVersion = DataFormatVersion // formats before this one are migrated here when one exists
	stampWriter(&f)
	return f, writeDataFormat(dataDir, f)
}
