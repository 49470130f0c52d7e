package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

func TestHostopsCommandsAgainstTheDaemon(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	dir := t.TempDir()

	code, out, errOut := svcctlJSON(t, d, "exec", "-cwd", dir, "-sh", "echo hi from $(pwd)")
	if code != 0 || !strings.Contains(out, `"stdout": "hi from `+dir+`\n"`) {
		t.Fatalf("exec: %d %s %s", code, out, errOut)
	}
	code, out, errOut = svcctlJSON(t, d, "exec", "-sh", "exit 4")
	if code != 4 || !strings.Contains(out, `"exitCode": 4`) {
		t.Fatalf("failing exec must exit 4 with the envelope: %d %s %s", code, out, errOut)
	}
	if code, _, _ = svcctl(t, d, "exec"); code != 2 {
		t.Fatalf("exec without a command: exit %d", code)
	}

	path := filepath.Join(dir, "sub", "note.txt")
	code, out, errOut = svcctlJSON(t, d, "files", "write", "-parents", path, "written by svcctl")
	if code != 0 {
		t.Fatalf("files write: %d %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != "written by svcctl" {
		t.Fatalf("file content %q", b)
	}
	if code, _, _ = svcctlJSON(t, d, "files", "write", "-no-overwrite", path, "again"); code != 1 {
		t.Fatalf("no-overwrite on an existing file: exit %d", code)
	}
	code, out, _ = svcctlJSON(t, d, "files", "read", path)
	var env struct {
		Data struct {
			OK     bool `json:"ok"`
			Result struct {
				Content string `json:"content"`
			} `json:"result"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env.Data.Result.Content != "written by svcctl" {
		t.Fatalf("files read: %d %s", code, out)
	}

	code, out, _ = svcctlJSON(t, d, "workers")
	if code != 0 || !strings.Contains(out, `"name": "hostops"`) || !strings.Contains(out, `"state": "running"`) {
		t.Fatalf("workers: %d %s", code, out)
	}
	code, out, errOut = svcctlJSON(t, d, "workers", "restart", "hostops")
	if code != 0 || !strings.Contains(out, `"restarted"`) || !strings.Contains(out, `"restarts": 1`) {
		t.Fatalf("workers restart: %d %s %s", code, out, errOut)
	}
	if code, _, _ = svcctlJSON(t, d, "-token", "wrong", "exec", "true"); code != exitNoRun {
		t.Fatalf("wrong token: exit %d", code)
	}
}
