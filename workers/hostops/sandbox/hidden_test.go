package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// HiddenReads lists every entry along the way to a hidden path but that
// way, and its stamp goes stale when an entry is added there.
func TestHiddenReads(t *testing.T) {
	// Not under /tmp: the stamp covers every folder on the way to the
	// hidden path, and other tests add entries to /tmp all the time, which
	// rightly makes a stamp there stale at once. The package's own folder
	// changes only when this test writes to it.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(wd, "hidden-reads-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	for _, d := range []string{"a/data/x", "a/other", "b"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.WriteFile(filepath.Join(base, "a", "file"), nil, 0o644)
	hidden := filepath.Join(base, "a", "data")
	reads, stamp, ok := HiddenReads([]string{hidden, ""})
	if !ok {
		t.Fatal("nothing hidden")
	}
	for _, want := range []string{filepath.Join(base, "a", "other"), filepath.Join(base, "a", "file"), filepath.Join(base, "b")} {
		if !slices.Contains(reads, want) {
			t.Errorf("%s not readable: %v", want, reads)
		}
	}
	for _, not := range []string{hidden, filepath.Join(hidden, "x"), filepath.Join(base, "a"), base, "/"} {
		if slices.Contains(reads, not) {
			t.Errorf("%s is in the read rules", not)
		}
	}
	if !stamp.Fresh() {
		t.Fatal("stale at once")
	}
	os.WriteFile(filepath.Join(base, "a", "new"), nil, 0o644)
	if stamp.Fresh() {
		t.Fatal("still fresh after an entry was added beside the hidden path")
	}
	if _, _, ok := HiddenReads([]string{"/"}); ok {
		t.Fatal("hiding / would hide everything")
	}
	if !Covers([]string{filepath.Join(base, "a")}, hidden) || Covers([]string{filepath.Join(base, "b")}, hidden) {
		t.Fatal("Covers")
	}
}
