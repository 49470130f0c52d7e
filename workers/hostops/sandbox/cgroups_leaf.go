// The delegated leaf: on pure cgroup v2 a cgroup that holds processes
// cannot hand domain controllers (memory) to its children, so svcd moves
// itself out of the cgroup systemd delegated to it before it makes the
// command cgroups there.

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LeafName is the child cgroup svcd's own processes live in when svcd was
// started in a delegated cgroup (Delegate=yes): the supervisor moves there
// at start, before it starts its workers, so they are born there too. It
// is the name systemd 254+ uses with DelegateSubgroup=supervisor, which
// puts the service there itself; on 252 (Debian 12) svcd does it.
const LeafName = "supervisor"

// delegatedBase is the cgroup svcd was given: the parent of own when own is
// the leaf, else own. The detected exec parent (DetectedParentName) is made
// below it, beside the leaf.
func delegatedBase(own string) string {
	if filepath.Base(own) == LeafName {
		return filepath.Dir(own)
	}
	return own
}

// enterLeaf moves this process (every thread: a cgroup.procs write moves
// the thread group) from its v2 cgroup into <own>/supervisor when that
// cgroup is one it was handed: not the root of the hierarchy, a domain,
// holding no process but this one (svcd at start; a cgroup shared with
// other processes, a login session's scope, is not ours to reshape), and
// writable. It returns h with the new own cgroup, and why it did not move
// ("" when it moved or had no need to). Nothing is written to the cgroup's
// subtree_control here: enableV2 does that once the cgroup is empty.
func enterLeaf(h hierarchies) (hierarchies, string) {
	own := h.own[""]
	if h.v2 == "" || own == "" || filepath.Clean(own) == filepath.Clean(h.v2) || filepath.Base(own) == LeafName {
		return h, ""
	}
	if typ, err := os.ReadFile(filepath.Join(own, "cgroup.type")); err != nil || strings.TrimSpace(string(typ)) != "domain" {
		return h, ""
	}
	self := os.Getpid()
	for _, p := range listProcs(own) {
		if p != self {
			return h, fmt.Sprintf("cgroup v2: %s holds other processes than svcd, so it cannot hand memory to the command cgroups (run svcd in a cgroup of its own: a systemd unit with Delegate=yes)", own)
		}
	}
	leaf := filepath.Join(own, LeafName)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return h, fmt.Sprintf("cgroup v2: cannot make the leaf %s for svcd's own processes: %v", leaf, err)
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(self)); err != nil {
		_ = os.Remove(leaf)
		return h, fmt.Sprintf("cgroup v2: cannot move svcd into %s: %v", leaf, err)
	}
	own2 := map[string]string{}
	for k, v := range h.own {
		own2[k] = v
	}
	own2[""] = leaf
	h.own = own2
	return h, ""
}

// canDistribute: a controller may be written into dir's subtree_control
// without harm. The root (it has no cgroup.type) always may; any other
// cgroup only as an empty domain: with processes in it the kernel refuses
// memory (no internal processes) but takes pids and cpu, which turns it
// into "domain threaded" and its children into "domain invalid", where no
// controller can be enabled any more (what svcd 0.x did in a delegated
// service cgroup on Debian 12).
func canDistribute(dir string) bool {
	typ, err := os.ReadFile(filepath.Join(dir, "cgroup.type"))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil || strings.TrimSpace(string(typ)) != "domain" {
		return false
	}
	return len(listProcs(dir)) == 0
}

// listProcs lists the processes directly in cgroup dir (not its children).
func listProcs(dir string) []int {
	var out []int
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}
