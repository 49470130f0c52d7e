// Package datalock holds an exclusive lock on a daemon's data dir for the
// life of the process, so a second daemon on the same dir fails at once with
// the holder's pid instead of timing out on raft's log store.
package datalock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileName is the lock file inside the data dir.
const FileName = "LOCK"

// Lock is a held data dir lock. The kernel drops it when the process ends,
// however it ends, so a crashed daemon never leaves a stale lock behind.
type Lock struct {
	f *os.File
}

// HeldError says which dir is held and by which pid.
type HeldError struct {
	Dir  string
	Path string
	Pid  int // 0 when the holder wrote no readable pid
}

func (e *HeldError) Error() string {
	holder := "another process"
	if e.Pid > 0 {
		holder = "pid " + strconv.Itoa(e.Pid)
	}
	return fmt.Sprintf("data dir %s is in use by %s (lock file %s): stop that daemon, or give this one another data dir with -data-dir DIR or SVC_DATA_DIR=DIR", e.Dir, holder, e.Path)
}

// Acquire takes the lock on dir (which must exist) without waiting, and
// writes this process's pid in the lock file for the next one to name.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &HeldError{Dir: dir, Path: path, Pid: readPid(f)}
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("write data dir lock: %w", err)
		}
	}
	return &Lock{f: f}, nil
}

func readPid(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Release drops the lock. The file stays: removing it would let a third
// process lock a new inode while the second still waits on the old one.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
