package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// cgroupParentName is this run's own exec_cgroup_parent (chaosEnv): not the
// default svcd-exec, which other svcd processes on the machine share, so
// whatever is under it after the run is this run's.
func cgroupParentName(seed int64) string {
	return fmt.Sprintf("svcd-chaos-%d-%d", seed, os.Getpid())
}

// cgroupParents are the directories the parent name resolves to in every
// hierarchy (the unified tree and each v1 controller's), resolved by the
// sandbox's own rule: the name is relative to each hierarchy's mount.
// CgroupWritePaths also creates them, so the check below sees every one.
func cgroupParents(name string) []string {
	dirs, _ := sandbox.CgroupWritePaths(name)
	sort.Strings(dirs)
	return dirs
}

// checkCgroups runs after every process of the run is gone. A process
// still in a cgroup under the parents is a leak (a command that outlived
// its worker and node). Then the sandbox's restart clean-up runs
// (sandbox.CleanStale, what a starting hostops worker runs on its parent):
// it removes the w<pid>-… directories of workers that are gone, which
// workers SIGKILLed on purpose leave behind. Whatever it leaves — a
// directory whose owner still runs, one it cannot remove, one that is not
// a worker's — is a leak. The empty parents are removed last.
func checkCgroups(parents []string) (broken []string, note string) {
	if len(parents) == 0 {
		return []string{"no cgroup hierarchy to check: the run's exec_cgroup_parent resolved to nothing"}, ""
	}
	// A process being torn down still lists (a SIGKILLed worker's spawner
	// thread sits in a v1 slot cgroup by design, sandbox.Cgroup.Host) until
	// it is gone or a zombie; the process check above cannot see it (no
	// exe link). Give teardown a bounded while.
	var stale int
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		stale = 0
		for _, p := range parents {
			_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if path != p && filepath.Dir(path) == p {
					stale++
				}
				if procs := cgroupProcs(path); procs != "" {
					left = append(left, fmt.Sprintf("process(es) %s left in cgroup %s after the run", procs, path))
				}
				return nil
			})
		}
		if len(left) == 0 || time.Now().After(deadline) {
			broken = append(broken, left...)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	removed := 0
	for _, p := range parents {
		removed += sandbox.CleanStale(p)
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if e.IsDir() {
				broken = append(broken, "cgroup left behind after the restart clean-up: "+filepath.Join(p, e.Name()))
			}
		}
	}
	for _, p := range parents {
		if len(broken) == 0 {
			if err := os.Remove(p); err != nil {
				broken = append(broken, fmt.Sprintf("the run's cgroup parent %s could not be removed: %v", p, err))
			}
		}
	}
	return broken, fmt.Sprintf("cgroups: parents %s; %d worker dirs were left by killed workers, the restart clean-up removed %d", strings.Join(parents, ", "), stale, removed)
}

// cgroupProcs is the live pids in dir's cgroup.procs, space-separated: a
// zombie (state Z, waiting for a reaper) runs nothing.
func cgroupProcs(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return ""
	}
	var live []string
	for _, pid := range strings.Fields(string(b)) {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) S …: the state follows the last ')'.
		if i := strings.LastIndexByte(string(st), ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		live = append(live, pid)
	}
	return strings.Join(live, " ")
}
