package e2e

import (
	"net"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// connectProbe dials each 127.0.0.1:PORT given and prints the outcome.
const connectProbe = `package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	for _, a := range os.Args[1:] {
		c, err := net.DialTimeout("tcp", a, 3*time.Second)
		if err != nil {
			fmt.Printf("connect %s: %v\n", a, err)
			continue
		}
		c.Close()
		fmt.Printf("connect %s: CONNECTED\n", a)
	}
}
`

// Issue 32, attack 4 (its command part): a command reached the daemon's
// own API, and so every route the token level leaves open to a local
// process. By default a command cannot connect to the daemon's listeners
// (API, raft, agentd), on Landlock ABI 4+; another local port still works.
func TestCommandCannotConnectToDaemon(t *testing.T) {
	t.Parallel()
	probe := buildProbe(t, "connectprobe", connectProbe)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() }) // after the parallel subtests
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, way := range strangerWays(t) {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			raft, agentd := harness.FreePort(t), harness.FreePort(t)
			d := way.start(t, harness.Options{Args: []string{"-raft-addr", raft}, Env: []string{"SVC_AGENTD_LISTEN=" + agentd}})
			needSandbox(t, d)
			targets := []string{d.Addr, raft, agentd}
			r := execCall(t, d, map[string]any{"command": probe + " " + strings.Join(append(targets, other.Addr().String()), " "), "cwd": "/"})
			got := r.Result.Stdout
			t.Logf("%s", got)
			if !r.OK {
				t.Fatalf("exec: %+v", r)
			}
			for _, a := range targets {
				if l := lineWith(got, "connect "+a+":"); l == "" || strings.Contains(l, "CONNECTED") {
					t.Errorf("a command connected to the daemon's listener %s: %q", a, l)
				}
			}
			if !strings.Contains(lineWith(got, "connect "+other.Addr().String()), "CONNECTED") {
				t.Errorf("a command could not connect to another local port: %s", got)
			}
			var rt sandboxRuntime
			d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
			if rt.Data.Sandbox.Connect != "landlock" {
				t.Errorf("/v1/runtime sandbox.connect = %q, want landlock", rt.Data.Sandbox.Connect)
			}
		})
	}
}
