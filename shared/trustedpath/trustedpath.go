// Package trustedpath is the check the daemon makes before it trusts a file
// another user could have planted or could later replace: the data dir and
// its token file, and the log file. It is the check ssh makes of a key's
// path: the directories from the file up to the first one owned by root must
// be owned by root or the daemon's user and not writable by group or others
// (a sticky directory such as /tmp is allowed: others cannot rename or remove
// what they do not own there). Callers word the refusal for their own file.
package trustedpath

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Kind says what made a directory untrusted.
type Kind int

const (
	// WritableByOthers: group or others can write to the directory (and it
	// is not sticky), so they could rename or replace what is in it.
	WritableByOthers Kind = iota + 1
	// ForeignOwner: the directory belongs to neither root nor the daemon's
	// user, so its owner could replace what is in it.
	ForeignOwner
)

// Error names the first untrusted directory met walking up from a path.
type Error struct {
	Dir  string      // the untrusted directory
	Kind Kind        // why it is untrusted
	Mode os.FileMode // its permission bits
	UID  int         // its owner
}

func (e *Error) Error() string {
	if e.Kind == WritableByOthers {
		return fmt.Sprintf("%s has mode %04o: group or others can write to it", e.Dir, e.Mode.Perm())
	}
	return fmt.Sprintf("%s is owned by uid %d, neither root nor this daemon's user", e.Dir, e.UID)
}

// CheckDirs walks from dir (absolute) up to the first directory owned by
// root (dir itself does not end the walk, so a root daemon's directory
// still has its parents checked) and returns an *Error for the first one
// that group or others could write or that another user owns.
func CheckDirs(dir string, euid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		mode := st.Mode()
		if mode.Perm()&0o022 != 0 && mode&os.ModeSticky == 0 {
			return &Error{Dir: p, Kind: WritableByOthers, Mode: mode.Perm(), UID: OwnerOf(st)}
		}
		uid := OwnerOf(st)
		if uid != 0 && uid != euid {
			return &Error{Dir: p, Kind: ForeignOwner, Mode: mode.Perm(), UID: uid}
		}
		if (uid == 0 && p != abs) || p == filepath.Dir(p) {
			return nil
		}
	}
}

// OwnerOf is the uid owning a file (Linux: from the stat_t), -1 if unknown.
func OwnerOf(st os.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}
