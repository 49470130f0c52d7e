package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// A cluster in the network namespace lab over mutual TLS (docs/ha.md, TLS):
// it elects, joins, replicates, and a standby's forwarded write reaches the
// leader over the raft port's TLS channel, not the leader's plain API (n1
// advertises an API address where nothing listens: a plain-HTTP forward
// there fails). A full node of another CA and a node without TLS are
// refused at join and never become members; TLS clients with a foreign
// certificate or none are refused on the raft port, counted by reason in
// svcd_cluster_connections_refused_total and logged once per source.
func TestHAClusterOverTLS(t *testing.T) {
	l := harness.NewNetLab(t)
	pki := harness.NewClusterPKI(t, "svcd lab CA")
	const api, raftPort = "4317", "7001"
	node := func(i int, name, raftAddr, listenPort, apiAdvertise string, env []string, extra ...string) *harness.Daemon {
		args := append([]string{"-listen", "0.0.0.0:" + listenPort, "-node-id", name,
			"-allowed-hosts", l.HostIP(i) + "," + l.ClientIP(i),
			"-api-advertise", apiAdvertise, "-raft-addr", raftAddr}, extra...)
		// A refused node never reaches a leader, so it is never ready
		// (/readyz catching_up): wait for it to be alive only.
		refused := name == "intruder" || name == "plain"
		return harness.Start(t, harness.Options{Addr: l.ClientIP(i) + ":" + listenPort, Token: haToken, Prefix: l.Exec(i), Args: args, Env: env, AliveOnly: refused})
	}
	// Every check below names n1 as the leader (the forward to its dead
	// advertised API, the refusals it counts). With the default timings
	// (150 ms lease, 300 ms heartbeat) a loaded machine stepped n1 down
	// ("failed to contact quorum of nodes, stepping down") and n2 counted
	// the plain node's refusal. This test is about TLS, not failover: the
	// members run hashicorp/raft's own, steadier timings, doubled.
	steady := func(env []string) []string {
		return append(env, "SVC_RAFT_HEARTBEAT_TIMEOUT_MS=2000", "SVC_RAFT_ELECTION_TIMEOUT_MS=2000", "SVC_RAFT_LEASE_TIMEOUT_MS=1000")
	}
	// n1's advertised API port 9 has no listener in its namespace.
	n1 := node(1, "n1", l.HostIP(1)+":"+raftPort, api, l.HostIP(1)+":9", steady(pki.Env(t, "n1", l.HostIP(1))))
	// Members join through n1's raft port: the join call and its token
	// travel inside TLS too.
	n2 := node(2, "n2", l.HostIP(2)+":"+raftPort, api, l.HostIP(2)+":"+api, steady(pki.Env(t, "n2", l.HostIP(2))), "-join", l.HostIP(1)+":"+raftPort)
	w := exec.Command("ip", "netns", "exec", l.NS("n3"), harness.Binary(t), "witness", "-node-id", "w",
		"-raft-addr", l.HostIP(3)+":"+raftPort, "-join", l.HostIP(1)+":"+raftPort, "-data-dir", t.TempDir())
	w.Env = append(append(os.Environ(), "SVC_SHARED_TOKEN="+haToken), steady(pki.Env(t, "w", l.HostIP(3)))...)
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	noRace(t, n1, n2)
	waitUntil(t, 20*time.Second, "three members over TLS", func() bool { return memberCount(n1) == 3 })
	if r, _ := role(t, n1); r != "leader" {
		t.Fatalf("n1 role %s", r)
	}
	if !strings.Contains(n1.Logs(), "raft and forwarded calls use mutual TLS") {
		t.Fatalf("n1 does not say it runs TLS:\n%s", n1.Logs())
	}

	// A write on the leader replicates to the standby.
	if r := n1.Do("POST", "/v1/system/pause", `{"reason":"tls"}`, "Content-Type: application/json"); r.Status != 200 {
		t.Fatalf("write on the leader: %d %s", r.Status, r.Body)
	}
	v := systemVersion(t, n1)
	waitUntil(t, 5*time.Second, "n2 to apply the write", func() bool { return systemVersion(t, n2) >= v })

	// A standby's write is forwarded over TLS and served by n1.
	r := n2.Do("POST", "/v1/system/resume", `{}`, "Content-Type: application/json")
	if r.Status != 200 || r.Header.Get("X-Svcd-Served-By") != "n1" {
		t.Fatalf("forwarded write: %d served by %q: %s\nn2 log:\n%s", r.Status, r.Header.Get("X-Svcd-Served-By"), r.Body, n2.Logs())
	}
	if systemVersion(t, n1) <= v {
		t.Fatal("the forwarded write did not reach the leader")
	}

	// A full node of another CA asks to join through n1's raft port: the
	// TLS handshake fails (it does not trust n1, n1 would not trust it).
	foreign := harness.NewClusterPKI(t, "another CA")
	before := refusals(t, n1)
	f := node(2, "intruder", l.HostIP(2)+":7002", "4318", l.HostIP(2)+":4318", foreign.Env(t, "intruder", l.HostIP(2)), "-join", l.HostIP(1)+":"+raftPort)
	// A node without TLS (plain TCP said explicitly) joins through n1's
	// public API in plain HTTP: the leader probes its raft port, finds no
	// TLS there and refuses the join.
	p := node(2, "plain", l.HostIP(2)+":7003", "4319", l.HostIP(2)+":4319", []string{"SVC_CLUSTER_TLS=off"}, "-join", l.HostIP(1)+":"+api)
	waitUntil(t, 15*time.Second, "both joins refused", func() bool {
		return strings.Contains(f.Logs(), "join attempt failed") && strings.Contains(p.Logs(), "peer_refused")
	})
	waitUntil(t, 5*time.Second, "the leader to count both", func() bool {
		m := refusals(t, n1)
		return m["refused_by_peer"] > before["refused_by_peer"] && m["not_tls"] > before["not_tls"]
	})
	if m := refusals(t, f); m["untrusted_certificate"] == 0 {
		t.Fatalf("the intruder did not count n1's certificate as untrusted: %v", m)
	}
	if n := memberCount(n1); n != 3 {
		t.Fatalf("%d members after refused joins, want 3", n)
	}

	// TLS clients on the raft port from host 3: a foreign certificate, then
	// none. Both refused in the handshake, counted, logged once for the source.
	ff := foreign.Issue(t, "stranger", l.HostIP(3))
	before = refusals(t, n1)
	for _, certArgs := range [][]string{{"-cert", ff.Cert, "-key", ff.Key}, nil} {
		args := append([]string{"netns", "exec", l.NS("n3"), "openssl", "s_client", "-tls1_3", "-connect", l.HostIP(1) + ":" + raftPort, "-quiet"}, certArgs...)
		cmd := exec.Command("ip", args...)
		cmd.Stdin = strings.NewReader(strings.Repeat("x", 64))
		out, _ := cmd.CombinedOutput()
		t.Logf("openssl s_client %v: %s", certArgs, firstLines(string(out), 3))
	}
	waitUntil(t, 5*time.Second, "refusals of a foreign and a missing client certificate", func() bool {
		m := refusals(t, n1)
		return m["untrusted_certificate"] > before["untrusted_certificate"] && m["no_certificate"] > before["no_certificate"]
	})
	if n := strings.Count(n1.Logs(), "cluster connection refused before any raft byte: remote="+l.HostIP(3)+":"); n != 1 {
		t.Fatalf("%d log lines for host 3's two refusals within a minute, want 1:\n%s", n, n1.Logs())
	}
	if r, _ := role(t, n1); r != "leader" {
		t.Fatalf("n1 role %s after the refusals", r)
	}
}

