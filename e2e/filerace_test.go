package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// Issue 32, attack 5: files/read checked a path and then opened it, so a
// symlink flipped inside hostops_allowed_roots between the two returned the
// outside file (a few reads in a thousand). Here a link in the root flips
// between a file inside and a root-only file outside for 10 s while reads
// and writes go through it: no read may return the outside content and the
// outside file must end exactly as it started.
func TestFileRoutesSymlinkFlipRace(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	d := harness.Start(t, harness.Options{Args: []string{"-hostops-allowed-roots", root}})

	const secret = "OUTSIDE-SECRET\n"
	secretFile := filepath.Join(outside, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(secretFile)
	inside := filepath.Join(root, "inside")
	if err := os.WriteFile(inside, []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg, flipper sync.WaitGroup
	var flips atomic.Int64
	flipper.Add(1)
	go func() { // flip the link atomically: symlink beside it, rename over it
		defer flipper.Done()
		tmp := filepath.Join(root, ".link.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := inside
			if i%2 == 1 {
				target = secretFile
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) == nil {
				flips.Add(1)
			}
		}
	}()

	var reads, readsOK, leaks, writes, writesOK atomic.Int64
	var leakMu sync.Mutex
	var leak string
	post := func(path string, body map[string]any) (opOutcome[fileRes], bool) {
		resp := d.DoAuth("POST", path, body)
		var env envelope[opOutcome[fileRes]]
		if resp.Status != 200 || json.Unmarshal(resp.Body, &env) != nil {
			return env.Data, false
		}
		return env.Data, true
	}
	deadline := time.Now().Add(10 * time.Second)
	for w := 0; w < 2; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, ok := post("/v1/files/read", map[string]any{"path": link})
				reads.Add(1)
				if ok && r.OK {
					readsOK.Add(1)
				}
				if bytes.Contains([]byte(r.Result.Content), []byte("OUTSIDE")) {
					leaks.Add(1)
					leakMu.Lock()
					leak = r.Result.Path
					leakMu.Unlock()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, ok := post("/v1/files/write", map[string]any{"path": link, "content": "written\n", "overwrite": true})
				writes.Add(1)
				if ok && r.OK {
					writesOK.Add(1)
				}
			}
		}()
	}
	wg.Wait() // the callers stop themselves at the deadline
	close(stop)
	flipper.Wait()

	t.Logf("%d flips; %d reads (%d ok), %d writes (%d ok)", flips.Load(), reads.Load(), readsOK.Load(), writes.Load(), writesOK.Load())
	if leaks.Load() != 0 {
		t.Fatalf("%d reads returned the outside file's content (last at %s)", leaks.Load(), leak)
	}
	if got, _ := os.ReadFile(secretFile); string(got) != secret {
		t.Fatalf("the outside file was written: %q", got)
	}
	after, _ := os.Stat(secretFile)
	if !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Ino != before.Sys().(*syscall.Stat_t).Ino {
		t.Fatalf("the outside file changed: %v %v -> %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
	}
	if readsOK.Load() == 0 || writesOK.Load() == 0 || flips.Load() < 100 {
		t.Fatalf("the race did not run: %d flips, %d good reads, %d good writes", flips.Load(), readsOK.Load(), writesOK.Load())
	}
}

// A FIFO in a root made files/read block in open(2), holding a worker
// thread per call. It must answer not_regular_file at once (and so must a
// write to it, which would otherwise be replaced by a regular file).
func TestFileRoutesRefuseFIFOAtOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := harness.Start(t, harness.Options{Args: []string{"-hostops-allowed-roots", root}})
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"/v1/files/read", "/v1/files/write"} {
		done := make(chan opOutcome[fileRes], 1)
		go func() {
			body := map[string]any{"path": fifo}
			if route == "/v1/files/write" {
				body["content"], body["overwrite"] = "x", true
			}
			resp := d.DoAuth("POST", route, body)
			var env envelope[opOutcome[fileRes]]
			if json.Unmarshal(resp.Body, &env) != nil || resp.Status != 200 {
				env.Data.Error = fmt.Sprintf("status %d: %s", resp.Status, resp.Body)
			}
			done <- env.Data
		}()
		select {
		case r := <-done:
			if r.OK || r.Code != "not_regular_file" {
				t.Fatalf("%s of a FIFO: %+v\nlogs:\n%s", route, r, d.Logs())
			}
		case <-time.After(5 * time.Second):
			// Unblock the worker so the daemon can stop.
			if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s of a FIFO did not answer within 5 s", route)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
}
