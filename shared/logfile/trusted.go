package logfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/svcd/svcd/shared/trustedpath"
)

// The log file is opened the way the token file is read (issue 34): a root
// daemon that follows a symlink planted in its log directory appends its log
// to whatever file the link names, and one that appends to a file another
// user owns writes where that user reads. So the live file is opened with
// O_NOFOLLOW, must be a regular file owned by the daemon's user, and is made
// 0600 if it was wider; its directory, and each parent up to the first
// root-owned one, must be trusted as the data dir's are.

// checkDir refuses a log directory another user could write to or owns.
func checkDir(path string, euid int) error {
	dir := filepath.Dir(path)
	var bad *trustedpath.Error
	switch err := trustedpath.CheckDirs(dir, euid); {
	case err == nil:
		return nil
	case !errors.As(err, &bad):
		return fmt.Errorf("log_file %s: %w", path, err)
	case bad.Kind == trustedpath.WritableByOthers:
		return fmt.Errorf("log_file %s: %s has mode %04o: group or others can write to it and so put a link or a file of theirs in place of the log; run chmod go-w %s, or choose a log_file in a directory only this daemon's user can write",
			path, bad.Dir, bad.Mode, bad.Dir)
	default:
		return fmt.Errorf("log_file %s: %s is owned by uid %d, neither root nor this daemon's user (uid %d): that user could replace the log; choose a log_file in a directory this daemon's user owns",
			path, bad.Dir, bad.UID, euid)
	}
}

// openTrusted opens path with flags plus O_NOFOLLOW and O_CLOEXEC, creating
// it 0600, and checks the descriptor (so what is checked is what is
// written): a regular file owned by euid. A wider mode is narrowed to 0600
// and returned as was.
func openTrusted(path string, flags int, euid int) (f *os.File, was os.FileMode, err error) {
	f, err = os.OpenFile(path, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, fmt.Errorf("log_file %s is a symbolic link: svcd does not follow links for its log (whoever made the link chooses which file the daemon appends to); give the real path, or remove the link", path)
		}
		return nil, 0, fmt.Errorf("log_file %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("log_file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("log_file %s is not a regular file (%s); give the path of a file", path, st.Mode().Type())
	}
	if uid := trustedpath.OwnerOf(st); uid != euid {
		f.Close()
		return nil, 0, fmt.Errorf("log_file %s is owned by uid %d, not by this daemon's user (uid %d): that user reads what the daemon appends; run chown %d %s, or delete it to have it created afresh",
			path, uid, euid, euid, path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("log_file %s has mode %04o and could not be made 0600: %w", path, perm, err)
		}
		was = perm
	}
	return f, was, nil
}
