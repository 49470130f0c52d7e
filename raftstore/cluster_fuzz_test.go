package raftstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzClusterCommands applies arbitrary payloads as the three cluster
// commands to a state that already holds a member and a leader: the FSM never
// panics, a refused command leaves the state exactly as it was, and an
// accepted member or leader record always has a node id.
func FuzzClusterCommands(f *testing.F) {
	f.Add(uint8(0), []byte(`{"node_id":"n2","raft_addr":"127.0.0.2:7001","api_addr":"127.0.0.2:4317","kind":"node"}`))
	f.Add(uint8(0), []byte(`{"node_id":"w","raft_addr":"127.0.0.3:7001","kind":"witness"}`))
	f.Add(uint8(0), []byte(`{"node_id":"n2","kind":"cow"}`))
	f.Add(uint8(1), []byte(`{"node_id":"n1"}`))
	f.Add(uint8(2), []byte(`{"node_id":"n2","api_addr":"127.0.0.2:4317","term":7}`))
	f.Add(uint8(2), []byte(`{"node_id":""}`))
	f.Add(uint8(1), []byte(`[`))
	cmds := []string{CmdClusterMember, CmdClusterForget, CmdClusterLeader}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		s := newState()
		seed := Command{Type: CmdClusterMember, At: at, Payload: json.RawMessage(`{"node_id":"n1","raft_addr":"127.0.0.1:7001","api_addr":"127.0.0.1:4317","kind":"node"}`)}
		if _, err := applyClusterMember(s, seed); err != nil {
			t.Fatal(err)
		}
		if _, err := applyClusterLeader(s, Command{Type: CmdClusterLeader, At: at, Payload: json.RawMessage(`{"node_id":"n1","api_addr":"127.0.0.1:4317","term":2}`)}); err != nil {
			t.Fatal(err)
		}
		before, _ := json.Marshal(s.Cluster)

		typ := cmds[int(which)%len(cmds)]
		c := Command{Type: typ, At: at.Add(time.Second), Payload: json.RawMessage(payload)}
		_, err := handlers()[typ](s, c)
		after, _ := json.Marshal(s.Cluster)
		if err != nil {
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("%s refused (%v) but changed the state:\n%s\n%s", typ, err, before, after)
			}
			return
		}
		for id, m := range s.Cluster.Members {
			if id == "" || m.NodeID != id {
				t.Fatalf("member stored under %q has node_id %q", id, m.NodeID)
			}
		}
		if s.Cluster.Leader.NodeID == "" {
			t.Fatalf("%s left a leader record without a node id", typ)
		}
	})
}
