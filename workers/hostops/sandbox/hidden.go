package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Hiding the daemon's files from commands (issue 32: a command of the
// daemon's own uid read the token file and raft's data). Landlock is an
// allow-list and a rule covers everything beneath its directory, so a
// directory cannot be carved out of a readable tree. Instead the read rules
// are every entry of each ancestor of a hidden path except the way down to
// it: for /var/lib/svcd, every entry of / but var, of /var but lib, of
// /var/lib but svcd. A rule names an inode, so an entry created or
// replaced in one of those ancestors later would be unreadable: each
// spawner keeps the ancestors' modification times (HiddenStamp) and is
// replaced by a fresh one when any changed (Fresh), a few stats per command.

// HiddenReads is the read allow-list that leaves hidden out, and the stamp
// of the directories it was computed from. ok is false when nothing can be
// hidden (no paths, or "/" among them).
func HiddenReads(hidden []string) (reads []string, stamp HiddenStamp, ok bool) {
	blocked := map[string]bool{}
	isHidden := map[string]bool{}
	for _, h := range hidden {
		if h == "" {
			continue
		}
		p := filepath.Clean(h)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if p == "/" || !filepath.IsAbs(p) {
			return nil, nil, false
		}
		isHidden[p] = true
		for a := p; a != "/"; a = filepath.Dir(a) {
			blocked[a] = true
		}
		blocked["/"] = true
	}
	if len(isHidden) == 0 {
		return nil, nil, false
	}
	for a := range blocked {
		if isHidden[a] {
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			continue
		}
		stamp = append(stamp, dirStamp{a, mtime(a)})
		for _, e := range entries {
			child := filepath.Join(a, e.Name())
			if !blocked[child] {
				reads = append(reads, child)
			}
		}
	}
	return reads, stamp, true
}

// HiddenStamp is the modification time of each directory HiddenReads
// listed.
type HiddenStamp []dirStamp

type dirStamp struct {
	dir   string
	mtime int64
}

// Fresh: no listed directory changed since the stamp.
func (s HiddenStamp) Fresh() bool {
	for _, d := range s {
		if mtime(d.dir) != d.mtime {
			return false
		}
	}
	return true
}

func mtime(dir string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return -1
	}
	return st.Mtim.Nano()
}

// Covers: p is beneath one of roots (or is one), so hiding it is
// impossible while roots are readable.
func Covers(roots []string, p string) bool {
	p = filepath.Clean(p)
	for _, r := range roots {
		r = filepath.Clean(r)
		if r == p || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
