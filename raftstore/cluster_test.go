package raftstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

var testTimings = Timings{Heartbeat: 100 * time.Millisecond, Election: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond}

func openClusterNode(t *testing.T, id string, key []byte, bootstrap bool) *Node {
	t.Helper()
	n, err := Open(Config{NodeID: id, DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0", Bootstrap: bootstrap, ClusterKey: key, Timings: testTimings})
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	t.Cleanup(func() { n.Shutdown() })
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterJoinReplicatesAndFailsOver(t *testing.T) {
	key := []byte("cluster-key-for-tests")
	a := openClusterNode(t, "a", key, true)
	waitFor(t, "a leads", a.IsLeader)

	var mu sync.Mutex
	var seen []bool
	cancel := a.OnLeadership(func(l bool) { mu.Lock(); seen = append(seen, l); mu.Unlock() })
	defer cancel()
	waitFor(t, "leadership hook reports current state", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 && seen[0] })

	b := openClusterNode(t, "b", key, false)
	c := openClusterNode(t, "c", key, false)
	ctx := context.Background()
	if err := b.Join(ctx, "x", "127.0.0.1:1", true); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("join on a follower = %v, want ErrNotLeader", err)
	}
	for _, n := range []*Node{b, c} {
		if err := a.Join(ctx, n.cfg.NodeID, n.RaftAddr(), true); err != nil {
			t.Fatalf("join %s: %v", n.cfg.NodeID, err)
		}
		// A retried join is a no-op.
		if err := a.Join(ctx, n.cfg.NodeID, n.RaftAddr(), true); err != nil {
			t.Fatalf("rejoin %s: %v", n.cfg.NodeID, err)
		}
	}
	if _, err := a.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "t", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Node{b, c} {
		n := n
		waitFor(t, n.cfg.NodeID+" applies the write", func() bool {
			var mode string
			n.Read(func(s *State) { mode = string(s.System.Mode) })
			return mode == string(ModePaused)
		})
	}
	ms, err := a.Members()
	if err != nil || len(ms) != 3 {
		t.Fatalf("members = %+v, %v", ms, err)
	}
	leaders := 0
	for _, m := range ms {
		if m.Role == RoleLeader {
			leaders++
			if m.ID != "a" || !m.Self {
				t.Fatalf("leader member = %+v", m)
			}
		}
	}
	if leaders != 1 {
		t.Fatalf("members = %+v", ms)
	}
	if err := a.Remove(ctx, "nobody"); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("remove unknown = %v", err)
	}

	// Leader gone: one of the others takes over and accepts writes.
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hook reports loss of leadership", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= 2 && !seen[len(seen)-1] })
	waitFor(t, "new leader", func() bool { return b.IsLeader() || c.IsLeader() })
	nl := b
	if c.IsLeader() {
		nl = c
	}
	if _, err := nl.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModeRunning, RequestedBy: "t", Reason: "r"}); err != nil {
		t.Fatalf("write on new leader: %v", err)
	}
	if err := nl.Remove(ctx, "a"); err != nil {
		t.Fatalf("remove dead leader: %v", err)
	}
	ms, _ = nl.Members()
	if len(ms) != 2 {
		t.Fatalf("after remove members = %+v", ms)
	}
}

func TestStrangerCannotJoinOrTalkRaft(t *testing.T) {
	a := openClusterNode(t, "a", []byte("the-right-key"), true)
	waitFor(t, "a leads", a.IsLeader)

	// A raw stranger gets its connection closed after the handshake fails.
	c, err := net.DialTimeout("tcp", a.RaftAddr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := handshake(c, []byte("wrong-key"), true); !errors.Is(err, ErrRaftAuth) {
		t.Fatalf("handshake with wrong key = %v, want ErrRaftAuth", err)
	}

	// A node with the wrong key added to the configuration never catches up:
	// the leader cannot replicate to it, and it never applies a write.
	s := openClusterNode(t, "stranger", []byte("wrong-key"), false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = a.Join(ctx, "stranger", s.RaftAddr(), false) // nonvoter: keeps a's quorum
	if _, err := a.Apply(context.Background(), CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "t", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	var mode string
	s.Read(func(st *State) { mode = string(st.System.Mode) })
	if mode == string(ModePaused) {
		t.Fatal("a node without the cluster key received replicated state")
	}
	if got := s.raft.LastIndex(); got != 0 {
		t.Fatalf("stranger's log has %d entries, want 0", got)
	}

}
