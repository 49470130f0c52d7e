package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/fakeplugin"
)

// The benchmarks' direct baselines must not run the caller and the fake
// platform in one process (that makes them unfairly cheap next to the relay,
// which crosses processes). platformChildEnv makes the e2e test binary, run
// again, serve a fake platform instead of running tests.
const platformChildEnv = "SVC_E2E_PLATFORM_CHILD"

// servePlatformChild is called first by TestMain: in the child it serves a
// fake platform, prints its URL and blocks until stdin closes, then returns
// true; otherwise it returns false at once.
func servePlatformChild() bool {
	if os.Getenv(platformChildEnv) != "1" {
		return false
	}
	p := fakeplugin.NewPlatform("bench")
	fmt.Println(p.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.Close()
	return true
}

// platformProcess is a fake platform served by a separate process.
type platformProcess struct {
	URL string
	Pid int
}

func startPlatformProcess(tb testing.TB) platformProcess {
	tb.Helper()
	url, pid := startChildServer(tb, platformChildEnv, "platform child")
	return platformProcess{URL: url, Pid: pid}
}

// startChildServer runs the e2e test binary again with env=1 set, so that
// it serves something (a fake platform, the relay skeleton) until its stdin
// closes, and returns the base URL it prints first and its pid. The child
// stops when the test ends.
func startChildServer(tb testing.TB, env, what string) (string, int) {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		tb.Fatalf("%s: %q %v", what, line, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}
