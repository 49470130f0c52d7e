package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/raftstore/snapfile"
)

const snapType = "application/vnd.svcd.snapshot"

// systemWriter alternates pause and resume on d until stop closes, and
// records every acknowledged write's state version and reason.
type systemWriter struct {
	mu      sync.Mutex
	acked   map[uint64]string // version → reason of the write that made it
	last    uint64
	writers atomic.Int64 // makes each write's reason unique
	errs    []string
}

func (sw *systemWriter) run(base string, stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		path := "/v1/system/pause"
		if i%2 == 1 {
			path = "/v1/system/resume"
		}
		// Unique across writers: the answer is the latest state, which
		// another writer's write may already have replaced.
		reason := fmt.Sprintf("w-%d-%d", sw.writers.Add(1), i)
		body, _ := json.Marshal(map[string]string{"reason": reason, "requested_by": "snapshot-test"})
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			sw.note(err.Error())
			continue
		}
		var out struct {
			Data systemState `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			sw.note(fmt.Sprintf("%s: %d %v", path, resp.StatusCode, err))
			continue
		}
		sw.mu.Lock()
		// The route answers the latest state: with two writers it may be
		// the other's, so only a state that carries this write's reason
		// says which version this write made.
		if out.Data.Reason == reason {
			sw.acked[out.Data.Version] = reason
		}
		if out.Data.Version > sw.last {
			sw.last = out.Data.Version
		}
		sw.mu.Unlock()
	}
}

// note records a failed write and pauses a little, so a node that is down
// is not hammered.
func (sw *systemWriter) note(s string) {
	sw.mu.Lock()
	sw.errs = append(sw.errs, s)
	sw.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
}

func (sw *systemWriter) lastAcked() uint64 { sw.mu.Lock(); defer sw.mu.Unlock(); return sw.last }

func sysStateOf(t *testing.T, d *harness.Daemon) systemState {
	t.Helper()
	var out struct {
		Data systemState `json:"data"`
	}
	resp := d.Do("GET", "/v1/system/state", nil)
	if resp.Status != 200 {
		t.Fatalf("state: %d %s", resp.Status, resp.Body)
	}
	resp.Decode(t, &out)
	return out.Data
}

func svcdRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(harness.Binary(t), args...).CombinedOutput()
	return string(out), err
}

// A snapshot saved while writes go on holds every write acknowledged before
// it was asked for; restored into a fresh data dir, the real binary starts
// on it with that state; the same file restores a running node; a flipped
// byte, a truncated file and a foreign file are refused and change nothing.
func TestSnapshotSaveUnderLoadAndRestore(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	sw := &systemWriter{acked: map[uint64]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go sw.run(d.URL, stop, &wg)
	go sw.run(d.URL, stop, &wg)
	for sw.lastAcked() < 40 {
		time.Sleep(10 * time.Millisecond)
	}
	before := sw.lastAcked()
	resp := d.DoAuth("GET", "/v1/snapshot", nil)
	after := sw.lastAcked()
	for sw.lastAcked() < after+20 { // writes go on after the snapshot too
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if resp.Status != 200 || resp.Header.Get("Content-Type") != snapType {
		t.Fatalf("GET /v1/snapshot: %d %s %.200s", resp.Status, resp.Header.Get("Content-Type"), resp.Body)
	}
	if len(sw.errs) > 0 {
		t.Fatalf("writes failed during the snapshot: %v", sw.errs[:min(3, len(sw.errs))])
	}
	file := resp.Body
	hdr, _, err := snapfile.Read(bytes.NewReader(file), 1<<30)
	if err != nil {
		t.Fatalf("saved file does not read back: %v", err)
	}
	if hdr.Index == 0 || hdr.Term == 0 || len(hdr.ClusterID) != 32 || hdr.CreatedAt.IsZero() {
		t.Fatalf("header %+v", hdr)
	}
	if unauth := d.Do("GET", "/v1/snapshot", nil); unauth.Status != 401 {
		t.Fatalf("snapshot without token: %d", unauth.Status)
	}
	path := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}

	// Offline restore into a fresh data dir, then the real binary on it.
	// The file is authenticated (format 2): the offline restore checks it
	// with the cluster key it finds, here the shared token (issue 34).
	t.Setenv("SVC_SHARED_TOKEN", d.Token)
	fresh := filepath.Join(t.TempDir(), "restored")
	if out, err := svcdRun(t, "snapshot", "restore", "-data-dir", fresh, path); err != nil {
		t.Fatalf("svcd snapshot restore: %v\n%s", err, out)
	}
	r := harness.Start(t, harness.Options{DataDir: fresh})
	got := sysStateOf(t, r)
	if got.Version < before {
		t.Fatalf("restored state version %d: the write acknowledged at version %d before the snapshot is missing", got.Version, before)
	}
	if reason, ok := sw.acked[got.Version]; ok && reason != got.Reason {
		t.Fatalf("restored state is not one the writes made: version %d reason %q, the write gave %q", got.Version, got.Reason, reason)
	}
	// The restored node takes writes.
	if w := r.Do("POST", "/v1/system/pause", map[string]string{"reason": "after-restore"}); w.Status != 200 {
		t.Fatalf("write after restore: %d %s", w.Status, w.Body)
	}
	base := sysStateOf(t, r)

	// Bad files are refused by the running node and change nothing.
	flipped := bytes.Clone(file)
	flipped[len(flipped)/2] ^= 0x20
	for name, body := range map[string][]byte{
		"flipped byte": flipped,
		"truncated":    file[:len(file)-7],
		"foreign":      []byte("PK\x03\x04 this is a zip, not a snapshot"),
	} {
		resp := r.DoAuth("POST", "/v1/snapshot/restore", body, "Content-Type: "+snapType)
		if resp.Status != 422 || !strings.Contains(string(resp.Body), "invalid_snapshot") {
			t.Fatalf("%s: %d %s, want 422 invalid_snapshot", name, resp.Status, resp.Body)
		}
		if now := sysStateOf(t, r); now.Version != base.Version || now.Reason != base.Reason {
			t.Fatalf("%s changed the state: %+v → %+v", name, base, now)
		}
		bad := filepath.Join(t.TempDir(), "bad.snap")
		os.WriteFile(bad, body, 0o600)
		dir := filepath.Join(t.TempDir(), "never")
		if out, err := svcdRun(t, "snapshot", "restore", "-data-dir", dir, bad); err == nil || !strings.Contains(out, "refused, nothing written") {
			t.Fatalf("offline restore of %s: %v %s", name, err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "snapshots")); err == nil {
			t.Fatalf("offline restore of %s wrote a snapshot", name)
		}
	}
	// A JSON content type is not a snapshot body: the write guard says 415.
	if resp := r.DoAuth("POST", "/v1/snapshot/restore", file); resp.Status != 415 {
		t.Fatalf("snapshot sent as JSON: %d %s", resp.Status, resp.Body)
	}
	if resp := r.Do("POST", "/v1/snapshot/restore", file, "Content-Type: "+snapType); resp.Status != 401 {
		t.Fatalf("restore without token: %d", resp.Status)
	}
	// Offline restore refuses a data dir that holds state.
	if out, err := svcdRun(t, "snapshot", "restore", "-data-dir", d.DataDir, path); err == nil || !(strings.Contains(out, "already holds raft state") || strings.Contains(out, "is in use by pid")) {
		t.Fatalf("restore over a live data dir: %v %s", err, out)
	}

	// Restore on the running original node: it goes back to the snapshot's state.
	restored := d.DoAuth("POST", "/v1/snapshot/restore", file, "Content-Type: "+snapType)
	if restored.Status != 200 {
		t.Fatalf("restore on the running node: %d %s", restored.Status, restored.Body)
	}
	if now := sysStateOf(t, d); now.Version != got.Version || now.Reason != got.Reason {
		t.Fatalf("running node after restore: %+v, want the snapshot's %+v", now, got)
	}
	// And it keeps it across a restart.
	d.Restart()
	if now := sysStateOf(t, d); now.Version < got.Version || now.Reason != got.Reason {
		t.Fatalf("after restart: %+v, want the snapshot's %+v", now, got)
	}
}

// svcd snapshot save reads a stopped single node's data dir.
func TestSnapshotSaveOffline(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	d.Do("POST", "/v1/system/pause", map[string]string{"reason": "offline-save"})
	want := sysStateOf(t, d)
	if err := d.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "offline.snap")
	if out, err := svcdRun(t, "snapshot", "save", "-data-dir", d.DataDir, path); err != nil {
		t.Fatalf("svcd snapshot save: %v\n%s", err, out)
	}
	fresh := filepath.Join(t.TempDir(), "from-offline")
	if out, err := svcdRun(t, "snapshot", "restore", "-data-dir", fresh, path); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	r := harness.Start(t, harness.Options{DataDir: fresh})
	if got := sysStateOf(t, r); got.Version != want.Version || got.Reason != "offline-save" {
		t.Fatalf("state from the offline snapshot %+v, want %+v", got, want)
	}
}

// A data dir of a newer format is refused with both versions named, and
// left as it was.
func TestDataDirNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	format := []byte(`{"format_version": 99, "cluster_id": "x", "written_by": "9.9.9"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "FORMAT"), format, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(harness.Binary(t), "serve", "-listen", "127.0.0.1:0", "-data-dir", dir)
	cmd.Env = append(os.Environ(), "SVC_SHARED_TOKEN=test-token-0123456789abcdef")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("svcd started on a newer data dir")
	}
	if err == nil {
		t.Fatalf("svcd exited 0 on a newer data dir:\n%s", out)
	}
	for _, want := range []string{"format version 99", "svcd 9.9.9", "knows format versions up to 1"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("message lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "FORMAT")); !bytes.Equal(b, format) {
		t.Fatalf("FORMAT changed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		t.Fatal("raft.db created in a refused data dir")
	}
	// A fresh dir gets the current format, written once.
	d := harness.Start(t, harness.Options{})
	b, err := os.ReadFile(filepath.Join(d.DataDir, "FORMAT"))
	if err != nil || !strings.Contains(string(b), `"format_version": 1`) {
		t.Fatalf("fresh data dir FORMAT: %v %s", err, b)
	}
	d.Restart()
	if b2, _ := os.ReadFile(filepath.Join(d.DataDir, "FORMAT")); !bytes.Equal(b, b2) {
		t.Fatalf("FORMAT rewritten on restart: %s → %s", b, b2)
	}
}
