package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/svcd/svcd/e2e/harness"
)

func TestExecResultFieldsOnEveryOutcome(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	wd, _ := os.Getwd()

	ok := execCall(t, d, map[string]any{"command": "echo out; echo err >&2"})
	if !ok.OK || ok.Result.Stdout != "out\n" || ok.Result.Stderr != "err\n" || *ok.Result.ExitCode != 0 || ok.Result.Signal != nil || *ok.Result.TimedOut {
		t.Fatalf("success: %+v", ok)
	}

	pwd := execCall(t, d, map[string]any{"command": "pwd"})
	if strings.TrimSpace(pwd.Result.Stdout) != wd {
		t.Fatalf("default cwd: got %q, want the daemon's %q", pwd.Result.Stdout, wd)
	}
	dir := t.TempDir()
	inDir := execCall(t, d, map[string]any{"command": "pwd", "cwd": dir})
	if strings.TrimSpace(inDir.Result.Stdout) != dir {
		t.Fatalf("cwd: got %q, want %q", inDir.Result.Stdout, dir)
	}

	fail := execCall(t, d, map[string]any{"command": "echo partial; exit 7"})
	if fail.OK || *fail.Result.ExitCode != 7 || fail.Result.Stdout != "partial\n" || fail.Code != "non_zero_exit" {
		t.Fatalf("non-zero exit: %+v", fail)
	}

	sig := execCall(t, d, map[string]any{"command": "kill -TERM $$"})
	if sig.OK || sig.Result.Signal == nil || *sig.Result.Signal != "SIGTERM" || *sig.Result.ExitCode != -1 {
		t.Fatalf("signal: %+v", sig)
	}

	missing := execCall(t, d, map[string]any{"command": "true", "cwd": filepath.Join(dir, "nope")})
	if missing.OK || missing.Result.ErrorCode != "cwd_not_found" || missing.Result.Error == "" || *missing.Result.ExitCode != -1 {
		t.Fatalf("missing cwd: %+v", missing)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	notDir := execCall(t, d, map[string]any{"command": "true", "cwd": file})
	if notDir.OK || notDir.Result.ErrorCode != "cwd_not_directory" || notDir.Result.Error == "" {
		t.Fatalf("cwd is a file: %+v", notDir)
	}

	// stdin is closed (/dev/null): cat returns at once with nothing.
	cat := execCall(t, d, map[string]any{"command": "cat; echo done", "timeoutMs": 5000})
	if !cat.OK || cat.Result.Stdout != "done\n" {
		t.Fatalf("stdin: %+v", cat)
	}

	// Commands get the default signal dispositions: the worker's own SIGPIPE
	// handling must not leak into them, or `yes | head` would end with
	// "Broken pipe" errors instead of a quiet SIGPIPE.
	pipe := execCall(t, d, map[string]any{"command": "yes | head -n 1; grep SigIgn /proc/self/status", "timeoutMs": 5000})
	if !pipe.OK || pipe.Result.Stderr != "" || !strings.HasPrefix(pipe.Result.Stdout, "y\n") {
		t.Fatalf("SIGPIPE in commands: %+v", pipe)
	}
	// Only SIGPIPE is ours to judge: the test's own environment may pass
	// other ignored signals down to the daemon.
	ign := strings.Fields(strings.TrimPrefix(strings.SplitN(pipe.Result.Stdout, "\n", 2)[1], "SigIgn:"))
	mask, err := strconv.ParseUint(strings.Join(ign, ""), 16, 64)
	if err != nil || mask&(1<<(int(syscall.SIGPIPE)-1)) != 0 {
		t.Fatalf("commands start with SIGPIPE ignored (or unreadable mask): %q", pipe.Result.Stdout)
	}

	// The shared token never reaches a command's environment.
	env := execCall(t, d, map[string]any{"command": `echo "${SVC_SHARED_TOKEN:-unset} ${SVCD_HOSTOPS_CONFIG:-unset} ${PLUGIN_CLIENT_CERT:-unset}"`})
	if env.Result.Stdout != "unset unset unset\n" {
		t.Fatalf("internal variables leaked into exec env: %q", env.Result.Stdout)
	}
}

func TestExecTimeoutKillsTheWholeGroup(t *testing.T) {
	t.Parallel()
	// The command writes its pid file outside its scratch directory.
	pidDir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + pidDir}})
	pidFile := filepath.Join(pidDir, "pids")
	// The command prints, then starts a background child and writes both
	// pids, then sleeps. With both pids in the file once the call answered
	// (the shell is dead by then), it reached its sleep before the timeout
	// and what it printed must be in the answer. A machine loaded far
	// beyond its cores may not start the shell that far within 700 ms
	// (seen beside a second make test): the same call then runs again with
	// a longer timeout; the test is about what a timeout kills and keeps,
	// not how soon a shell starts.
	for _, timeoutMs := range []int64{700, 3000, 10000} {
		_ = os.Remove(pidFile)
		start := time.Now()
		res := execCall(t, d, map[string]any{
			"command":   fmt.Sprintf("echo started; sleep 300 & echo $! > %s; echo $$ >> %s; sleep 300", pidFile, pidFile),
			"timeoutMs": timeoutMs,
		})
		took := time.Since(start)
		if res.OK || !*res.Result.TimedOut || res.Code != "timed_out" || res.Result.Signal == nil || *res.Result.Signal != "SIGKILL" {
			t.Fatalf("timeout: %+v", res)
		}
		if took < time.Duration(timeoutMs-100)*time.Millisecond || *res.Result.DurationMs < timeoutMs-50 {
			t.Fatalf("a %d ms timeout ended after %s (durationMs %d)", timeoutMs, took, *res.Result.DurationMs)
		}
		if b, _ := os.ReadFile(pidFile); len(strings.Fields(string(b))) < 2 {
			t.Logf("the command had not reached its sleep within %d ms on this machine; again with a longer timeout", timeoutMs)
			continue
		}
		if res.Result.Stdout != "started\n" {
			t.Fatalf("output before the timeout lost: %q", res.Result.Stdout)
		}
		pids := readPids(t, pidFile, 2, time.Second)
		waitDead(t, 10*time.Second, "background grandchild after timeout", pids...)
		return
	}
	t.Fatal("the command never reached its sleep before a 10 s timeout")
}

