package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Scratch directories: each spawner of the hostops worker owns one
// directory under the scratch root, named OwnerName()-s<n>, for the life of
// the spawner. A command gets its spawner's directory as TMPDIR and may
// write nowhere else by default; after the command the directory is emptied
// (EmptyDir) and handed to the next command of that spawner.

// OwnerName is the prefix of a worker's directories: w<pid>-<stamp>, the
// pid naming the owner for the stale sweeps (CleanStale, CleanStaleScratch)
// and the stamp keeping two owners of one pid apart.
func OwnerName(pid int) string {
	return "w" + strconv.Itoa(pid) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// CleanStaleScratch removes the scratch directories under root whose owner
// (OwnerName) no longer runs; live owners' directories are left alone.
func CleanStaleScratch(root string) (removed int) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		owner, rest, _ := strings.Cut(strings.TrimPrefix(e.Name(), "w"), "-")
		stamp, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(owner)
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "w") || err != nil || ownerAlive(pid, stamp) {
			continue
		}
		if os.RemoveAll(filepath.Join(root, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// EmptyDir removes everything inside dir and keeps dir itself (its inode
// is what a Landlock rule names). A directory a command made unreadable or
// unwritable is opened up first; what still cannot go is an error, and the
// caller retires the directory. Call it once no process of the command is
// left (its cgroup is empty): nothing else writes there.
func EmptyDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var first error
	for _, n := range names {
		p := filepath.Join(dir, n)
		err := os.RemoveAll(p)
		if err != nil {
			openUp(p)
			err = os.RemoveAll(p)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openUp gives the owner full rights on every directory beneath p (a
// command may chmod 000 its own directories, which stops RemoveAll of an
// unprivileged worker).
func openUp(p string) {
	_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = unix.Chmod(path, 0o700)
		}
		return nil
	})
}
