package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkDataDirOwner refuses a data dir that another user could tamper with:
// the raft log and the token file live there, and whoever can replace the
// token file chooses the token that runs commands as this daemon's user.
// The dir must be owned by the daemon's user, and neither it nor any parent
// up to the first one owned by root may be writable by group or others
// (a sticky dir such as /tmp is allowed: others cannot rename or remove
// what they do not own there). This is the check ssh makes of a key's path.
func checkDataDirOwner(dir string, euid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if uid := ownerOf(st); uid != euid {
		return fmt.Errorf("data dir %s is owned by uid %d, not by this daemon's user (uid %d): another user could replace the token file or the raft log; run chown %d %s, or start with -insecure-token-file (insecure_token_file = true) to accept it",
			abs, uid, euid, euid, abs)
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("data dir parent: %w", err)
		}
		mode := st.Mode()
		if mode.Perm()&0o022 != 0 && mode&os.ModeSticky == 0 {
			return fmt.Errorf("%s has mode %04o: group or others can write to it and so replace the data dir %s or its token file; run chmod go-w %s, or start with -insecure-token-file (insecure_token_file = true) to accept it",
				p, mode.Perm(), abs, p)
		}
		uid := ownerOf(st)
		if uid != 0 && uid != euid {
			return fmt.Errorf("%s, a parent of the data dir %s, is owned by uid %d, neither root nor this daemon's user (uid %d): that user could replace the data dir; move the data dir, or start with -insecure-token-file (insecure_token_file = true) to accept it",
				p, abs, uid, euid)
		}
		// The first root-owned parent ends the walk: above it, only root
		// could have moved things (the data dir itself does not count, so
		// a root daemon's data dir still has its parents checked).
		if (uid == 0 && p != abs) || p == filepath.Dir(p) {
			return nil
		}
	}
}

// ownerOf is the uid owning a file (Linux: from the stat_t).
func ownerOf(st os.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}