func TestExecValidation(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Args: []string{"-exec-timeout-max-ms", "60000"}})
	for _, tc := range []struct {
		body   any
		status int
		code   string
	}{
		{map[string]any{"command": "true", "timeoutMs": 0}, 422, "invalid_timeout"},
		{map[string]any{"command": "true", "timeoutMs": -5}, 422, "invalid_timeout"},
		{map[string]any{"command": "true", "timeoutMs": 60001}, 422, "invalid_timeout"},
		{map[string]any{"command": "true", "timeoutMs": "soon"}, 422, "invalid_field"},
		{map[string]any{"cwd": "/"}, 422, "missing_field"},
		{map[string]any{"command": "   "}, 422, "missing_field"},
		{`{"command":`, 400, "malformed_json"},
	} {
		resp := d.DoAuth("POST", "/v1/exec", tc.body)
		var env envelope[any]
		resp.Decode(t, &env)
		if resp.Status != tc.status || env.OK || env.Error.Code != tc.code {
			t.Errorf("%v: got %d %s, want %d %s", tc.body, resp.Status, resp.Body, tc.status, tc.code)
		}
	}
	if r := execCall(t, d, map[string]any{"command": "true", "timeoutMs": 60000}); !r.OK {
		t.Fatalf("timeoutMs at the maximum refused: %+v", r)
	}
}

func TestExecOutputCapAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Args: []string{"-exec-output-cap-bytes", "1000"}})
	big := execCall(t, d, map[string]any{"command": "head -c 50000 /dev/zero | tr '\\0' a; head -c 3000 /dev/zero | tr '\\0' b >&2"})
	if !big.OK || len(big.Result.Stdout) != 1000 || !big.Result.StdoutTruncated || len(big.Result.Stderr) != 1000 || !big.Result.StderrTruncated {
		t.Fatalf("cap: ok=%v stdout %d truncated %v, stderr %d truncated %v", big.OK, len(big.Result.Stdout), big.Result.StdoutTruncated, len(big.Result.Stderr), big.Result.StderrTruncated)
	}
	small := execCall(t, d, map[string]any{"command": "echo small"})
	if small.Result.StdoutTruncated || small.Result.StderrTruncated {
		t.Fatalf("small output flagged truncated: %+v", small)
	}
	// Invalid UTF-8: the body stays valid JSON, the text is repaired and the
	// exact bytes come back in stdoutBase64.
	resp := d.DoAuth("POST", "/v1/exec", map[string]any{"command": `printf 'ok\377\376end'`})
	if !utf8.Valid(resp.Body) {
		t.Fatalf("response body is not UTF-8: %q", resp.Body)
	}
	var env envelope[opOutcome[execRes]]
	resp.Decode(t, &env)
	r := env.Data.Result
	if !strings.HasPrefix(r.Stdout, "ok") || !strings.Contains(r.Stdout, "\uFFFD") || !strings.HasSuffix(r.Stdout, "end") {
		t.Fatalf("repaired stdout: %q", r.Stdout)
	}
	raw, err := base64.StdEncoding.DecodeString(r.StdoutBase64)
	if err != nil || !bytes.Equal(raw, []byte("ok\377\376end")) {
		t.Fatalf("stdoutBase64 %q (%v)", r.StdoutBase64, err)
	}
	// A multi-byte character cut by the cap is dropped, not mangled.
	euro := execCall(t, d, map[string]any{"command": "i=0; while [ $i -lt 400 ]; do printf '€'; i=$((i+1)); done"})
	if !euro.Result.StdoutTruncated || euro.Result.StdoutBase64 != "" || !utf8.ValidString(euro.Result.Stdout) || len(euro.Result.Stdout) != 999 {
		t.Fatalf("cut rune: len %d truncated %v base64 %q", len(euro.Result.Stdout), euro.Result.StdoutTruncated, euro.Result.StdoutBase64)
	}
}

func TestExecClientDisconnectKillsCommand(t *testing.T) {
	t.Parallel()
	// The command writes its pid file outside its scratch directory.
	pidDir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + pidDir}})
	pidFile := filepath.Join(pidDir, "pids")
	body := fmt.Sprintf(`{"command":"sleep 300 & echo $! > %s; echo $$ >> %s; sleep 300"}`, pidFile, pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", d.URL+"/v1/exec", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	pids := readPids(t, pidFile, 2, 5*time.Second)
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("command process %d not running before the disconnect", p)
		}
	}
	cancel()
	<-errc
	waitDead(t, 10*time.Second, "command after the HTTP client went away", pids...)
	if r := execCall(t, d, map[string]any{"command": "echo still fine"}); !r.OK {
		t.Fatalf("exec after a disconnect: %+v", r)
	}
}

