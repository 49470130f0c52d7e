package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// buildSvcd builds ./cmd/svcd of the source tree at src into dir with extra
// ldflags (a version override), bounded so a stuck build fails the test.
func buildSvcd(t *testing.T, src, dir, ldflags string) string {
	t.Helper()
	out := filepath.Join(dir, "svcd")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", out, "./cmd/svcd")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", src, err, b)
	}
	return out
}

// serveOnce runs `svcd serve` on dataDir and returns its output and exit
// error: for a start that is expected to be refused (bounded at 30 s).
func serveOnce(t *testing.T, bin, dataDir string, extra ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"serve", "-listen", harness.FreePort(t), "-data-dir", dataDir}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SVC_AGENTD_SPAWN=false", "SVC_SHARED_TOKEN=test-token-0123456789abcdef")
	b, err := cmd.CombinedOutput()
	return string(b), err
}

type formatFile struct {
	FormatVersion  int    `json:"format_version"`
	ClusterID      string `json:"cluster_id"`
	WrittenBy      string `json:"written_by"`
	WrittenVersion string `json:"written_version"`
	WrittenCommit  string `json:"written_commit"`
}

func readFormat(t *testing.T, dataDir string) formatFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "FORMAT"))
	if err != nil {
		t.Fatal(err)
	}
	var f formatFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("FORMAT: %v: %s", err, b)
	}
	return f
}

// TestNewerMinorDataDirIsRefusedUnlessAllowed (issue 35, versions on disk):
// this tree built as a newer minor release (0.2.0, by ldflags) writes a data
// dir; this build (0.1.x) then refuses it with a message naming both builds
// and -allow-downgrade, leaves FORMAT as it was, and opens it with
// -allow-downgrade (warning). Before, any build opened any format-1 dir.
func TestNewerMinorDataDirIsRefusedUnlessAllowed(t *testing.T) {
	newer := buildSvcd(t, harness.RepoRoot(), t.TempDir(),
		"-X github.com/svcd/svcd/shared/version.Version=0.2.0 -X github.com/svcd/svcd/shared/version.Commit=newer0000000")
	dir := t.TempDir()
	d := harness.Start(t, harness.Options{Bin: newer, DataDir: dir})
	if err := d.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	f := readFormat(t, dir)
	if f.WrittenVersion != "0.2.0" || f.WrittenCommit != "newer0000000" || f.WrittenBy != "0.2.0 (commit newer0000000)" {
		t.Fatalf("FORMAT after the 0.2.0 build: %+v", f)
	}

	out, err := serveOnce(t, harness.Binary(t), dir)
	if err == nil || !strings.Contains(out, "was last written by svcd 0.2.0 (commit newer0000000), a newer release than this svcd 0.1.") ||
		!strings.Contains(out, "-allow-downgrade") {
		t.Fatalf("the 0.1 build on the 0.2 data dir: err=%v\n%s", err, out)
	}
	if g := readFormat(t, dir); g != f {
		t.Fatalf("a refused start changed FORMAT: %+v -> %+v", f, g)
	}

	d2 := harness.Start(t, harness.Options{DataDir: dir, Args: []string{"-allow-downgrade"}})
	if !strings.Contains(d2.Logs(), "opening a data dir written by a newer release (-allow-downgrade)") {
		t.Errorf("no downgrade warning:\n%s", d2.Logs())
	}
	if r := d2.Do("GET", "/v1/cluster", nil); r.Status != 200 || !strings.Contains(string(r.Body), f.ClusterID) {
		t.Errorf("after the allowed downgrade /v1/cluster = %d %s, want cluster id %s", r.Status, r.Body, f.ClusterID)
	}
	if err := d2.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// previousReleaseSource extracts, with git archive, the last commit before
// versions were recorded on disk (the parent of the commit that added
// raftstore/versions.go, or HEAD while that commit is not made yet) into a
// temp dir. It skips when git or the history is not there (a tarball, a
// shallow clone).
func previousReleaseSource(t *testing.T) (src, commit string) {
	t.Helper()
	root := harness.RepoRoot()
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot build the previous release")
	}
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		t.Skip("not a git checkout: cannot build the previous release")
	}
	added, err := git("log", "--diff-filter=A", "--format=%H", "--", "raftstore/versions.go")
	if err != nil {
		t.Skipf("git log: %v", err)
	}
	commit = "HEAD"
	if lines := strings.Fields(added); len(lines) > 0 {
		commit = lines[len(lines)-1] + "^"
	}
	commit, err = git("rev-parse", "--verify", commit+"^{commit}")
	if err != nil {
		t.Skipf("the previous release's commit is not in this clone (shallow?): %v", err)
	}
	if _, err := git("cat-file", "-e", commit+":raftstore/versions.go"); err == nil {
		t.Skipf("commit %s already has the version rule; no previous release to build", commit)
	}
	src = t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar: %v", err)
	}
	return src, commit[:12]
}

