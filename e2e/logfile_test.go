package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// rotatedLines reads PATH.1, PATH.2, … (oldest first) then PATH: the log in
// the order it was written. It fails on a file that ends inside a line.
func rotatedLines(t *testing.T, path string) (lines []string, files int) {
	t.Helper()
	var names []string
	for n := 1; ; n++ {
		name := path + "." + strconv.Itoa(n)
		if _, err := os.Stat(name); err != nil {
			break
		}
		names = append(names, name)
	}
	for _, name := range append(names, path) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("%s ends inside a line", name)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		files++
	}
	return lines, files
}

// TestLogFileRotatesAndKeepsEveryLineWithWorkers runs the real daemon with
// log_file and a small log_rotate_bytes under request load and checks that
// the files, read in rotation order, hold exactly the lines the daemon wrote
// to stderr (nothing lost, nothing twice), that lines of the worker processes
// (relayed by go-plugin) are among them as parsed entries with their own
// level, and that the files were rotated many times within the size bound.
func TestLogFileRotatesAndKeepsEveryLineWithWorkers(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log", "svcd.log")
	const rotate = 4096
	d := harness.Start(t, harness.Options{Args: []string{"-log-json", "-log-level", "debug",
		"-log-file", logPath, "-log-rotate-bytes", strconv.Itoa(rotate),
		"-log-rotate-max-files", "0"}}) // keep all: the test reads every line back
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				r := d.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo load-" + strconv.Itoa(g*100+i)})
				if r.Status != 200 {
					t.Errorf("exec = %d %s", r.Status, r.Body)
					return
				}
				d.Do("GET", "/v1/status", nil)
			}
		})
	}
	wg.Wait()
	if err := d.Terminate(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.Logs())
	}

	var stderrLines []string
	for _, l := range strings.Split(d.Logs(), "\n") {
		if strings.HasPrefix(l, "{") {
			stderrLines = append(stderrLines, l)
		}
	}
	fileLines, files := rotatedLines(t, logPath)
	if len(fileLines) != len(stderrLines) {
		t.Fatalf("log files hold %d lines, stderr %d: a line was lost or doubled", len(fileLines), len(stderrLines))
	}
	for i := range fileLines {
		if fileLines[i] != stderrLines[i] {
			t.Fatalf("line %d differs:\nfile:   %s\nstderr: %s", i, fileLines[i], stderrLines[i])
		}
	}
	if files < 5 {
		t.Fatalf("only %d log files: the load did not rotate", files)
	}
	workerLines := 0
	for _, l := range fileLines {
		if len(l) > rotate {
			t.Errorf("a line longer than the rotation size: %d bytes", len(l))
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		// A worker's own line: relayed by go-plugin under the worker's
		// logger with the worker's @module, as a parsed entry (not the raw
		// JSON text as the message of a debug entry).
		if e["@module"] == "hostops" || strings.HasPrefix(e["@message"].(string), "{") {
			if strings.HasPrefix(e["@message"].(string), "{") {
				t.Fatalf("a worker line was relayed unparsed (level lost): %s", l)
			}
			workerLines++
		}
	}
	if workerLines == 0 {
		t.Fatal("no line of the hostops worker process in the log file")
	}
	matches, _ := filepath.Glob(logPath + "*")
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.Size() > rotate {
			t.Errorf("%s is %d bytes, past log_rotate_bytes %d", m, st.Size(), rotate)
		}
	}
}

// TestLogFileMaxFilesBoundsTheCount: with log_rotate_max_files the daemon
// keeps the live file and at most that many rotated ones.
func TestLogFileMaxFilesBoundsTheCount(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "svcd.log")
	d := harness.Start(t, harness.Options{Env: []string{"SVC_LOG_FILE=" + logPath, "SVC_LOG_ROTATE_BYTES=2048",
		"SVC_LOG_ROTATE_MAX_FILES=2", "SVC_LOG_LEVEL=debug"}})
	for range 40 {
		d.Do("GET", "/v1/status", nil)
		d.DoAuth("POST", "/v1/exec", map[string]any{"command": "true"})
	}
	if err := d.Terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(logPath + "*")
	if len(matches) != 3 {
		t.Fatalf("log files %v, want the live one and 2 rotated", matches)
	}
	if _, err := os.Stat(logPath + ".1"); err == nil {
		t.Fatalf("the oldest rotated file %s.1 was kept with log_rotate_max_files 2", logPath)
	}
}

// TestLogFileBadValuesStopTheStart: invalid log settings stop the daemon
// before it does anything, naming the key.
func TestLogFileBadValuesStopTheStart(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-log-file", filepath.Join(dir, "a.log"), "-log-rotate-bytes", "-5"}, "log_rotate_bytes must be 0"},
		{[]string{"-log-rotate-max-files", "3"}, "need log_file"},
		{[]string{"-log-file", dir}, "is a directory"},
	} {
		out, err := exec.Command(harness.Binary(t), append([]string{"serve", "-listen", "127.0.0.1:0", "-data-dir", filepath.Join(dir, "data")}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("svcd serve %v = %v %s, want a refusal containing %q", c.args, err, out, c.want)
		}
	}
}

// TestVersionCommandMatchesTheRoute: `svcd version -json` prints the object
// GET /version serves, with the build fields an operator asks for.
func TestVersionCommandMatchesTheRoute(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	var served envelope[map[string]any]
	d.Do("GET", "/version", nil).Decode(t, &served)
	out, err := exec.Command(harness.Binary(t), "version", "-json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var printed map[string]any
	if err := json.Unmarshal(out, &printed); err != nil {
		t.Fatalf("svcd version -json: %v: %s", err, out)
	}
	if !reflect.DeepEqual(printed, served.Data) {
		t.Fatalf("svcd version -json = %v, GET /version = %v", printed, served.Data)
	}
	for _, k := range []string{"name", "version", "commit", "build_date", "go_version", "platform", "api"} {
		if s, _ := served.Data[k].(string); s == "" {
			t.Errorf("GET /version lacks %q: %v", k, served.Data)
		}
	}
	if served.Data["go_version"] != runtime.Version() || served.Data["platform"] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("GET /version = %v", served.Data)
	}
}