func TestHostopsRequireTokenBeforeAnything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The authorized command's marker is written outside its scratch
	// directory: a write root, so that the refused calls' absence of it
	// means they did not run.
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + dir}})
	marker := filepath.Join(dir, "ran")
	written := filepath.Join(dir, "written.txt")
	secret := filepath.Join(dir, "secret.txt")
	os.WriteFile(secret, []byte("s3cret"), 0o600)

	// A reverse proxy in front of the daemon (the public host case).
	target, _ := url.Parse(d.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()

	calls := []struct {
		path string
		body map[string]any
	}{
		{"/v1/exec", map[string]any{"command": "touch " + marker}},
		{"/v1/files/write", map[string]any{"path": written, "content": "x"}},
		{"/v1/files/read", map[string]any{"path": secret}},
		{"/v1/workers/restart", map[string]any{"worker": "hostops"}},
	}
	pidBefore := hostopsWorker(t, d).Pid
	for _, base := range []string{d.URL, proxy.URL} {
		for _, c := range calls {
			for _, hdr := range [][]string{nil, {"Authorization: Bearer wrong-token"}, {"Authorization: Basic " + d.Token}, {"Authorization: Bearer " + d.Token + "x"}} {
				resp := harness.Do(t, "POST", base+c.path, c.body, hdr...)
				var env envelope[any]
				resp.Decode(t, &env)
				if resp.Status != 401 || env.OK || env.Error.Code != "unauthorized" {
					t.Fatalf("%s%s with %v: %d %s", base, c.path, hdr, resp.Status, resp.Body)
				}
				if strings.Contains(string(resp.Body), "s3cret") {
					t.Fatal("a refused read returned the file")
				}
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, p := range []string{marker, written} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: a refused call ran", p)
		}
	}
	if w := hostopsWorker(t, d); w.Pid != pidBefore || w.Restarts != 0 {
		t.Fatalf("a refused restart restarted the worker: %+v", w)
	}
	// With the token, through the proxy too.
	resp := harness.Do(t, "POST", proxy.URL+"/v1/exec", map[string]any{"command": "touch " + marker}, "Authorization: Bearer "+d.Token)
	if resp.Status != 200 {
		t.Fatalf("exec through the proxy with the token: %d %s", resp.Status, resp.Body)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("authorized exec did not run: %v", err)
	}
}

func TestFilesRead(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Args: []string{"-files-read-cap-bytes", "6000000"}})
	dir := t.TempDir()
	text := filepath.Join(dir, "a.txt")
	os.WriteFile(text, []byte("héllo\n"), 0o640)
	mt := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	os.Chtimes(text, mt, mt)

	r := fileCall(t, d, "/v1/files/read", map[string]any{"path": "a.txt", "cwd": dir})
	if !r.OK || r.Result.Content != "héllo\n" || r.Result.Path != text || r.Result.Size != 7 || r.Result.Mode != "0640" || r.Result.Encoding != "utf8" {
		t.Fatalf("utf8 read: %+v", r)
	}
	if got, _ := time.Parse(time.RFC3339Nano, r.Result.ModTime); !got.Equal(mt) {
		t.Fatalf("modTime %q, want %s", r.Result.ModTime, mt)
	}
	bin := filepath.Join(dir, "b.bin")
	os.WriteFile(bin, []byte{0, 1, 0xff, 0xfe}, 0o644)
	b := fileCall(t, d, "/v1/files/read", map[string]any{"path": bin, "encoding": "base64"})
	if raw, _ := base64.StdEncoding.DecodeString(b.Result.Content); !b.OK || !bytes.Equal(raw, []byte{0, 1, 0xff, 0xfe}) || b.Result.Encoding != "base64" {
		t.Fatalf("base64 read: %+v", b)
	}
	notUTF8 := fileCall(t, d, "/v1/files/read", map[string]any{"path": bin})
	if notUTF8.OK || notUTF8.Code != "not_utf8" || !strings.Contains(notUTF8.Error, "base64") || notUTF8.Result.Content != "" {
		t.Fatalf("non-UTF-8 under utf8: %+v", notUTF8)
	}
	for _, tc := range []struct{ path, code string }{
		{dir, "is_directory"},
		{filepath.Join(dir, "missing"), "not_found"},
	} {
		got := fileCall(t, d, "/v1/files/read", map[string]any{"path": tc.path})
		if got.OK || got.Code != tc.code || got.Error == "" {
			t.Fatalf("%s: %+v", tc.path, got)
		}
	}
	// 5 MB: over gRPC's 4 MB default, under this daemon's 6 MB cap.
	large := filepath.Join(dir, "large.txt")
	os.WriteFile(large, bytes.Repeat([]byte("0123456789"), 500_000), 0o644)
	l := fileCall(t, d, "/v1/files/read", map[string]any{"path": large})
	if !l.OK || len(l.Result.Content) != 5_000_000 {
		t.Fatalf("5 MB read: ok=%v len=%d %s", l.OK, len(l.Result.Content), l.Error)
	}
	tooLarge := filepath.Join(dir, "huge.txt")
	os.WriteFile(tooLarge, make([]byte, 6_000_001), 0o644)
	h := fileCall(t, d, "/v1/files/read", map[string]any{"path": tooLarge})
	if h.OK || h.Code != "too_large" {
		t.Fatalf("over the cap: %+v", h.Error)
	}
	if resp := d.DoAuth("POST", "/v1/files/read", map[string]any{"path": text, "encoding": "latin1"}); resp.Status != 422 {
		t.Fatalf("unknown encoding: %d %s", resp.Status, resp.Body)
	}
}

