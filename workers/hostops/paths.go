package hostops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolver turns request paths into absolute ones and enforces the allowed
// roots. Roots are resolved (symlinks included) once, at start.
type resolver struct {
	roots []string // empty: every path is allowed
}

func newResolver(roots []string) (*resolver, error) {
	r := &resolver{}
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("allowed root %q: %w", root, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("allowed root %q: %w", root, err)
		}
		r.roots = append(r.roots, real)
	}
	return r, nil
}

// dir returns the directory a request runs in: cwd, or the worker's own
// working directory (inherited from the daemon) when cwd is empty.
func (r *resolver) dir(cwd string) (string, error) {
	if cwd == "" {
		return os.Getwd()
	}
	return filepath.Abs(cwd)
}

// path joins p onto cwd unless p is absolute (SPEC.md rule 2).
func (r *resolver) path(cwd, p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	base, err := r.dir(cwd)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, p), nil
}

// errNotAllowed marks a path outside every allowed root.
var errNotAllowed = errors.New("outside the allowed roots")

// check resolves symlinks in abs (for the part that exists) and refuses a
// result outside the allowed roots, so a link inside a root that points out
// of it does not get through.
func (r *resolver) check(abs string) error {
	if len(r.roots) == 0 {
		return nil
	}
	real, err := realPath(abs)
	if err != nil {
		return err
	}
	for _, root := range r.roots {
		if within(root, real) {
			return nil
		}
	}
	return fmt.Errorf("%s (resolved to %s) is %w %s", abs, real, errNotAllowed, strings.Join(r.roots, ", "))
}

// realPath is filepath.EvalSymlinks for the longest existing prefix of abs,
// with the missing rest appended (it cannot hold links: it does not exist).
func realPath(abs string) (string, error) {
	rest := ""
	cur := abs
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func within(root, p string) bool {
	if root == p {
		return true
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
