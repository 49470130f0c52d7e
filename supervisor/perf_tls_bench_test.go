package supervisor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/clustertls"
)

// BenchmarkPerfP5TLS: what cluster TLS costs a raft-committed write (issue
// 33, goal p50 <= 1.3x). Two three-voter clusters on loopback in this
// process, one over plain TCP (the cluster-key challenge only), one over
// mutual TLS; the same write (a system mode change, fsync'd on every
// voter) is applied on each leader in alternation, so load from elsewhere
// on the machine lands on both. Applied on the leader directly: the HTTP
// part of P5 is the same on both sides and would only shrink the ratio.
func BenchmarkPerfP5TLS(b *testing.B) {
	plain := benchCluster(b, "plain", nil)
	pki := benchPKI(b)
	secure := benchCluster(b, "tls", pki)
	write := func(n *raftstore.Node) func() {
		i := 0
		return func() {
			i++
			mode := []string{raftstore.ModePaused, raftstore.ModeRunning}[i%2]
			if _, err := n.Apply(context.Background(), raftstore.CmdSetSystemMode, raftstore.SetSystemMode{Mode: mode, RequestedBy: "bench", Reason: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	base, subj := write(plain), write(secure)
	for i := 0; i < 20; i++ { // connections, pools and the TLS sessions up
		base()
		subj()
	}
	bd, sd := benchfig.Alternate(benchfig.Samples(2000)/4, base, subj)
	benchfig.Report(b, benchfig.Figure{ID: "P5tls", Name: "raft-committed write on 3 voters: mutual TLS vs plain TCP", Goal: "p50 <= 1.3x",
		Baseline: benchfig.Summarize("plain TCP", bd, 0), Subject: benchfig.Summarize("mutual TLS", sd, 0),
		Note: "two in-process 3-voter clusters on 127.0.0.1, alternating writes, applied on the leader"})
}

// benchPKI is a CA with one certificate for 127.0.0.1 every voter uses.
func benchPKI(b *testing.B) *clustertls.Holder {
	dir := b.TempDir()
	cp, kp, err := clustertls.CreateCA(dir, "bench CA", time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	ca, err := clustertls.LoadCA(cp, kp)
	if err != nil {
		b.Fatal(err)
	}
	sans, _ := clustertls.ParseSANs("127.0.0.1")
	c, k, err := ca.CreateCert(dir, "node", sans, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	h, err := clustertls.Load(clustertls.Files{CA: cp, Cert: c, Key: k})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// benchCluster starts three voters and returns the leader.
func benchCluster(b *testing.B, name string, h *clustertls.Holder) *raftstore.Node {
	key := []byte("bench cluster key")
	open := func(i int, bootstrap bool) (*raftstore.Node, string) {
		addr := freeLoopbackPort()
		n, err := raftstore.Open(raftstore.Config{NodeID: fmt.Sprintf("%s%d", name, i), DataDir: b.TempDir(), RaftAddr: addr,
			ClusterKey: key, TLS: h, Bootstrap: bootstrap, Timings: raftstore.LibraryTimings()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { n.Shutdown() })
		return n, addr
	}
	leader, _ := open(1, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := leader.WaitLeader(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		n, addr := open(i, false)
		if err := leader.AddVoter(ctx, raftstore.ClusterMember{NodeID: fmt.Sprintf("%s%d", name, i), RaftAddr: addr, Kind: raftstore.KindNode}); err != nil {
			b.Fatal(err)
		}
		_ = n
	}
	if !leader.IsLeader() {
		b.Fatalf("%s: the bootstrap node lost leadership while forming the cluster", name)
	}
	return leader
}