func TestFilesWrite(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	dir := t.TempDir()

	nested := filepath.Join(dir, "x", "y", "z.txt")
	noParents := fileCall(t, d, "/v1/files/write", map[string]any{"path": nested, "content": "hi"})
	if noParents.OK || noParents.Code != "parent_not_found" || !strings.Contains(noParents.Error, "createParents") {
		t.Fatalf("missing parents: %+v", noParents)
	}
	if _, err := os.Stat(filepath.Dir(nested)); err == nil {
		t.Fatal("folders created without createParents")
	}
	w := fileCall(t, d, "/v1/files/write", map[string]any{"path": "x/y/z.txt", "cwd": dir, "content": "hi", "createParents": true})
	if !w.OK || w.Result.Path != nested || w.Result.Created == nil || !*w.Result.Created || w.Result.Size != 2 {
		t.Fatalf("create: %+v", w)
	}
	if b, _ := os.ReadFile(nested); string(b) != "hi" {
		t.Fatalf("content %q", b)
	}

	// overwrite defaults to true and keeps the mode.
	os.Chmod(nested, 0o600)
	o := fileCall(t, d, "/v1/files/write", map[string]any{"path": nested, "content": "second"})
	if !o.OK || *o.Result.Created || o.Result.Mode != "0600" {
		t.Fatalf("overwrite: %+v", o)
	}
	if st, _ := os.Stat(nested); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after overwrite: %v", st.Mode())
	}
	// overwrite false: refused, untouched.
	before, _ := os.Stat(nested)
	n := fileCall(t, d, "/v1/files/write", map[string]any{"path": nested, "content": "third", "overwrite": false})
	if n.OK || n.Code != "exists" {
		t.Fatalf("overwrite false: %+v", n)
	}
	after, _ := os.Stat(nested)
	if b, _ := os.ReadFile(nested); string(b) != "second" || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("file touched by a refused write: %q", b)
	}
	fresh := filepath.Join(dir, "fresh.txt")
	if f := fileCall(t, d, "/v1/files/write", map[string]any{"path": fresh, "content": "new", "overwrite": false}); !f.OK {
		t.Fatalf("overwrite false on a new file: %+v", f)
	}
	// base64 content, binary bytes.
	binPath := filepath.Join(dir, "bin")
	payload := []byte{0, 0xff, 10, 13}
	bw := fileCall(t, d, "/v1/files/write", map[string]any{"path": binPath, "content": base64.StdEncoding.EncodeToString(payload), "encoding": "base64"})
	if got, _ := os.ReadFile(binPath); !bw.OK || !bytes.Equal(got, payload) {
		t.Fatalf("base64 write: %+v %v", bw, got)
	}
	if resp := d.DoAuth("POST", "/v1/files/write", map[string]any{"path": binPath, "content": "%%%", "encoding": "base64"}); resp.Status != 422 {
		t.Fatalf("bad base64: %d %s", resp.Status, resp.Body)
	}
	// A directory as target, a file as parent.
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": dir, "content": "x"}); r.OK || r.Code != "is_directory" {
		t.Fatalf("directory target: %+v", r)
	}
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": filepath.Join(fresh, "child"), "content": "x"}); r.OK || r.Code != "parent_not_directory" {
		t.Fatalf("file as parent: %+v", r)
	}
	// 3 MB of text: over the global 1 MiB body cap, within the write route's.
	big := strings.Repeat("abcdefghij", 300_000)
	bigPath := filepath.Join(dir, "big.txt")
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": bigPath, "content": big}); !r.OK || r.Result.Size != int64(len(big)) {
		t.Fatalf("3 MB write: %+v", r.Error)
	}
	// No temporary files left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".svcd-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	if resp := d.DoAuth("POST", "/v1/files/write", map[string]any{"path": bigPath}); resp.Status != 422 {
		t.Fatalf("missing content: %d %s", resp.Status, resp.Body)
	}
}

