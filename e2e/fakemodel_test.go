package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// TestFakeModelSubcommand: the hidden `svcd fake-model` prints its base URL,
// streams a scripted reply (with an instr block, verbatim) as Responses-API
// events, then answers a scripted error, then the default.
func TestFakeModelSubcommand(t *testing.T) {
	script := filepath.Join(t.TempDir(), "replies.json")
	reply := "Run this:\n```instr\n@svc::status\n```\n"
	if err := os.WriteFile(script, []byte(`[{"text":`+quote(reply)+`,"chunks":4},{"error_status":400,"error_message":"scripted failure"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(harness.Binary(t), "fake-model", "-script", script, "-default", "fallback")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL line: %q %v", base, err)
	}
	base = strings.TrimSpace(base)
	post := func() (int, string) {
		resp, err := http.Post(base+"/responses", "application/json", strings.NewReader(`{"model":"fake-model","stream":true,"input":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post()
	if code != 200 || strings.Count(body, "event: response.output_text.delta") != 4 || !strings.Contains(body, "event: response.completed") ||
		!strings.Contains(body, `@svc::status`) {
		t.Fatalf("scripted reply: %d %s", code, body)
	}
	if code, body := post(); code != 400 || !strings.Contains(body, "scripted failure") {
		t.Fatalf("scripted error: %d %s", code, body)
	}
	if code, body := post(); code != 200 || !strings.Contains(body, "fallback") {
		t.Fatalf("default reply: %d %s", code, body)
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
