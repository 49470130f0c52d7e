// Detection: which hierarchies and controllers the command cgroups get,
// and the worker's directories under the parent.

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DetectedParentName is the child cgroup svcd creates under its own cgroup
// in each hierarchy when exec_cgroup_parent is not set.
const DetectedParentName = "svcd-exec"

// Mode describes how commands are contained: "v2", "v2+v1" (hybrid: v2
// membership, v1 limits), "v1", or "" (none).
func (t *Tree) Mode() string {
	switch {
	case t == nil:
		return ""
	case t.v2 != "" && len(t.v1) > 0:
		return "v2+v1"
	case t.v2 != "":
		return "v2"
	case len(t.v1) > 0:
		return "v1"
	}
	return ""
}

// Controllers lists the limits this tree can enforce: memory, pids, cpu.
func (t *Tree) Controllers() []string {
	var out []string
	for _, c := range v1Controllers {
		if t.has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Dir is the worker directory in the hierarchy that carries membership.
func (t *Tree) Dir() string {
	if t.v2 != "" {
		return t.v2
	}
	return t.v1["pids"]
}

// parentDirs resolves exec_cgroup_parent in each hierarchy. parent is a
// cgroup path ("/svcd-exec") relative to each hierarchy's root; empty is
// DetectedParentName under this process's own cgroup.
func parentDirs(h hierarchies, parent string) (v2 string, v1 map[string]string) {
	at := func(key, mnt string) string {
		if mnt == "" {
			return ""
		}
		if parent != "" {
			return filepath.Join(mnt, filepath.Clean("/"+parent))
		}
		own := h.own[key]
		if own == "" {
			own = mnt
		}
		if key == "" {
			// Beside svcd's leaf, not under it: the leaf holds processes.
			own = delegatedBase(own)
		}
		return filepath.Join(own, DetectedParentName)
	}
	v1 = map[string]string{}
	for _, c := range v1Controllers {
		if d := at(c, h.v1[c]); d != "" {
			v1[c] = d
		}
	}
	return at("", h.v2), v1
}

// OpenTree creates the worker's directories under parent (see parentDirs)
// for worker pid, first removing stale ones of workers that are gone. What
// cannot be used is left out and named in the returned problems; a nil Tree
// means no cgroup at all.
func OpenTree(parent string, pid int, cpu bool) (*Tree, []string) {
	h := findHierarchies()
	var problems []string
	if parent == "" {
		// The detected parent is made in svcd's own v2 cgroup, which must
		// hold no process to give it memory: leave it for a leaf first.
		var problem string
		if h, problem = enterLeaf(h); problem != "" {
			problems = append(problems, problem)
		}
	}
	v2p, v1p := parentDirs(h, parent)
	t := &Tree{v2Ctl: map[string]bool{}, v1: map[string]string{}, v1Home: map[string]int{}}
	// w<pid>-<start>: the pid names the owner for CleanStale; the suffix
	// keeps two trees of one process (tests) apart.
	name := OwnerName(pid)
	if v2p != "" {
		// Stale directories go in the background: killed processes may take
		// a while to exit, and a restarting worker must serve at once.
		go CleanStale(v2p)
		if err := makeDir(v2p, name); err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v2 parent %s: %v", v2p, err))
		} else {
			t.v2 = filepath.Join(v2p, name)
			if _, err := os.Stat(filepath.Join(t.v2, "cgroup.kill")); err != nil {
				problems = append(problems, "cgroup v2 has no cgroup.kill (Linux 5.14+); kills read the process list")
			}
			for _, c := range v1Controllers {
				t.v2Ctl[c] = enableV2(v2p, t.v2, c)
			}
		}
	} else {
		problems = append(problems, "no cgroup v2 (unified) hierarchy is mounted")
	}
	for _, c := range v1Controllers {
		if t.v2Ctl[c] || v1p[c] == "" || h.own[c] == "" || (c == "cpu" && !cpu) {
			continue
		}
		go CleanStale(v1p[c])
		if err := makeDir(v1p[c], name); err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v1 %s parent %s: %v", c, v1p[c], err))
			continue
		}
		home, err := unix.Open(filepath.Join(h.own[c], "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v1 %s: %v", c, err))
			continue
		}
		t.v1[c] = filepath.Join(v1p[c], name)
		t.v1Home[c] = home
	}
	if t.v2 == "" && t.v1["pids"] == "" {
		return nil, problems
	}
	t.pool = make(chan *Cgroup, 4)
	return t, problems
}

// makeDir creates parent (and its parents) and parent/name.
func makeDir(parent, name string) error {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
		return fmt.Errorf("not a cgroup: %w", err)
	}
	err := os.Mkdir(filepath.Join(parent, name), 0o755)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

// enableV2 turns controller c on from parent's subtree down to the worker
// dir's, so command cgroups get its files. False where the host does not
// give v2 the controller (hybrid hosts) or the parent is not delegated.
func enableV2(parent, worker, c string) bool {
	// The parent's own parent (a delegated service cgroup whose processes
	// live in a leaf: enterLeaf, or systemd's DelegateSubgroup) may have to
	// hand the controller down first; where it cannot, the check below says
	// so. Never into a cgroup that holds processes (canDistribute): pids or
	// cpu would make it threaded and break every cgroup below it.
	if up := filepath.Dir(parent); canDistribute(up) {
		_ = os.WriteFile(filepath.Join(up, "cgroup.subtree_control"), []byte("+"+c), 0)
	}
	avail, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil || !hasWord(string(avail), c) {
		return false
	}
	for _, d := range []string{parent, worker} {
		if !canDistribute(d) {
			return false
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			return false
		}
	}
	return true
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// CgroupWritePaths are what the hostops worker writes in the cgroup file
// systems: the parent directories (worker and command cgroups are made
// below them) and, for v1, the tasks files of its own cgroups (the spawner
// thread returns there after each fork). For the worker's own Landlock
// domain.
func CgroupWritePaths(parent string) (dirs, files []string) {
	h := findHierarchies()
	v2, v1 := parentDirs(h, parent)
	if v2 != "" {
		dirs = append(dirs, v2)
	}
	for c, d := range v1 {
		dirs = append(dirs, d)
		if own := h.own[c]; own != "" {
			files = append(files, filepath.Join(own, "tasks"))
		}
	}
	for _, d := range dirs {
		_ = os.MkdirAll(d, 0o755) // a rule needs the directory to exist
	}
	return dirs, files
}
