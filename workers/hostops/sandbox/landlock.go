package sandbox

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock: the kernel enforces which paths a process may write (and read).
// A ruleset is applied with landlock_restrict_self, to the calling thread
// and everything it starts afterwards; it can be narrowed, never widened.

// LandlockABI is the kernel's Landlock ABI version, 0 when it has none (or
// it is disabled at boot).
func LandlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

const (
	fsRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are the rights that apply to a file (not a directory).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// fsWrite is every right that changes the file system, for abi.
func fsWrite(abi int, sockets bool) uint64 {
	w := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if sockets {
		w |= unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	}
	if abi >= 2 {
		w |= unix.LANDLOCK_ACCESS_FS_REFER // rename/link across directories
	}
	if abi >= 3 {
		w |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return w
}

// DeviceFiles may be written by every command wherever the write roots
// are: shells redirect to them all the time.
var DeviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// Ruleset is what a Landlock domain allows.
type Ruleset struct {
	Write []string // may write (and read) beneath these
	Read  []string // may read beneath these; nil: everything
	// WriteFiles are single files that may be written (device files,
	// cgroup control files) outside Write.
	WriteFiles []string
	// Sockets: creating a unix socket file is restricted too (off for the
	// worker, whose plugin socket lives in the temporary directory).
	Sockets bool
	// Scoped (ABI 6): no signal to, no abstract unix socket of, a process
	// outside the domain.
	Scoped bool
	// IoctlDev (ABI 5): ioctl on device files only beneath Write and on
	// WriteFiles.
	IoctlDev bool
	// ConnectPorts (ABI 4): TCP connects only to these ports (landlock_net.go).
	ConnectPorts []uint16
}

// RestrictThread applies r to the calling thread (lock it first) with the
// best of abi, after setting no_new_privs (which Landlock requires of an
// unprivileged thread and which the sandbox always wants). Paths that do not
// exist are skipped and returned.
func RestrictThread(r Ruleset, abi int) (skipped []string, err error) {
	if abi < 1 {
		return nil, errors.New("the kernel has no Landlock")
	}
	h := handledFor(abi, r)
	attr := unix.LandlockRulesetAttr{Access_fs: h.FS, Access_net: h.Net, Scoped: h.Scoped}
	rfd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), h.Size, 0)
	if e != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(rfd))
	add := func(path string, access uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			skipped = append(skipped, path)
			return nil
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= fileRights
		}
		access &= attr.Access_fs
		if access == 0 {
			return nil
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, e)
		}
		return nil
	}
	for _, p := range r.Write {
		if err := add(p, attr.Access_fs); err != nil {
			return skipped, err
		}
	}
	for _, p := range r.Read {
		if err := add(p, fsRead); err != nil {
			return skipped, err
		}
	}
	for _, p := range r.WriteFiles {
		if err := add(p, fileRights); err != nil {
			return skipped, err
		}
	}
	if h.Net != 0 {
		if err := allowConnectPorts(rfd, r.ConnectPorts); err != nil {
			return skipped, err
		}
	}
	if err := SetNoNewPrivs(); err != nil {
		return skipped, err
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); e != 0 {
		return skipped, fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return skipped, nil
}

// SetNoNewPrivs sets no_new_privs on the calling thread: nothing it execs
// afterwards gains privileges (setuid bits, file capabilities are ignored).
func SetNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}

// existing keeps the paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
