package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// worker_failed_retry_ms: 5 minutes by default, set by file or env (env
// wins), and a non-positive value is refused.
func TestWorkerFailedRetryKey(t *testing.T) {
	noenv := func(string) string { return "" }
	c, err := Load("svcd serve", nil, noenv)
	if err != nil || c.WorkerFailedRetryMs != 300_000 {
		t.Fatalf("default: %d %v", c.WorkerFailedRetryMs, err)
	}
	file := filepath.Join(t.TempDir(), "svcd.hcl")
	if err := os.WriteFile(file, []byte("worker_failed_retry_ms = 60000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load("svcd serve", []string{"-config", file}, noenv)
	if err != nil || c.WorkerFailedRetryMs != 60_000 {
		t.Fatalf("file: %d %v", c.WorkerFailedRetryMs, err)
	}
	env := map[string]string{"SVC_WORKER_FAILED_RETRY_MS": "300"}
	c, err = Load("svcd serve", []string{"-config", file}, func(k string) string { return env[k] })
	if err != nil || c.WorkerFailedRetryMs != 300 {
		t.Fatalf("env: %d %v", c.WorkerFailedRetryMs, err)
	}
	env["SVC_WORKER_FAILED_RETRY_MS"] = "0"
	if _, err := Load("svcd serve", nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "worker_failed_retry_ms") {
		t.Fatalf("0 accepted: %v", err)
	}
}
