package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// The chaos run's finding 4 (docs/reliability.md): a conversation's reply
// reported again after 64 newer replies ran its instruction blocks a second
// time. Through the real binary: the first reply's block appends a line to
// a file; after 70 newer replies, a SIGKILL restart, a graceful restart
// (which restores the raft snapshot taken at shutdown), an offline snapshot
// restored into a fresh data dir and a snapshot restored on a running node,
// the same reply reported again is `repeated` each time and the line is
// in the file once.
func TestIngestRepeatAfterManyRepliesRestartAndSnapshotNeverRunsTwice(t *testing.T) {
	// The block writes outside its scratch dir: that dir is a write root.
	logDir := t.TempDir()
	roots := []string{"SVC_EXEC_WRITE_ROOTS=" + logDir}
	d := harness.Start(t, harness.Options{Env: roots})
	log := filepath.Join(logDir, "once.log")
	first := block("@svc::exec::echo m-first >> " + log)
	once := func(d *harness.Daemon, when string, wantCount int) {
		t.Helper()
		res := ingest(t, d, "conv-long", "m-first", first, true)
		if res.Ingest.Status != "repeated" || res.Ingest.RepeatedMessageCount != wantCount {
			t.Fatalf("%s: m-first reported again is %q (count %d), want repeated (count %d)", when, res.Ingest.Status, res.Ingest.RepeatedMessageCount, wantCount)
		}
		if b, _ := os.ReadFile(log); string(b) != "m-first\n" {
			t.Fatalf("%s: the reply's block ran again: %q", when, b)
		}
	}

	if res := ingest(t, d, "conv-long", "m-first", first, true); res.Ingest.Status != "executed" || res.Ingest.TaskStatus != "succeeded" {
		t.Fatalf("first report: %+v", res.Ingest)
	}
	if b, _ := os.ReadFile(log); string(b) != "m-first\n" {
		t.Fatalf("the first report's block did not run: %q", b)
	}
	for i := 1; i <= 70; i++ {
		if res := ingest(t, d, "conv-long", fmt.Sprintf("m-%d", i), fmt.Sprintf("reply %d, no instructions", i), true); res.Ingest.Status != "no_instructions" {
			t.Fatalf("reply %d: %+v", i, res.Ingest)
		}
	}
	once(d, "after 70 newer replies", 1)

	d.Restart() // SIGKILL: the log is replayed
	once(d, "after a SIGKILL restart", 2)
	if err := d.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	d.Restart() // from the snapshot taken at shutdown
	once(d, "after a graceful restart", 3)

	resp := d.DoAuth("GET", "/v1/snapshot", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/snapshot: %d %.200s", resp.Status, resp.Body)
	}
	path := filepath.Join(t.TempDir(), "dedup.snap")
	if err := os.WriteFile(path, resp.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "restored")
	if out, err := svcdRun(t, "snapshot", "restore", "-data-dir", fresh, path); err != nil {
		t.Fatalf("svcd snapshot restore: %v\n%s", err, out)
	}
	r := harness.Start(t, harness.Options{DataDir: fresh, Env: roots})
	once(r, "on a node restored from the snapshot", 4)
	r.Kill()

	// More replies after the snapshot, then the snapshot restored on the
	// running node: m-first is still a repeat (count back to the snapshot's).
	for i := 71; i <= 80; i++ {
		ingest(t, d, "conv-long", fmt.Sprintf("m-%d", i), "more", true)
	}
	if res := d.DoAuth("POST", "/v1/snapshot/restore", resp.Body, "Content-Type: "+snapType); res.Status != 200 {
		t.Fatalf("restore on the running node: %d %s", res.Status, res.Body)
	}
	once(d, "after a restore on the running node", 4)
	if res := ingest(t, d, "conv-long", "m-75", "more", true); res.Ingest.Status != "no_instructions" {
		t.Fatalf("a reply newer than the restored snapshot is not new: %+v", res.Ingest)
	}
	if !strings.Contains(string(d.Do("GET", "/v1/renewal/conversations/conv-long", nil).Body), `"repeated_message_count":4`) {
		t.Fatalf("conversation: %s", d.Do("GET", "/v1/renewal/conversations/conv-long", nil).Body)
	}
}
