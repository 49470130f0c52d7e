package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterToken is the shared token of a Cluster's three members.
const ClusterToken = "ha-test-token-0123456789abcdefghijkl"

// Cluster is two full nodes and a witness on 127.0.0.1-3: n1 bootstraps, n2
// joins n1, the witness joins either.
type Cluster struct {
	N1, N2 *Daemon

	wmu     sync.Mutex
	witness *exec.Cmd
	wdone   chan struct{}
	wlogs   strings.Builder
	wargs   []string
	wenv    []string
	wprefix []string
	bin     string
	// Lab is the network namespace lab the members run in (ClusterOptions.Lab).
	Lab *NetLab
	// PKI is the cluster CA of a TLS cluster (ClusterOptions.TLS), else nil.
	PKI *ClusterPKI
}

// ClusterOptions configure StartClusterWith.
type ClusterOptions struct {
	Env        []string // for both nodes and the witness
	Env1, Env2 []string // for n1 or n2 only, on top of Env
	Bin        string   // another copy of the binary (Options.Bin)
	// Lab runs the members in a network namespace lab (NewNetLab) instead
	// of on 127.0.0.1-3: n1, n2 and the witness on the lab's hosts 1-3,
	// the test reaching n1 and n2 over their client links, so Lab.Cut can
	// partition a node while the test still talks to it.
	Lab *NetLab
	// TLS runs raft and forwarded calls over mutual TLS with a fresh
	// cluster CA (Cluster.PKI), each member's certificate naming its raft
	// host. Without it a lab cluster says cluster_tls = "off" explicitly
	// (its raft addresses are not loopback; docs/ha.md, TLS).
	TLS bool
}

// StartCluster starts n1, n2 and the witness with extra environment env (for
// both nodes and the witness), and waits until raft lists all three.
func StartCluster(t testing.TB, env []string) *Cluster {
	return StartClusterNodeEnv(t, env, nil, nil)
}

// StartClusterNodeEnv is StartCluster with environment only n1 (env1) or
// only n2 (env2) gets on top of env: a worker that listens on a fixed
// port, say, can run on one node only.
func StartClusterNodeEnv(t testing.TB, env, env1, env2 []string) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{Env: env, Env1: env1, Env2: env2})
}

