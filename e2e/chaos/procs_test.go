package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// sample is one reading of a long-lived process.
type sample struct {
	At         time.Time
	Series     string // n1, n2, n1/hostops …: the role, whichever pid plays it
	Pid        int
	FDs        int
	RSSKiB     int
	Goroutines int // svcd nodes only (GET /v1/runtime)
}

type sampler struct {
	mu      sync.Mutex
	samples []sample
}

// procStat reads a process's open fd count and resident set size. Open
// cgroup files are not counted: the hostops worker keeps a pool of command
// cgroups with their files open (cgroup.procs, cgroup.kill, pids.*, …), and
// the pool grows to the concurrency the load reached, not with time (a
// loaded run took n2's hostops from 62 to 140 fds, all pool files).
func procStat(pid int) (fds, rssKiB int, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		if to, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(to, "/sys/fs/cgroup/") {
			continue
		}
		fds++
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return fds, rssKiB, nil
}

// take reads every node (pid and goroutines from /v1/runtime) and its
// workers; a node that does not answer (killed, stopped) is skipped.
func (s *sampler) take(r *rig) {
	now := time.Now()
	for _, n := range r.nodes {
		b, err := harness.Get(n.url+"/v1/runtime", 2*time.Second)
		if err != nil {
			continue
		}
		var env struct {
			Data struct {
				Pid        int          `json:"pid"`
				Goroutines int          `json:"goroutines"`
				Workers    []workerInfo `json:"workers"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &env) != nil {
			continue
		}
		add := func(series string, pid, g int) {
			if fds, rss, err := procStat(pid); err == nil {
				s.mu.Lock()
				s.samples = append(s.samples, sample{At: now, Series: series, Pid: pid, FDs: fds, RSSKiB: rss, Goroutines: g})
				s.mu.Unlock()
			}
		}
		add(n.name, env.Data.Pid, env.Data.Goroutines)
		for _, w := range env.Data.Workers {
			if w.Pid > 0 && w.State == "running" {
				add(n.name+"/"+w.Name, w.Pid, 0)
			}
		}
	}
}

// bounded compares, per series, the largest reading of the second half of
// the run with the first half's: a leak grows with the run's length, so the
// second half's peak may not exceed the first's by more than half plus a
// fixed allowance (a peak coincides with a burst of load or a restart).
func (s *sampler) bounded(start, end time.Time) (broken, figures []string) {
	mid := start.Add(end.Sub(start) / 2)
	type peak struct{ fds, rss, g, n int }
	halves := map[string]*[2]peak{}
	s.mu.Lock()
	for _, x := range s.samples {
		h := halves[x.Series]
		if h == nil {
			h = &[2]peak{}
			halves[x.Series] = h
		}
		i := 0
		if x.At.After(mid) {
			i = 1
		}
		p := &h[i]
		p.fds, p.rss, p.g, p.n = max(p.fds, x.FDs), max(p.rss, x.RSSKiB), max(p.g, x.Goroutines), p.n+1
	}
	s.mu.Unlock()
	names := make([]string, 0, len(halves))
	for k := range halves {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		h := halves[name]
		if h[0].n == 0 || h[1].n == 0 {
			continue
		}
		figures = append(figures, fmt.Sprintf("%s: fds %d→%d, RSS %d→%d MiB, goroutines %d→%d (%d+%d samples)",
			name, h[0].fds, h[1].fds, h[0].rss/1024, h[1].rss/1024, h[0].g, h[1].g, h[0].n, h[1].n))
		check := func(what string, a, b, slack int) {
			if b > a+a/2+slack {
				broken = append(broken, fmt.Sprintf("%s: %s grew from a first-half peak of %d to %d", name, what, a, b))
			}
		}
		check("open fds", h[0].fds, h[1].fds, 32)
		check("RSS KiB", h[0].rss, h[1].rss, 64<<10)
		check("goroutines", h[0].g, h[1].g, 64)
	}
	return broken, figures
}

// ourProcesses lists the processes of this run: the svcd binary the harness
// built (nodes, witness, workers), anything whose working directory is under
// the run's work dir (exec'd commands and their children), and Codex
// processes (their environment holds the run's CODEX_HOME), which it also
// returns apart: agentd's child comes and goes on its own.
func ourProcesses(bin, workdir, codexHome string) (all map[int]string, codex map[int]bool) {
	all, codex = map[int]string{}, map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		isCodex := false
		if codexHome != "" {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			for _, kv := range strings.Split(string(env), "\x00") {
				if strings.HasSuffix(kv, "CODEX_HOME="+codexHome) {
					isCodex = true
				}
			}
		}
		if isCodex || strings.TrimSuffix(exe, " (deleted)") == bin || (cwd != "" && strings.HasPrefix(cwd, workdir+string(filepath.Separator))) || cwd == workdir {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			all[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
			if isCodex && strings.TrimSuffix(exe, " (deleted)") != bin {
				codex[pid] = true
			}
		}
	}
	return all, codex
}

// expectedProcesses is what should run now: both nodes, the witness and the
// workers each node lists.
func (r *rig) expectedProcesses() (map[int]string, error) {
	want := map[int]string{r.c.WitnessPid(): "witness"}
	for _, n := range r.nodes {
		b, err := harness.Get(n.url+"/v1/runtime", 2*time.Second)
		if err != nil {
			return nil, err
		}
		var env struct {
			Data struct {
				Pid     int          `json:"pid"`
				Workers []workerInfo `json:"workers"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			return nil, err
		}
		want[env.Data.Pid] = n.name
		for _, w := range env.Data.Workers {
			if w.Pid > 0 {
				want[w.Pid] = n.name + "/" + w.Name
			}
		}
	}
	return want, nil
}

// checkProcesses: while the cluster runs, no process of the run beyond the
// ones it lists; after it is killed, none at all. Each waits a little, for
// processes being reaped.
func (r *rig) checkProcesses(stopCluster func()) []string {
	var broken []string
	var extra map[int]string
	deadline := time.Now().Add(15 * time.Second)
	for {
		want, err := r.expectedProcesses()
		extra = map[int]string{}
		if err == nil {
			all, codex := ourProcesses(r.bin, r.workdir, r.codexHome)
			for pid, cmd := range all {
				if _, ok := want[pid]; !ok && !codex[pid] {
					extra[pid] = cmd
				}
			}
		}
		if err == nil && len(extra) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				broken = append(broken, "process check: "+err.Error())
			}
			for pid, cmd := range extra {
				broken = append(broken, fmt.Sprintf("leftover process %d while the cluster runs: %s", pid, cmd))
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopCluster()
	// Codex exits on its own once agentd is gone (it notices its closed
	// pipe), which takes longer than a worker's exit.
	deadline = time.Now().Add(30 * time.Second)
	for {
		left, _ := ourProcesses(r.bin, r.workdir, r.codexHome)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for pid, cmd := range left {
				broken = append(broken, fmt.Sprintf("process %d outlived the cluster: %s", pid, cmd))
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return broken
}
