package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// leafReport is what the helper process (TestLeafHelperProcess) saw after
// OpenTree with the detected parent.
type leafReport struct {
	Own      string   `json:"own"`      // its v2 cgroup after OpenTree, from /proc/self/cgroup
	Dir      string   `json:"dir"`      // the tree's worker dir
	Problems []string `json:"problems"` // OpenTree's
}

// TestLeafHelperProcess is the process the leaf tests start inside a cgroup
// of their own: OpenTree("") in it, then the report on stdout.
func TestLeafHelperProcess(t *testing.T) {
	if os.Getenv("SVCD_LEAF_HELPER") != "1" {
		t.Skip("helper process of TestOpenTreeMovesIntoLeaf")
	}
	tree, problems := OpenTree("", os.Getpid(), false)
	r := leafReport{Problems: problems}
	if tree != nil {
		r.Dir = tree.Dir()
		defer tree.Close()
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			r.Own = p
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// testCgroup makes a fresh cgroup in the host's v2 tree for one test and
// removes it (and what is left in it) at the end.
func testCgroup(t *testing.T) (dir, rel string) {
	t.Helper()
	h := findHierarchies()
	if h.v2 == "" || os.Geteuid() != 0 {
		t.Skip("needs root and a cgroup v2 tree")
	}
	rel = "/svcd-leaftest-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dir = filepath.Join(h.v2, rel)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a v2 cgroup here: %v", err)
	}
	t.Cleanup(func() { removeTree(dir) })
	return dir, rel
}

// startIn starts cmd with its first process cloned into cgroup dir.
func startIn(t *testing.T, dir string, cmd *exec.Cmd) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Skipf("CLONE_INTO_CGROUP: %v", err)
	}
}

func runHelper(t *testing.T, dir string) leafReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeafHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SVCD_LEAF_HELPER=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	startIn(t, dir, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	var r leafReport
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("helper said %q: %v", out.String(), err)
	}
	return r
}

// A process alone in its cgroup (svcd in a delegated service cgroup) moves
// into <cgroup>/supervisor, and the command cgroups go beside that leaf,
// in <cgroup>/svcd-exec: on pure v2 a cgroup with processes cannot give
// its children memory (issue 31: every exec failed on Debian 12).
func TestOpenTreeMovesIntoLeaf(t *testing.T) {
	dir, rel := testCgroup(t)
	r := runHelper(t, dir)
	if r.Own != rel+"/"+LeafName {
		t.Fatalf("the process is in %q after OpenTree, want %q (problems %q)", r.Own, rel+"/"+LeafName, r.Problems)
	}
	if want := filepath.Join(dir, DetectedParentName); filepath.Dir(r.Dir) != want {
		t.Fatalf("worker dir %q, want one under %q", r.Dir, want)
	}
	if procs := listProcs(dir); len(procs) != 0 {
		t.Fatalf("the delegated cgroup still holds %v", procs)
	}
}

// A cgroup shared with another process (a login session's scope) is not
// svcd's to reshape: it stays where it is, says why, and writes no
// controller into the populated cgroup.
func TestOpenTreeLeavesSharedCgroup(t *testing.T) {
	dir, rel := testCgroup(t)
	other := exec.Command("sleep", "60")
	startIn(t, dir, other)
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	r := runHelper(t, dir)
	if r.Own != rel {
		t.Fatalf("the process moved to %q, want it left in %q", r.Own, rel)
	}
	if !strings.Contains(strings.Join(r.Problems, "|"), "holds other processes") {
		t.Fatalf("problems %q do not say why it stayed", r.Problems)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); strings.TrimSpace(string(b)) != "" {
		t.Fatalf("controllers %q written into a cgroup with processes", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.type")); strings.TrimSpace(string(b)) != "domain" {
		t.Fatalf("the shared cgroup became %q", b)
	}
}

func TestCanDistribute(t *testing.T) {
	dir, _ := testCgroup(t)
	if !canDistribute(dir) {
		t.Fatal("an empty domain cgroup may hand controllers down")
	}
	p := exec.Command("sleep", "60")
	startIn(t, dir, p)
	defer func() { _ = p.Process.Kill(); _ = p.Wait() }()
	if canDistribute(dir) {
		t.Fatal("a cgroup with a process must not get controllers")
	}
	if !canDistribute(findHierarchies().v2) {
		t.Fatal("the root cgroup may")
	}
}

// A command cgroup the host gives no memory or pids controller (pure v2
// where the delegated cgroup could not hand them down) still runs the
// command: the limit is skipped, not an error (issue 31: "set memory
// limit: no memory.max file" failed every exec). Probe reports the layer.
func TestNewWithoutControllersRuns(t *testing.T) {
	dir, _ := testCgroup(t)
	tree := &Tree{v2: dir, v2Ctl: map[string]bool{}, v1: map[string]string{}, v1Home: map[string]int{}, pool: make(chan *Cgroup, 4)}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		t.Skip("this host's v2 tree has the memory controller here")
	}
	l := Limits{MemoryBytes: 64 << 20, Pids: 16}
	tree.Preset(DefaultLimits())
	c, err := tree.New(l)
	if err != nil {
		t.Fatalf("a command cgroup without controllers: %v", err)
	}
	defer c.Remove(time.Second)
	if err := c.SetLimits(Limits{MemoryBytes: 1 << 30}); err != nil {
		t.Fatalf("SetLimits without controllers: %v", err)
	}
	if got := tree.Controllers(); len(got) != 0 {
		t.Fatalf("controllers %v, want none", got)
	}
}
