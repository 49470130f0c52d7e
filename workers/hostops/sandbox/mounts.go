// Package sandbox is what contains an exec command on the host beyond its
// process group: a cgroup per command (membership, kill, limits), a Landlock
// ruleset (the roots it may write and read), no_new_privs and an
// unprivileged identity. The hostops worker applies it; the supervisor uses
// it to probe the host at start, to report it and to kill a dead worker's
// commands.
package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// hierarchies are the cgroup file systems mounted on this host: the unified
// (v2) tree and the v1 hierarchies of the controllers the sandbox uses.
type hierarchies struct {
	v2 string            // mount point of cgroup2, "" when none
	v1 map[string]string // controller (memory, pids, cpu) → mount point
	// own is this process's cgroup in each hierarchy, as a directory
	// ("" key: v2).
	own map[string]string
}

// v1Controllers are the v1 controllers the sandbox uses for limits.
var v1Controllers = []string{"memory", "pids", "cpu"}

// findHierarchies reads /proc/self/mountinfo and /proc/self/cgroup.
func findHierarchies() hierarchies {
	h := hierarchies{v1: map[string]string{}, own: map[string]string{}}
	roots := map[string]string{} // controller ("" v2) → mount root
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional…] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		root, mnt := a[3], unescapeMount(a[4])
		switch b[0] {
		case "cgroup2":
			if h.v2 == "" {
				h.v2, roots[""] = mnt, root
			}
		case "cgroup":
			for _, opt := range strings.Split(b[2], ",") {
				for _, c := range v1Controllers {
					if opt == c && h.v1[c] == "" {
						h.v1[c], roots[c] = mnt, root
					}
				}
			}
		}
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return h
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		// hierarchy-id:controller-list:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		rel := func(key, mnt string) {
			if mnt == "" {
				return
			}
			p := parts[2]
			if r := roots[key]; r != "/" && strings.HasPrefix(p, r) {
				p = strings.TrimPrefix(p, r)
			}
			h.own[key] = filepath.Join(mnt, p)
		}
		if parts[0] == "0" && parts[1] == "" {
			rel("", h.v2)
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			rel(c, h.v1[c])
		}
	}
	return h
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}
