// Package logfile is the daemon's own log file with size-based rotation
// (log_file, log_rotate_bytes, log_rotate_max_files, named as Consul and
// Nomad name them). hclog writes each entry with one Write call, so a Writer
// that rotates only between writes never splits a line across two files and,
// holding one lock for the write and the rotation, never loses or repeats one.
//
// The live file is the configured path; rotated files sit beside it as
// PATH.1, PATH.2, … numbered in the order they were rotated (the highest is
// the newest), so a rotation is one rename and never renumbers the others.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Options configure a Writer.
type Options struct {
	// Path of the live log file; its directory is created (0700) if missing.
	Path string
	// RotateBytes rotates the file before a write that would take it past
	// this size. 0 never rotates. A single write larger than it goes alone
	// into a fresh file: a line is never cut.
	RotateBytes int64
	// MaxFiles is how many rotated files are kept besides the live one:
	// 0 keeps all of them (Consul's default), -1 keeps none (a rotation
	// just starts the file afresh), N keeps the newest N. The daemon's
	// default is DefaultMaxFiles, not 0: logs kept forever fill the disk
	// of a node left alone for a year (issue 35).
	MaxFiles int
}

// DefaultMaxFiles is log_rotate_max_files when unset: ten rotated files
// (with log_rotate_bytes = 10 MiB, at most 110 MiB on disk).
const DefaultMaxFiles = 10

// Validate refuses options the Writer could not honour, naming the config key.
func (o Options) Validate() error {
	var errs []error
	if o.Path == "" && (o.RotateBytes != 0 || (o.MaxFiles != 0 && o.MaxFiles != DefaultMaxFiles)) {
		errs = append(errs, errors.New("log_rotate_bytes and log_rotate_max_files need log_file"))
	}
	if o.Path != "" && (strings.HasSuffix(o.Path, "/") || filepath.Base(o.Path) == "." || filepath.Base(o.Path) == "..") {
		errs = append(errs, fmt.Errorf("log_file %q must name a file, not a directory", o.Path))
	}
	if o.RotateBytes < 0 {
		errs = append(errs, fmt.Errorf("log_rotate_bytes must be 0 (no rotation) or positive, got %d", o.RotateBytes))
	}
	if o.MaxFiles < -1 {
		errs = append(errs, fmt.Errorf("log_rotate_max_files must be -1 (keep none), 0 (keep all) or positive, got %d", o.MaxFiles))
	}
	return errors.Join(errs...)
}

// Writer is an io.WriteCloser over the live log file. Safe for concurrent use.
type Writer struct {
	opts Options
	euid int
	mu   sync.Mutex
	f    *os.File
	size int64
	next int // number the next rotated file gets
	// tightened is the mode a pre-existing live file had when Open or
	// Reopen narrowed it to 0600 (0 when it was already private).
	tightened os.FileMode
}

// Open opens (appending) or creates the live file and finds the numbering of
// the rotated files already there, so a restart continues the series.
func Open(o Options) (*Writer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Path == "" {
		return nil, errors.New("log_file is empty")
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, fmt.Errorf("log_file %s: %w", o.Path, err)
	}
	if st, err := os.Lstat(o.Path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("log_file %s is a directory; give a file name such as %s", o.Path, filepath.Join(o.Path, "svcd.log"))
	}
	w := &Writer{opts: o, euid: os.Geteuid()}
	if err := checkDir(o.Path, w.euid); err != nil {
		return nil, err
	}
	if err := w.renumber(); err != nil {
		return nil, err
	}
	f, size, err := w.openLive(0)
	if err != nil {
		return nil, err
	}
	w.f, w.size = f, size
	return w, nil
}

// renumber finds the rotated files already there, so the series continues.
func (w *Writer) renumber() error {
	nums, err := w.rotated()
	if err != nil {
		return err
	}
	w.next = 1
	if len(nums) > 0 {
		w.next = nums[len(nums)-1] + 1
	}
	return nil
}

// openLive opens the live file through openTrusted (no symlink, owned by
// this user, 0600) and returns it with its size.
func (w *Writer) openLive(extra int) (*os.File, int64, error) {
	f, was, err := openTrusted(w.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|extra, w.euid)
	if err != nil {
		return nil, 0, err
	}
	if was != 0 {
		w.tightened = was
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("log_file %s: %w", w.opts.Path, err)
	}
	return f, st.Size(), nil
}

// Tightened reports the mode a pre-existing log file had when it was
// narrowed to 0600, so the daemon can say so once in its log.
func (w *Writer) Tightened() (os.FileMode, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tightened, w.tightened != 0
}

// Reopen closes the live file and opens the configured path again: the
// SIGHUP step of logrotate without copytruncate (it renames the file, then
// signals). Lines written before Reopen went to the renamed file, lines
// after it go to the new one; the lock makes the switch fall between two
// lines. On failure the old handle stays live and nothing is lost.
func (w *Writer) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fs.ErrClosed
	}
	if err := checkDir(w.opts.Path, w.euid); err != nil {
		return err
	}
	f, size, err := w.openLive(0)
	if err != nil {
		return err
	}
	_ = w.renumber()
	old := w.f
	w.f, w.size = f, size
	return old.Close()
}

// Write appends p to the live file, rotating first when p would take the
// file past RotateBytes. A failed rotation keeps writing to the file that is
// open: a line is worth more than the size bound.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, fs.ErrClosed
	}
	if w.opts.RotateBytes > 0 && w.size > 0 && w.size+int64(len(p)) > w.opts.RotateBytes {
		_ = w.rotate() // on failure w.f is still the old, open file
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// rotate renames the live file to the next number, opens a fresh live file
// and removes rotated files beyond MaxFiles. Called with mu held.
func (w *Writer) rotate() error {
	archive := w.opts.Path + "." + strconv.Itoa(w.next)
	if w.opts.MaxFiles == -1 {
		archive = "" // keep none: truncate by starting a new file
	}
	if archive != "" {
		if err := os.Rename(w.opts.Path, archive); err != nil {
			return err
		}
		w.next++
	}
	old := w.f
	f, _, err := w.openLive(truncIf(archive == ""))
	if err != nil {
		return err // old stays the live handle (now renamed): nothing is lost
	}
	old.Close()
	w.f, w.size = f, 0
	if w.opts.MaxFiles > 0 {
		w.prune()
	}
	return nil
}

func truncIf(b bool) int {
	if b {
		return os.O_TRUNC
	}
	return 0
}

// prune removes the oldest rotated files beyond MaxFiles.
func (w *Writer) prune() {
	nums, err := w.rotated()
	if err != nil {
		return
	}
	for len(nums) > w.opts.MaxFiles {
		_ = os.Remove(w.opts.Path + "." + strconv.Itoa(nums[0]))
		nums = nums[1:]
	}
}

// rotated lists the numbers of the rotated files, oldest first.
func (w *Writer) rotated() ([]int, error) {
	dir, base := filepath.Split(w.opts.Path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log_file %s: %w", w.opts.Path, err)
	}
	var nums []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	return nums, nil
}

// Close closes the live file; later writes fail with fs.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
