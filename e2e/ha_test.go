package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/raftstore/snapfile"
)

// haCluster is the harness's two full nodes and a witness.
type haCluster struct {
	*harness.Cluster
	n1, n2 *harness.Daemon
}

const haToken = harness.ClusterToken

func startHACluster(t *testing.T) *haCluster {
	t.Helper()
	return startHAClusterEnv(t, nil)
}

// startHAClusterEnv starts n1 (bootstrap), n2 (-join n1) and a witness with
// extra environment env, and waits until raft lists all three.
func startHAClusterEnv(t testing.TB, env []string) *haCluster {
	t.Helper()
	c := harness.StartCluster(t, env)
	return &haCluster{Cluster: c, n1: c.N1, n2: c.N2}
}

// stop kills every process of the cluster now (benchmarks start many).
func (c *haCluster) stop() { c.Stop() }

func role(t *testing.T, d *harness.Daemon) (string, string) {
	t.Helper()
	var env struct {
		Data struct {
			Role      string `json:"role"`
			LeaderID  string `json:"leader_id"`
			LeaderAPI string `json:"leader_api"`
		} `json:"data"`
	}
	d.Do("GET", "/rolez", nil).Decode(t, &env)
	return env.Data.Role, env.Data.LeaderAPI
}

func TestHATwoNodesAndWitness(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	if r, _ := role(t, c.n1); r != "leader" {
		t.Fatalf("n1 (bootstrapped) role %s", r)
	}
	if r, api := role(t, c.n2); r != "standby" || api != c.n1.Addr {
		t.Fatalf("n2 role %s, leader api %q (want %s)", r, api, c.n1.Addr)
	}
	// readyz: 200 on the active node, 503 on the standby unless standbyok.
	if s := c.n1.Do("GET", "/readyz", nil).Status; s != 200 {
		t.Errorf("n1 readyz %d", s)
	}
	if s := c.n2.Do("GET", "/readyz", nil).Status; s != 503 {
		t.Errorf("n2 readyz %d", s)
	}
	if s := c.n2.Do("GET", "/readyz?standbyok=true", nil).Status; s != 200 {
		t.Errorf("n2 readyz?standbyok %d", s)
	}
	// One cluster, one id: created by the first leader, replicated to the
	// standby, carried by a snapshot taken on either node.
	id := clusterID(t, c.n1)
	waitUntil(t, 10*time.Second, "the standby to show the cluster's id", func() bool { return clusterID(t, c.n2) == id })
	// A node that just joined cannot snapshot until it applied the latest
	// configuration (raft answers "cannot take snapshot now"): wait for it.
	var snap *harness.Response
	waitUntil(t, 15*time.Second, "a snapshot on the standby", func() bool {
		snap = c.n2.DoAuth("GET", "/v1/snapshot", nil)
		return snap.Status == 200 || !strings.Contains(string(snap.Body), "cannot take snapshot now")
	})
	h, _, err := snapfile.Read(bytes.NewReader(snap.Body), 1<<30)
	if err != nil || len(id) != 32 || h.ClusterID != id {
		t.Fatalf("cluster id %q; the standby's snapshot: %d %v %q", id, snap.Status, err, h.ClusterID)
	}
	// A write on the standby is forwarded, lands once, and says who served it.
	before := systemVersion(t, c.n1)
	w := c.n2.Do("POST", "/v1/system/pause", map[string]string{"reason": "via standby"})
	if w.Status != 200 || w.Header.Get("X-Svcd-Served-By") != "n1" {
		t.Fatalf("write on the standby: %d served by %q: %s", w.Status, w.Header.Get("X-Svcd-Served-By"), w.Body)
	}
	if after := systemVersion(t, c.n1); after != before+1 {
		t.Fatalf("one forwarded write moved the version %v → %v", before, after)
	}
	// Reads are served locally and say by whom and at which index.
	waitUntil(t, 5*time.Second, "the standby to apply the write", func() bool { return systemVersion(t, c.n2) == before+1 })
	rd := c.n2.Do("GET", "/v1/system/state", nil)
	if rd.Header.Get("X-Svcd-Served-By") != "n2" || rd.Header.Get("X-Svcd-State-Index") == "" {
		t.Fatalf("standby read headers: %v", rd.Header)
	}
	// Host operations run where they are sent.
	ex := c.n2.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo here"})
	if ex.Status != 200 || ex.Header.Get("X-Svcd-Served-By") != "n2" {
		t.Fatalf("exec on the standby: %d by %q", ex.Status, ex.Header.Get("X-Svcd-Served-By"))
	}
	// The browser WebSocket is the active node's only.
	ws := c.n2.Do("GET", "/ws/browser", nil, "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
	if ws.Status != 503 || !strings.Contains(string(ws.Body), c.n1.Addr) {
		t.Fatalf("WebSocket on the standby: %d %s", ws.Status, ws.Body)
	}
	// The status panel and JSON show the cluster.
	panel := string(c.n2.Do("GET", "/v1/status/ui", nil).Body)
	for _, want := range []string{"Node n1", "Node n2 (this node)", "Node w", "leader", "standby", "witness", "lag ", "leader last heard"} {
		if !strings.Contains(panel, want) {
			t.Errorf("status panel lacks %q", want)
		}
	}
	// Bad cluster calls: clear errors, nothing changes.
	wantError(t, c.n1.DoAuth("POST", "/v1/cluster/remove", map[string]string{"node_id": "nobody"}), 404, "unknown_member")
	wantError(t, c.n1.DoAuth("POST", "/v1/cluster/join", map[string]string{"node_id": "x y", "raft_addr": "127.0.0.1:1", "api_addr": "127.0.0.1:2"}), 422, "invalid_field")
	if r := c.n1.Do("POST", "/v1/cluster/join", map[string]string{"node_id": "x", "raft_addr": "127.0.0.1:1"}); r.Status != 401 {
		t.Fatalf("join without the token: %d", r.Status)
	}
}

// SIGKILL of the leader under a stream of writes from several clients: the
// standby takes over, every acknowledged write is there and none twice, and
// the old leader comes back as a standby and catches up.
func TestHAFailoverKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	var acked, ambiguous atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 3 * time.Second}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			nodes := []*harness.Daemon{c.n1, c.n2}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				d := nodes[(i+n)%2]
				mode := []string{"paused", "running"}[n%2]
				req, _ := http.NewRequest("POST", d.URL+"/v1/system/mode", strings.NewReader(`{"mode":"`+mode+`"}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				switch {
				case err != nil:
					var op *net.OpError
					if !(errors.As(err, &op) && op.Op == "dial") {
						ambiguous.Add(1) // sent, answer lost: it may have committed
					}
					time.Sleep(10 * time.Millisecond)
				case resp.StatusCode == 200:
					acked.Add(1)
				default:
					ambiguous.Add(1) // 503 leader_unreachable and the like
					time.Sleep(10 * time.Millisecond)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		}(i)
	}
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	c.n1.Kill()
	waitUntil(t, 10*time.Second, "n2 to lead", func() bool { r, _ := role(t, c.n2); return r == "leader" })
	t.Logf("n2 leads %v after the kill", time.Since(killed).Round(time.Millisecond))
	ackedAtTakeover := acked.Load()
	waitUntil(t, 10*time.Second, "writes acknowledged by the new leader", func() bool { return acked.Load() > ackedAtTakeover+5 })
	close(stop)
	wg.Wait()

	got := systemVersion(t, c.n2)
	a, amb := float64(acked.Load()), float64(ambiguous.Load())
	t.Logf("acknowledged %v, ambiguous %v, final version %v", a, amb, got)
	if got < a || got > a+amb {
		t.Fatalf("final version %v: want between the %v acknowledged writes and %v (+ the %v whose answer was lost)", got, a, a+amb, amb)
	}
	// The old leader rejoins as a standby and catches up.
	c.n1.Restart()
	waitUntil(t, 15*time.Second, "n1 to rejoin as standby and catch up", func() bool {
		r, _ := role(t, c.n1)
		return r == "standby" && systemVersion(t, c.n1) == got
	})
	// And the cluster still takes writes through either node.
	if r := c.n1.Do("POST", "/v1/system/resume", map[string]string{}); r.Status != 200 || r.Header.Get("X-Svcd-Served-By") != "n2" {
		t.Fatalf("write through the rejoined node: %d by %q", r.Status, r.Header.Get("X-Svcd-Served-By"))
	}
}

// A node whose data dir bootstrapped its own cluster cannot join another.
func TestJoinRefusesABootstrappedDataDir(t *testing.T) {
	t.Parallel()
	lone := harness.Start(t, harness.Options{Token: haToken, Args: []string{"-node-id", "lone", "-raft-addr", harness.FreePort(t)}})
	dir := lone.DataDir
	lone.Kill()
	leader := harness.Start(t, harness.Options{Token: haToken, Args: []string{"-node-id", "n1", "-raft-addr", harness.FreePort(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, harness.Binary(t), "serve", "-listen", harness.FreePort(t), "-data-dir", dir, "-node-id", "lone",
		"-raft-addr", harness.FreePort(t), "-join", leader.Addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot join another cluster") {
		t.Fatalf("joining with a bootstrapped data dir: err=%v\n%s", err, out)
	}
}

// waitTB is waitUntil for tests and benchmarks alike.
func waitTB(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rolling restart of the whole cluster, one node at a time (each waits for
// the cluster to list it again before the next goes), under a steady client
// load that retries by the rule of docs/ha.md: no write fails for good.
func TestHARollingRestartUnderLoad(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	// Fixed addresses: Restart rewrites the Daemon's fields while writers run.
	urls := []string{c.n1.URL, c.n2.URL}
	var done, gaveUp atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 3 * time.Second}
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if retryWrite(client, urls, i+n, 15*time.Second) {
					done.Add(1)
				} else {
					gaveUp.Add(1)
				}
			}
		}(i)
	}
	// The witness first: SIGTERM, start again on its data dir.
	runs := func() int { return strings.Count(c.WitnessLogs(), "witness running") }
	before := runs()
	c.SignalWitness(syscall.SIGTERM)
	c.StartWitness(t)
	waitUntil(t, 20*time.Second, "the witness to run again", func() bool { return runs() > before })
	for _, d := range []*harness.Daemon{c.n2, c.n1} {
		if err := d.Terminate(10 * time.Second); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		d.Restart()
		waitUntil(t, 20*time.Second, "the restarted node to serve in the cluster again", func() bool {
			r, _ := role(t, d)
			return (r == "leader" || r == "standby") && memberCount(d) == 3
		})
	}
	after := done.Load()
	waitUntil(t, 10*time.Second, "writes after the last restart", func() bool { return done.Load() > after+5 })
	close(stop)
	wg.Wait()
	if g := gaveUp.Load(); g != 0 {
		t.Fatalf("%d writes failed for good during the rolling restart (%d succeeded)", g, done.Load())
	}
	t.Logf("%d writes succeeded through the rolling restart, none failed for good", done.Load())
}

// retryWrite sets the mode through any node, retrying connection errors and
// 503s (the documented rule) until deadline.
func retryWrite(client *http.Client, urls []string, start int, deadline time.Duration) bool {
	end := time.Now().Add(deadline)
	for k := start; time.Now().Before(end); k++ {
		req, _ := http.NewRequest("POST", urls[k%len(urls)]+"/v1/system/mode", strings.NewReader(`{"mode":"running"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				return false // not a retryable answer: a real failure
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// The documented manual promotion: a two-voter cluster (no witness) loses a
// node for good; the survivor cannot elect itself until `svcd recover`
// rewrites its configuration to itself alone, after which it leads and keeps
// every write it had.
func TestHARecoverLoneSurvivor(t *testing.T) {
	t.Parallel()
	a1, r1 := harness.FreePortOn(t, "127.0.0.1"), harness.FreePortOn(t, "127.0.0.1")
	a2, r2 := harness.FreePortOn(t, "127.0.0.2"), harness.FreePortOn(t, "127.0.0.2")
	n1 := harness.Start(t, harness.Options{Addr: a1, Token: haToken, Args: []string{"-node-id", "n1", "-raft-addr", r1}})
	n2 := harness.Start(t, harness.Options{Addr: a2, Token: haToken, Args: []string{"-node-id", "n2", "-raft-addr", r2, "-join", a1}})
	waitUntil(t, 20*time.Second, "two members", func() bool { return memberCount(n1) == 2 })
	if r := n1.Do("POST", "/v1/system/pause", map[string]string{"reason": "before the loss"}); r.Status != 200 {
		t.Fatalf("write: %d %s", r.Status, r.Body)
	}
	want := systemVersion(t, n1)
	n2.Kill() // lost for good
	n1.Kill()
	// Restarted alone, n1 has no majority: it stays a standby (and never
	// ready: it cannot catch up without a leader).
	n1.AliveOnly = true
	n1.Restart()
	n1.AliveOnly = false
	time.Sleep(1500 * time.Millisecond)
	if r, _ := role(t, n1); r == "leader" {
		t.Fatal("a lone voter of a two-voter cluster must not elect itself")
	}
	n1.Kill()
	out, err := exec.Command(harness.Binary(t), "recover", "-data-dir", n1.DataDir, "-node-id", "n1", "-raft-addr", r1).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "peers.json") {
		t.Fatalf("svcd recover: %v\n%s", err, out)
	}
	n1.Restart()
	waitUntil(t, 15*time.Second, "the survivor to lead", func() bool { r, _ := role(t, n1); return r == "leader" })
	if got := systemVersion(t, n1); got != want {
		t.Fatalf("after recovery the version is %v, want %v", got, want)
	}
	if r := n1.Do("POST", "/v1/system/resume", map[string]string{}); r.Status != 200 {
		t.Fatalf("write after recovery: %d %s", r.Status, r.Body)
	}
	if _, err := os.Stat(n1.DataDir + "/peers.json.applied"); err != nil {
		t.Fatalf("peers.json was not marked applied: %v", err)
	}
}

// memberCount is how many members a node's GET /v1/cluster lists.
func memberCount(d *harness.Daemon) int { return harness.MemberCount(d) }