func TestFilesWriteIsAtomic(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	path := filepath.Join(t.TempDir(), "atomic.txt")
	a, b := strings.Repeat("a", 400_000), strings.Repeat("b", 400_000)
	os.WriteFile(path, []byte(a), 0o644)
	stop := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(bad)
				return
			default:
			}
			got, err := os.ReadFile(path)
			if err != nil || (string(got) != a && string(got) != b) {
				bad <- fmt.Sprintf("reader saw %d bytes (err %v)", len(got), err)
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		content := a
		if i%2 == 0 {
			content = b
		}
		if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": path, "content": content}); !r.OK {
			t.Fatalf("write %d: %+v", i, r.Error)
		}
	}
	close(stop)
	if msg, ok := <-bad; ok {
		t.Fatal(msg)
	}
}

func TestHostopsHardening(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("no"), 0o644)
	os.Symlink(outside, filepath.Join(root, "escape"))
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("yes"), 0o644)
	d := harness.Start(t, harness.Options{
		Args: []string{"-hostops-allowed-roots", root, "-exec-env-allow", "PATH,KEEP_ME", "-exec-rlimits", "nofile=40"},
		Env:  []string{"KEEP_ME=kept", "DROP_ME=dropped"},
	})
	if r := fileCall(t, d, "/v1/files/read", map[string]any{"path": filepath.Join(root, "ok.txt")}); !r.OK || r.Result.Content != "yes" {
		t.Fatalf("read inside the root: %+v", r)
	}
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/files/read", map[string]any{"path": filepath.Join(outside, "secret")}},
		{"/v1/files/read", map[string]any{"path": "escape/secret", "cwd": root}},
		{"/v1/files/write", map[string]any{"path": filepath.Join(root, "escape", "new")}},
		{"/v1/files/write", map[string]any{"path": filepath.Join(outside, "new"), "content": "x"}},
		{"/v1/exec", map[string]any{"command": "touch " + filepath.Join(outside, "ran"), "cwd": outside}},
		{"/v1/exec", map[string]any{"command": "true", "cwd": filepath.Join(root, "escape")}},
	} {
		if c.path == "/v1/files/write" && c.body["content"] == nil {
			c.body["content"] = "x"
		}
		resp := d.DoAuth("POST", c.path, c.body)
		var env envelope[any]
		resp.Decode(t, &env)
		if resp.Status != 403 || env.Error.Code != "path_not_allowed" {
			t.Fatalf("%s %v: %d %s", c.path, c.body, resp.Status, resp.Body)
		}
	}
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(outside, "ran")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s created outside the allowed root", p)
		}
	}
	env := execCall(t, d, map[string]any{"command": `echo "$KEEP_ME ${DROP_ME:-gone}"; ulimit -n`, "cwd": root})
	if !env.OK || env.Result.Stdout != "kept gone\n40\n" {
		t.Fatalf("env allow-list / rlimit: %+v", env.Result)
	}
}

func TestFilesWriteCaps(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Args: []string{"-files-write-cap-bytes", "1000"}})
	path := filepath.Join(t.TempDir(), "capped.txt")
	for _, tc := range []struct {
		content string
		code    string
	}{
		{strings.Repeat("x", 1001), "content_too_large"},
		{strings.Repeat("x", 2<<20), "body_too_large"}, // over this route's body cap (the 1 MiB floor)
	} {
		resp := d.DoAuth("POST", "/v1/files/write", map[string]any{"path": path, "content": tc.content})
		var env envelope[any]
		resp.Decode(t, &env)
		if resp.Status != 413 || env.Error.Code != tc.code {
			t.Fatalf("%d bytes: %d %s", len(tc.content), resp.Status, resp.Body)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a refused write created the file")
	}
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": path, "content": strings.Repeat("x", 1000)}); !r.OK {
		t.Fatalf("write at the cap: %+v", r)
	}
}
