package logfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// readAll returns every line of the live file and its rotated files, and how
// many files there are. It fails the test on a line cut in two.
func readAll(t *testing.T, path string) (lines []string, files int, maxSize int64) {
	t.Helper()
	matches, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		maxSize = max(maxSize, st.Size())
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("%s ends in the middle of a line", m)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		files++
	}
	return lines, files, maxSize
}

// writeLoad runs writers goroutines of perWriter lines each through an hclog
// logger over w (the way the daemon uses it) and returns the line ids.
func writeLoad(t *testing.T, w *Writer, writers, perWriter int) {
	t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Name: "load", Output: w, JSONFormat: true})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				// Lines of varying length, some longer than others, all whole.
				log.Info("line", "id", fmt.Sprintf("w%d-%d", g, i), "pad", strings.Repeat("x", (i*7)%150))
			}
		})
	}
	wg.Wait()
}

func lineID(t *testing.T, line string) string {
	t.Helper()
	_, rest, ok := strings.Cut(line, `"id":"`)
	if !ok {
		t.Fatalf("line without id: %q", line)
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

func TestRotationUnderLoadKeepsEveryLineOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "svcd.log")
	w, err := Open(Options{Path: path, RotateBytes: 4096, MaxFiles: 0})
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 8, 2000
	writeLoad(t, w, writers, perWriter)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, files, maxSize := readAll(t, path)
	seen := map[string]int{}
	for _, l := range lines {
		seen[lineID(t, l)]++
	}
	for g := range writers {
		for i := range perWriter {
			if n := seen[fmt.Sprintf("w%d-%d", g, i)]; n != 1 {
				t.Fatalf("line w%d-%d appears %d times across %d files, want once", g, i, n, files)
			}
		}
	}
	if len(lines) != writers*perWriter {
		t.Fatalf("%d lines across the files, want %d", len(lines), writers*perWriter)
	}
	if files < 100 {
		t.Fatalf("only %d files: the load did not rotate many times", files)
	}
	if maxSize > 4096 {
		t.Fatalf("a file grew to %d bytes, past log_rotate_bytes 4096", maxSize)
	}
	if info, err := os.Stat(filepath.Dir(path)); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("log dir mode = %v, %v; want 0700", info.Mode().Perm(), err)
	}
}

func TestMaxFilesBoundsTheFilesAndKeepsTheNewestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svcd.log")
	w, err := Open(Options{Path: path, RotateBytes: 2048, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 6, 1500
	writeLoad(t, w, writers, perWriter)
	w.Close()
	lines, files, _ := readAll(t, path)
	if files > 4 {
		t.Fatalf("%d files, want at most the live one + log_rotate_max_files 3", files)
	}
	// Rotation follows write order, so what is kept of each writer is the
	// end of its sequence, every line once, with no hole.
	kept := map[int]map[int]int{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(lineID(t, l), "w%d-%d", &g, &i); err != nil {
			t.Fatal(err)
		}
		if kept[g] == nil {
			kept[g] = map[int]int{}
		}
		kept[g][i]++
	}
	for g, ids := range kept {
		first := perWriter
		for i, n := range ids {
			if n != 1 {
				t.Fatalf("line w%d-%d kept %d times", g, i, n)
			}
			first = min(first, i)
		}
		for i := first; i < perWriter; i++ {
			if ids[i] != 1 {
				t.Fatalf("writer %d: line %d is missing although line %d before it was kept", g, i, first)
			}
		}
	}
	// The very last line written (some writer's last) is kept.
	last := false
	for g := range writers {
		last = last || kept[g][perWriter-1] == 1
	}
	if !last {
		t.Fatal("no writer's last line is in the files: the newest lines were pruned")
	}
}

func TestRestartContinuesTheNumbering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svcd.log")
	for run := range 2 {
		w, err := Open(Options{Path: path, RotateBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			fmt.Fprintf(w, "run %d line %d %s\n", run, i, strings.Repeat("y", 60))
		}
		w.Close()
	}
	// 10 lines of ~80 bytes at 100 bytes per file: 10 files, the first run's
	// rotated files never overwritten by the second's.
	lines, files, _ := readAll(t, path)
	if len(lines) != 10 || files != 10 {
		t.Fatalf("%d lines in %d files, want 10 in 10", len(lines), files)
	}
	for n := 1; n <= 9; n++ {
		if _, err := os.Stat(path + "." + strconv.Itoa(n)); err != nil {
			t.Fatalf("rotated file %d: %v", n, err)
		}
	}
}

func TestALineLongerThanTheLimitIsWrittenWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svcd.log")
	w, err := Open(Options{Path: path, RotateBytes: 64, MaxFiles: 0})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("z", 500) + "\n"
	for _, s := range []string{"short\n", long, "after\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	w.Close()
	lines, files, _ := readAll(t, path)
	if len(lines) != 3 || files != 3 || lines[0]+lines[1]+lines[2] == "" {
		t.Fatalf("%d lines in %d files, want 3 in 3", len(lines), files)
	}
	if _, err := w.Write([]byte("x\n")); err == nil {
		t.Fatal("a write after Close succeeded")
	}
}

func TestKeepNoneStartsAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svcd.log")
	w, err := Open(Options{Path: path, RotateBytes: 10, MaxFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"first 1\n", "second\n", "third 3\n"} {
		w.Write([]byte(s))
	}
	w.Close()
	b, _ := os.ReadFile(path)
	if string(b) != "third 3\n" {
		t.Fatalf("live file = %q, want only the last line", b)
	}
	if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
		t.Fatalf("rotated files kept with log_rotate_max_files -1: %v", m)
	}
}

func TestInvalidOptionsAreRefusedWithTheKeyName(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Path: filepath.Join(dir, "a.log"), RotateBytes: -1}, "log_rotate_bytes must be 0"},
		{Options{Path: filepath.Join(dir, "a.log"), MaxFiles: -2}, "log_rotate_max_files must be -1"},
		{Options{RotateBytes: 100}, "need log_file"},
		{Options{Path: dir + "/"}, "must name a file"},
		{Options{Path: dir}, "is a directory"},
	} {
		_, err := Open(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want an error containing %q", c.o, err, c.want)
		}
	}
}