// TestPreviousReleaseAndThisBuildOnEachOthersDataDir builds the previous
// release from git inside the test and runs both directions:
//   - this build reads a data dir the previous release wrote, logs the step
//     (from "0.1.0-dev" with no commit to this build, format 1 -> 1) and
//     records itself with its commit;
//   - the previous release on this build's data dir: it predates the rule,
//     so it cannot refuse; it starts (format 1 is its own) and leaves
//     written_by alone. docs/deploy.md (Downgrading) says so: the refusal
//     protects downgrades from this release on.
func TestPreviousReleaseAndThisBuildOnEachOthersDataDir(t *testing.T) {
	src, commit := previousReleaseSource(t)
	prev := buildSvcd(t, src, t.TempDir(), "-X github.com/svcd/svcd/shared/version.Commit="+commit)
	t.Logf("previous release: commit %s", commit)

	// Upgrade: the previous release's data dir, then this build.
	dir := t.TempDir()
	d := harness.Start(t, harness.Options{Bin: prev, DataDir: dir})
	before := waitClusterID(t, d)
	if err := d.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if f := readFormat(t, dir); f.WrittenCommit != "" {
		t.Fatalf("the previous release already records a commit: %+v", f)
	}
	cur := harness.Start(t, harness.Options{DataDir: dir})
	if !cur.WaitLog("data dir written by another build; recording this one", 10*time.Second) ||
		!strings.Contains(cur.Logs(), "format_step=\"1 -> 1\"") {
		t.Errorf("the upgrade did not log its step:\n%s", cur.Logs())
	}
	if after := waitClusterID(t, cur); after != before {
		t.Errorf("cluster_id across the upgrade: %q -> %q", before, after)
	}
	if err := cur.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	f := readFormat(t, dir)
	if f.WrittenCommit == "" || !strings.Contains(f.WrittenBy, "(commit ") {
		t.Fatalf("FORMAT after the upgrade lacks this build's commit: %+v", f)
	}

	// Downgrade to the previous release: what it does. It predates the
	// rule, so it starts (format 1 is its own) and serves the same cluster;
	// it leaves FORMAT as this build wrote it.
	old := harness.Start(t, harness.Options{Bin: prev, DataDir: dir})
	down := waitClusterID(t, old)
	if err := old.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the previous release on this build's data dir started and served cluster_id %q (this build's: %q); FORMAT after it: %+v", down, before, readFormat(t, dir))
	if g := readFormat(t, dir); g != f {
		t.Errorf("the previous release rewrote FORMAT: %+v -> %+v", f, g)
	}
}

// waitClusterID waits (bounded) for GET /v1/cluster's cluster_id: the first
// leader records it a moment after its election.
func waitClusterID(t *testing.T, d *harness.Daemon) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if id := clusterID(t, d); id != "" {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cluster_id within 20 s\n%s", d.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
