package telemetry

import (
	"strings"
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

func TestRaftKeysRenamed(t *testing.T) {
	s := &RaftSink{}
	for _, c := range []struct {
		key   []string
		k     kind
		want  string
		scale float32
	}{
		{[]string{"raft", "commitTime"}, kindSample, "svcd_raft_commit_time_seconds", 1},
		{[]string{"raft", "state", "leader"}, kindCounter, "svcd_raft_state_leader_total", 1},
		{[]string{"raft", "leader", "lastContact"}, kindSample, "svcd_raft_leader_last_contact_seconds", 0.001},
		{[]string{"raft", "fsm", "applyBatchNum"}, kindSample, "svcd_raft_fsm_apply_batch_num", 1},
		{[]string{"raft", "thread", "fsm", "saturation"}, kindSample, "svcd_raft_thread_fsm_saturation_ratio", 1},
		{[]string{"raft", "boltdb", "logBatchSize"}, kindSample, "svcd_raft_boltdb_log_batch_size_bytes", 1},
		{[]string{"raft", "peers"}, kindGauge, "svcd_raft_peers", 1},
		{[]string{"raft", "replication", "appendEntries", "rpc"}, kindSample, "svcd_raft_replication_append_entries_rpc_seconds", 1},
	} {
		got, scale := s.rename(c.key, c.k)
		if got[0] != c.want || scale != c.scale {
			t.Errorf("%v: %s ×%v, want %s ×%v", c.key, got[0], scale, c.want, c.scale)
		}
	}
}

// A sink that closed receives nothing more; a live one gets the global's
// samples with the peer id dropped.
func TestRaftSinkFanout(t *testing.T) {
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a, err := NewRaftSink(regA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRaftSink(regB)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	gometrics.IncrCounterWithLabels([]string{"raft", "replication", "appendEntries", "logs"}, 3, []gometrics.Label{{Name: "peer_id", Value: "node-secret-id"}})
	mfs, err := regB.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "svcd_raft_replication_append_entries_logs_total" {
			found = true
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 3 {
				t.Fatalf("value %v, want 3", v)
			}
			if len(mf.GetMetric()[0].GetLabel()) != 0 {
				t.Fatalf("labels %v, want none (peer_id dropped)", mf.GetMetric()[0].GetLabel())
			}
		}
	}
	if !found {
		t.Fatalf("the live sink got nothing: %v", mfs)
	}
	mfsA, _ := regA.Gather()
	for _, mf := range mfsA {
		if strings.HasPrefix(mf.GetName(), "svcd_raft") {
			t.Fatalf("a closed sink still exposes %s", mf.GetName())
		}
	}
	b.Close()
}
