package hostops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The file routes never check a path and then open it again: between the
// two a symlink inside a root could be flipped to point out of it (issue
// 32 saw a root worker read a 0600 file that way). Every operation instead
// runs on an os.Root opened on the allowed root that holds the path, and
// os.Root resolves each component beneath that root with openat and
// O_NOFOLLOW, refusing a link or ".." that leaves it; whatever a link is
// flipped to meanwhile, the open lands inside the root or fails. With no
// roots configured the root is "/", so the same code runs either way.
//
// The lexical and symlink-resolved forms of the path (realPath) only pick
// the root; they are never trusted for the open itself.

// maxRelocations bounds how often an absolute symlink inside a root (which
// os.Root refuses as an escape even when it points back into a root) is
// resolved and the operation retried.
const maxRelocations = 8

// beneath runs op on the root that holds abs, with abs relative to it, and
// returns the absolute path op finally acted on. An escape found by os.Root
// is retried once per resolution through the resolved path's root; a path
// that really leaves every root answers an errNotAllowed error.
func (r *resolver) beneath(abs string, op func(root *os.Root, rel string) error) (string, error) {
	for range maxRelocations {
		root, rel, err := r.locate(abs)
		if err != nil {
			return abs, err
		}
		dir, err := os.OpenRoot(root)
		if err != nil {
			return abs, err
		}
		err = op(dir, rel)
		dir.Close()
		if !escapes(err) {
			return abs, err
		}
		// An absolute link, or a link flipped while we looked: resolve what
		// is there now and place that; no progress means a real escape.
		real, rerr := realPath(abs)
		if rerr != nil || real == abs {
			return abs, fmt.Errorf("%s %w %s", abs, errNotAllowed, r.rootList())
		}
		abs = real
	}
	return abs, fmt.Errorf("%s: too many symbolic links to resolve beneath the allowed roots", abs)
}

// locate picks the root holding abs: by its lexical form first, so that
// os.Root resolves every link in it, else by its resolved form (a path
// reaching a root through a link outside, like /tmp on some systems).
func (r *resolver) locate(abs string) (root, rel string, err error) {
	if len(r.roots) == 0 {
		return "/", relTo("/", abs), nil
	}
	for _, root := range r.roots {
		if within(root, abs) {
			return root, relTo(root, abs), nil
		}
	}
	real, err := realPath(abs)
	if err != nil {
		return "", "", err
	}
	for _, root := range r.roots {
		if within(root, real) {
			return root, relTo(root, real), nil
		}
	}
	return "", "", fmt.Errorf("%s (resolved to %s) is %w %s", abs, real, errNotAllowed, r.rootList())
}

func (r *resolver) rootList() string { return strings.Join(r.roots, ", ") }

// relTo is p relative to root, for paths known to be within it.
func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return "."
	}
	return rel
}

// escapes reports an os.Root refusal of a path leaving its root. The os
// package does not export that error; its text is pinned by
// TestEscapesMatchesOSRoot, so a Go release renaming it fails a test
// instead of weakening the check.
func escapes(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe) && pe.Err != err:
			err = pe.Err
		case errors.As(err, &le) && le.Err != err:
			err = le.Err
		default:
			err = errors.Unwrap(err)
		}
	}
	return false
}

// openDirBeneath opens the folder rel of root as a Root of its own.
// Root.OpenRoot opens the last component without O_DIRECTORY or
// O_NONBLOCK, so a FIFO swapped in there would block the call; the folder
// is opened that way here instead, and the Root made from the open
// descriptor through /proc/self/fd (the same folder, whatever the path now
// names). Without /proc, OpenRoot after the check is the fallback.
func openDirBeneath(root *os.Root, rel string) (*os.Root, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dir *os.Root
	cerr := sc.Control(func(fd uintptr) {
		dir, err = os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(fd)))
	})
	if cerr != nil || err != nil {
		return root.OpenRoot(rel)
	}
	return dir, nil
}
