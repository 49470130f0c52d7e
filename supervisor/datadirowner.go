package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svcd/svcd/shared/trustedpath"
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
	var bad *trustedpath.Error
	switch err := trustedpath.CheckDirs(abs, euid); {
	case err == nil:
		return nil
	case !errors.As(err, &bad):
		return fmt.Errorf("data dir parent: %w", err)
	case bad.Kind == trustedpath.WritableByOthers:
		return fmt.Errorf("%s has mode %04o: group or others can write to it and so replace the data dir %s or its token file; run chmod go-w %s, or start with -insecure-token-file (insecure_token_file = true) to accept it",
			bad.Dir, bad.Mode, abs, bad.Dir)
	default:
		return fmt.Errorf("%s, a parent of the data dir %s, is owned by uid %d, neither root nor this daemon's user (uid %d): that user could replace the data dir; move the data dir, or start with -insecure-token-file (insecure_token_file = true) to accept it",
			bad.Dir, abs, bad.UID, euid)
	}
}

// ownerOf is the uid owning a file (Linux: from the stat_t).
func ownerOf(st os.FileInfo) int { return trustedpath.OwnerOf(st) }