// StartClusterWith starts the cluster as o says.
func StartClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	env, env1, env2 := o.Env, o.Env1, o.Env2
	c := &Cluster{bin: o.Bin, Lab: o.Lab}
	var wenv []string
	if o.TLS {
		c.PKI = NewClusterPKI(t, "svcd test cluster CA")
		host := func(i int) string { return fmt.Sprintf("127.0.0.%d", i) }
		if o.Lab != nil {
			host = o.Lab.HostIP
		}
		env1 = append(append([]string{}, env1...), c.PKI.Env(t, "n1", host(1))...)
		env2 = append(append([]string{}, env2...), c.PKI.Env(t, "n2", host(2))...)
		wenv = c.PKI.Env(t, "w", host(3))
	} else if o.Lab != nil {
		env = append(append([]string{}, env...), "SVC_CLUSTER_TLS=off")
	}
	if l := o.Lab; l != nil {
		// Fixed ports: each host has its own namespace.
		const api, raftPort = "4317", "7001"
		// The test's plugins reach a node over its client link, from the
		// link's root end: the bridge takes such peers when configured.
		cfg := filepath.Join(t.TempDir(), "lab.hcl")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("browser_allowed_peers = [%q, %q]\n", l.RootIP(1), l.RootIP(2))), 0o600); err != nil {
			t.Fatal(err)
		}
		node := func(i int, env []string, extra ...string) *Daemon {
			args := append([]string{"-config", cfg, "-listen", "0.0.0.0:" + api, "-node-id", fmt.Sprintf("n%d", i),
				"-allowed-hosts", l.HostIP(i) + "," + l.ClientIP(i),
				"-api-advertise", l.HostIP(i) + ":" + api, "-raft-addr", l.HostIP(i) + ":" + raftPort}, extra...)
			return Start(t, Options{Bin: o.Bin, Addr: l.ClientIP(i) + ":" + api, Token: ClusterToken, Prefix: l.Exec(i), Env: env, Args: args})
		}
		c.N1 = node(1, append(append([]string{}, env...), env1...))
		// With cluster TLS a member joins through another's raft port.
		join := api
		if o.TLS {
			join = raftPort
		}
		c.N2 = node(2, append(append([]string{}, env...), env2...), "-join", l.HostIP(1)+":"+join)
		c.wprefix = []string{"nsenter", "--net=/run/netns/" + l.NS("n3"), "--"}
		c.wargs = []string{"witness", "-node-id", "w", "-raft-addr", l.HostIP(3) + ":" + raftPort, "-join", l.HostIP(1) + ":" + join + "," + l.HostIP(2) + ":" + join, "-data-dir", t.TempDir()}
	} else {
		a1, r1 := FreePortOn(t, "127.0.0.1"), FreePortOn(t, "127.0.0.1")
		a2, r2 := FreePortOn(t, "127.0.0.2"), FreePortOn(t, "127.0.0.2")
		rw := FreePortOn(t, "127.0.0.3")
		c.N1 = Start(t, Options{Bin: o.Bin, Addr: a1, Token: ClusterToken, Env: append(append([]string{}, env...), env1...), Args: []string{"-node-id", "n1", "-raft-addr", r1}})
		j1, j2 := a1, a2
		if o.TLS { // with cluster TLS a member joins through another's raft port
			j1, j2 = r1, r2
		}
		c.N2 = Start(t, Options{Bin: o.Bin, Addr: a2, Token: ClusterToken, Env: append(append([]string{}, env...), env2...), Args: []string{"-node-id", "n2", "-raft-addr", r2, "-join", j1}})
		c.wargs = []string{"witness", "-node-id", "w", "-raft-addr", rw, "-join", j1 + "," + j2, "-data-dir", t.TempDir()}
	}
	c.wenv = append(append(append(os.Environ(), "SVC_SHARED_TOKEN="+ClusterToken), env...), wenv...)
	c.StartWitness(t)
	t.Cleanup(func() {
		c.KillWitness()
		if t.Failed() {
			// n1's and n2's logs are printed by Start's own cleanup.
			t.Logf("witness log:\n%s", c.WitnessLogs())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for MemberCount(c.N1) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for three cluster members")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c
}

// StartWitness (re)starts the witness process with its fixed arguments.
func (c *Cluster) StartWitness(t testing.TB) {
	t.Helper()
	bin := c.bin
	if bin == "" {
		bin = Binary(t)
	}
	argv := append(append(append([]string{}, c.wprefix...), bin), c.wargs...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = c.wenv
	cmd.Stdout, cmd.Stderr = c.witnessLog(), c.witnessLog()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // dies with the test binary, as daemons do
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.wmu.Lock()
	c.witness, c.wdone = cmd, done
	c.wmu.Unlock()
}

// WitnessPid is the running witness's process id.
func (c *Cluster) WitnessPid() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.witness.Process.Pid
}

// SignalWitness sends sig to the witness and, for SIGKILL and SIGTERM,
// waits for it to exit.
func (c *Cluster) SignalWitness(sig syscall.Signal) {
	c.wmu.Lock()
	cmd, done := c.witness, c.wdone
	c.wmu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		<-done
	}
}

// KillWitness ends the witness with SIGKILL and waits for it.
func (c *Cluster) KillWitness() { c.SignalWitness(syscall.SIGKILL) }

// WitnessLogs is everything the witness wrote so far (all its runs).
func (c *Cluster) WitnessLogs() string {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.wlogs.String()
}

// Stop kills every process of the cluster now.
func (c *Cluster) Stop() {
	c.N1.Kill()
	c.N2.Kill()
	c.KillWitness()
}

func (c *Cluster) witnessLog() lockedLog { return lockedLog{c} }

type lockedLog struct{ c *Cluster }

func (w lockedLog) Write(p []byte) (int, error) {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	return w.c.wlogs.Write(p)
}

// Role is a node's GET /rolez: its role and the leader's API address.
func Role(d *Daemon) (role, leaderAPI string, err error) {
	var env struct {
		Data struct {
			Role      string `json:"role"`
			LeaderAPI string `json:"leader_api"`
		} `json:"data"`
	}
	r, err := Get(d.URL+"/rolez", 2*time.Second)
	if err != nil {
		return "", "", err
	}
	if err := json.Unmarshal(r, &env); err != nil {
		return "", "", fmt.Errorf("rolez: %v", err)
	}
	return env.Data.Role, env.Data.LeaderAPI, nil
}

// MemberCount is how many members a node's GET /v1/cluster lists (0 when it
// does not answer).
func MemberCount(d *Daemon) int {
	var env struct {
		Data struct {
			Members []struct{ NodeID string } `json:"members"`
		} `json:"data"`
	}
	b, err := Get(d.URL+"/v1/cluster", 2*time.Second)
	if err != nil || json.Unmarshal(b, &env) != nil {
		return 0
	}
	return len(env.Data.Members)
}
