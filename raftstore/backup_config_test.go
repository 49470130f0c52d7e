package raftstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A backup asked for while a membership change is still on its way to the
// FSM (a join the caller saw in the configuration before it was applied)
// is taken once the FSM has applied it, not refused (raft: "cannot take
// snapshot now, wait until the configuration entry at N has been applied").
func TestBackupRightAfterAMembershipChange(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	for i := 0; i < 50; i++ {
		// Something new for the snapshot to hold.
		if _, err := n.Apply(context.Background(), CmdSetSystemMode, SetSystemMode{Mode: []string{ModePaused, ModeRunning}[i%2], RequestedBy: "t"}); err != nil {
			t.Fatal(err)
		}
		id := raft.ServerID(fmt.Sprintf("learner-%d", i))
		// A non-voter changes the configuration without changing the quorum:
		// it commits on this node alone.
		change := n.raft.AddNonvoter(id, raft.ServerAddress(fmt.Sprintf("127.0.0.1:%d", 1+i)), 0, 0)
		deadline := time.Now().Add(5 * time.Second)
		for !inConfiguration(t, n, id) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never in the configuration", id)
			}
		}
		b, err := n.OpenBackup(context.Background())
		if err != nil {
			t.Fatalf("backup %d right after a membership change: %v", i, err)
		}
		b.Close()
		if err := change.Error(); err != nil {
			t.Fatal(err)
		}
	}
}

func inConfiguration(t *testing.T, n *Node, id raft.ServerID) bool {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		t.Fatal(err)
	}
	for _, s := range fut.Configuration().Servers {
		if s.ID == id {
			return true
		}
	}
	return false
}
