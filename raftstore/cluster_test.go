package raftstore

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestHandshakeNeedsTheSameKeyBothWays(t *testing.T) {
	for _, c := range []struct {
		name       string
		client     []byte
		server     []byte
		wantClient bool
		wantServer bool
	}{
		{"same key", []byte("k1"), []byte("k1"), true, true},
		{"different keys", []byte("k1"), []byte("k2"), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := net.Pipe()
			s := &authStreamLayer{key: c.server}
			serr := make(chan error, 1)
			go func() { _, _, err := s.serverHandshake(b); serr <- err; b.Close() }()
			cerr := clientHandshake(a, c.client)
			a.Close()
			if (cerr == nil) != c.wantClient {
				t.Errorf("client: %v", cerr)
			}
			if err := <-serr; (err == nil) != c.wantServer {
				t.Errorf("server: %v", err)
			}
		})
	}
}

// Two nodes form a cluster over the authenticated TCP transport; a write on
// the leader reaches the follower; a stranger's bytes on the raft port are
// refused without harming the cluster.
func TestTwoNodesJoinOverAuthenticatedTCP(t *testing.T) {
	key := []byte("cluster-key-for-tests")
	a1, a2 := freeAddr(t), freeAddr(t)
	n1, err := Open(Config{NodeID: "n1", DataDir: filepath.Join(t.TempDir(), "n1"), RaftAddr: a1, ClusterKey: key, Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n1.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	n2, err := Open(Config{NodeID: "n2", DataDir: filepath.Join(t.TempDir(), "n2"), RaftAddr: a2, ClusterKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown()
	if err := n1.AddVoter(ctx, ClusterMember{NodeID: "n2", RaftAddr: a2, APIAddr: "127.0.0.1:1", Kind: KindNode}); err != nil {
		t.Fatal(err)
	}
	// A stranger writes garbage at the raft port: it is dropped.
	if c, err := net.Dial("tcp", a1); err == nil {
		_, _ = c.Write(make([]byte, 200))
		c.Close()
	}
	if _, err := n1.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "t"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var mode string
		n2.Read(func(s *State) { mode = s.System.Mode })
		if mode == ModePaused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower never applied the leader's write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	members, err := n1.Members()
	if err != nil || len(members) != 2 || members[1].NodeID != "n2" || members[1].APIAddr != "127.0.0.1:1" || members[0].Role != RoleLeader {
		t.Fatalf("members %+v %v", members, err)
	}
	if _, err := n2.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModeRunning}); err != ErrNotLeader {
		t.Fatalf("a write on the follower: %v, want ErrNotLeader", err)
	}
}

func TestOpenRefusesTCPWithoutKey(t *testing.T) {
	if _, err := Open(Config{DataDir: t.TempDir(), RaftAddr: freeAddr(t)}); err == nil {
		t.Fatal("a TCP transport without a cluster key must be refused")
	}
}
