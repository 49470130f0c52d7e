package raftstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svcd/svcd/shared/version"
)

// DataFormatVersion is the layout of the data dir this build writes and the
// newest it can open. Raise it when a change to raft.db, the snapshots or
// the FSM's encoding cannot be read by an older binary, and teach Open to
// migrate the older layouts it still accepts.
const DataFormatVersion = 1

// FormatFileName is the small file in the data dir that records its format.
const FormatFileName = "FORMAT"

// DataFormat is the content of data_dir/FORMAT.
type DataFormat struct {
	FormatVersion int `json:"format_version"`
	// ClusterID names the raft state this data dir was created for; it is
	// written into every snapshot file's header.
	ClusterID string `json:"cluster_id"`
	// WrittenBy names the svcd build that last opened the data dir, as
	// "VERSION (commit C)" (before issue 35: the bare version, no commit).
	// Older binaries print it in their refusal.
	WrittenBy string `json:"written_by"`
	// WrittenVersion and WrittenCommit are WrittenBy's parts, for the
	// downgrade rule (versions.go); empty in files written before them.
	WrittenVersion string `json:"written_version,omitempty"`
	WrittenCommit  string `json:"written_commit,omitempty"`
	// CreatedBy is the WrittenBy of the build that created the data dir.
	CreatedBy string `json:"created_by,omitempty"`
}

// FormatError is a data dir this binary must not open.
type FormatError struct {
	Dir       string
	Found     int
	WrittenBy string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("data dir %s has format version %d (written by svcd %s); this svcd %s knows format versions up to %d: run a newer svcd, or restore a snapshot into a fresh data dir",
		e.Dir, e.Found, e.WrittenBy, version.Version, DataFormatVersion)
}

// ReadDataFormat reads data_dir/FORMAT; ok is false when there is none.
func ReadDataFormat(dataDir string) (f DataFormat, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, FormatFileName))
	if errors.Is(err, os.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return f, false, fmt.Errorf("read data dir format: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil || f.FormatVersion < 1 {
		return f, false, fmt.Errorf("data dir format file %s is not valid (want {\"format_version\":N,…}): %v", filepath.Join(dataDir, FormatFileName), err)
	}
	return f, true, nil
}

// ensureDataFormat checks the data dir's format and the version that last
// wrote it before anything in it is opened (checkVersions), records the
// current one (atomically) when there is none: a fresh dir, or one made
// before FORMAT existed (format 1), and records this build as the last
// writer, logging the step when it differs.
func ensureDataFormat(dataDir string, o VersionOptions) (DataFormat, error) {
	f, ok, err := ReadDataFormat(dataDir)
	if err != nil {
		return f, err
	}
	if ok {
		if f.FormatVersion > DataFormatVersion {
			return f, &FormatError{Dir: dataDir, Found: f.FormatVersion, WrittenBy: f.WrittenBy}
		}
		return recordWriter(dataDir, f, o)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "raft.db")); err == nil && o.Logger != nil {
		o.Logger.Info("data dir has raft state but no FORMAT (made before formats were recorded): recording format 1", "data_dir", dataDir, "format_version", DataFormatVersion)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return f, err
	}
	f = DataFormat{FormatVersion: DataFormatVersion, ClusterID: hex.EncodeToString(id[:])}
	stampWriter(&f)
	f.CreatedBy = f.WrittenBy
	return f, writeDataFormat(dataDir, f)
}

// writeDataFormat writes FORMAT through a temporary file, fsync and rename,
// so a crash leaves either no file or a whole one.
func writeDataFormat(dataDir string, f DataFormat) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, ".FORMAT-*")
	if err != nil {
		return fmt.Errorf("write data dir format: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write data dir format: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write data dir format: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dataDir, FormatFileName)); err != nil {
		return fmt.Errorf("write data dir format: %w", err)
	}
	d, err := os.Open(dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
