package raftstore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFormatFile(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FormatFileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A data dir last written by a newer minor release is refused unless
// allowed; the same minor (a patch release) and older releases are opened,
// and the running build is recorded as the last writer with its commit.
func TestDataDirVersionRule(t *testing.T) {
	_, running, _ := thisBuild()
	if !strings.HasPrefix(running, "0.1.") {
		t.Skipf("the fixtures assume a 0.1.x build, this is %s", running)
	}
	newer := `{"format_version":1,"cluster_id":"c1","written_by":"0.2.0 (commit abc)","written_version":"0.2.0","written_commit":"abc"}`
	dir := t.TempDir()
	writeFormatFile(t, dir, newer)
	_, err := ensureDataFormat(dir, VersionOptions{})
	var de *DowngradeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "last written by svcd 0.2.0 (commit abc)") || !strings.Contains(err.Error(), "-allow-downgrade") {
		t.Fatalf("newer minor: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FormatFileName)); string(b) != newer {
		t.Fatalf("a refused FORMAT was rewritten: %s", b)
	}
	f, err := ensureDataFormat(dir, VersionOptions{AllowDowngrade: true})
	if err != nil || f.WrittenVersion != running || f.CreatedBy != "0.2.0 (commit abc)" || f.ClusterID != "c1" {
		t.Fatalf("with allow: %+v %v", f, err)
	}

	// The pre-issue-35 form: written_by is the bare version.
	old := t.TempDir()
	writeFormatFile(t, old, `{"format_version":1,"cluster_id":"c2","written_by":"0.1.0-dev"}`)
	f, err = ensureDataFormat(old, VersionOptions{})
	if err != nil || f.WrittenCommit == "" || !strings.Contains(f.WrittenBy, "(commit ") || f.ClusterID != "c2" {
		t.Fatalf("old form: %+v %v", f, err)
	}
	var onDisk DataFormat
	b, _ := os.ReadFile(filepath.Join(old, FormatFileName))
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk != f {
		t.Fatalf("on disk %s, returned %+v", b, f)
	}

	// A patch release of the same minor may go back and forth.
	patch := t.TempDir()
	writeFormatFile(t, patch, `{"format_version":1,"cluster_id":"c3","written_by":"0.1.9 (commit p)","written_version":"0.1.9"}`)
	if _, err := ensureDataFormat(patch, VersionOptions{}); err != nil {
		t.Fatalf("newer patch of the same minor: %v", err)
	}
	// A newer format is refused even with -allow-downgrade.
	fmtDir := t.TempDir()
	writeFormatFile(t, fmtDir, `{"format_version":2,"cluster_id":"c4","written_by":"0.1.0 (commit f)"}`)
	var fe *FormatError
	if _, err := ensureDataFormat(fmtDir, VersionOptions{AllowDowngrade: true}); !errors.As(err, &fe) {
		t.Fatalf("newer format with allow: %v", err)
	}
}