// refusals reads svcd_cluster_connections_refused_total by reason.
func refusals(t *testing.T, d *harness.Daemon) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(d.Do("GET", "/metrics", nil).Body)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "svcd_cluster_connections_refused_total{") {
			continue
		}
		i, j := strings.Index(line, `reason="`), strings.LastIndex(line, " ")
		if i < 0 || j < 0 {
			continue
		}
		reason := line[i+len(`reason="`):]
		reason = reason[:strings.Index(reason, `"`)]
		v, _ := strconv.ParseFloat(line[j+1:], 64)
		out[reason] = v
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return fmt.Sprint(lines)
}

// The loopback cluster over TLS (no namespaces needed): a standby's write is
// forwarded to the leader over TLS; the leader is killed, the standby and
// the witness elect over TLS, the old leader restarts on its data dir,
// reconnects with its certificate, catches up, and forwards to the new
// leader.
func TestHAFailoverOverTLS(t *testing.T) {
	t.Parallel()
	c := harness.StartClusterWith(t, harness.ClusterOptions{TLS: true})
	n1, n2 := c.N1, c.N2
	noRace(t, n1, n2)
	for _, d := range []*harness.Daemon{n1, n2} {
		if !strings.Contains(d.Logs(), "raft and forwarded calls use mutual TLS") {
			t.Fatalf("%s does not run cluster TLS:\n%s", d.URL, d.Logs())
		}
	}
	if r := n2.Do("POST", "/v1/system/pause", `{"reason":"tls"}`, "Content-Type: application/json"); r.Status != 200 || r.Header.Get("X-Svcd-Served-By") != "n1" {
		t.Fatalf("forwarded write: %d by %q: %s", r.Status, r.Header.Get("X-Svcd-Served-By"), r.Body)
	}
	n1.Kill()
	waitUntil(t, 10*time.Second, "n2 to lead over TLS", func() bool { r, _ := role(t, n2); return r == "leader" })
	if r := n2.Do("POST", "/v1/system/resume", `{}`, "Content-Type: application/json"); r.Status != 200 {
		t.Fatalf("write on the new leader: %d %s", r.Status, r.Body)
	}
	want := systemVersion(t, n2)
	n1.Restart()
	waitUntil(t, 15*time.Second, "n1 to rejoin over TLS and catch up", func() bool {
		r, _ := role(t, n1)
		return r == "standby" && systemVersion(t, n1) == want
	})
	if r := n1.Do("POST", "/v1/system/pause", `{"reason":"back"}`, "Content-Type: application/json"); r.Status != 200 || r.Header.Get("X-Svcd-Served-By") != "n2" {
		t.Fatalf("write through the restarted node: %d by %q: %s", r.Status, r.Header.Get("X-Svcd-Served-By"), r.Body)
	}
	for _, d := range []*harness.Daemon{n1, n2} {
		if m := refusals(t, d); m["untrusted_certificate"]+m["no_certificate"]+m["not_tls"]+m["cluster_key"] != 0 {
			t.Fatalf("%s refused a member: %v", d.URL, m)
		}
	}
}

// noRace fails the test if a daemon reported a data race (SVCD_E2E_RACE=1
// builds it with the race detector).
func noRace(t *testing.T, ds ...*harness.Daemon) {
	t.Cleanup(func() {
		for _, d := range ds {
			if strings.Contains(d.Logs(), "DATA RACE") {
				t.Errorf("%s reported a data race:\n%s", d.URL, d.Logs())
			}
		}
	})
}
