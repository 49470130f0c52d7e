package raftstoretest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// Fill makes the state it says through the FSM: the bounds of each area
// keep what they keep, and every auto conversation got its finished job.
func TestFillMakesTheScaledState(t *testing.T) {
	s := Scale{Tasks: 1200, LogLines: 3, Conversations: 40, Auto: 20, Browser: 30, Jobs: 20, RelayTargets: 120}
	if os.Getenv("SVC_FILL_LARGE") != "" {
		s = LargeScale()
	}
	n := Node(t)
	t0 := time.Now()
	cmds, err := Fill(context.Background(), n, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commands in %v", cmds, time.Since(t0))
	n.Read(func(st *raftstore.State) {
		if got, want := len(st.Tasks.ByID), min(s.Tasks, raftstore.MaxFinishedTasks); got != want {
			t.Errorf("tasks = %d, want %d (compacted to the bound)", got, want)
		}
		if got := st.Tasks.Seq; got != uint64(s.Tasks) {
			t.Errorf("task seq = %d, want %d", got, s.Tasks)
		}
		for _, x := range st.Tasks.ByID {
			if x.FinishedAt == nil || len(x.Runs[0].Logs) != s.LogLines {
				t.Fatalf("task %s: finished %v, %d log lines", x.ID, x.FinishedAt, len(x.Runs[0].Logs))
			}
		}
		if got := len(st.Conversations.ByID); got != s.Conversations {
			t.Errorf("conversations = %d, want %d", got, s.Conversations)
		}
		auto := 0
		for _, c := range st.Conversations.ByID {
			if c.AutomationStatus == raftstore.AutoAuto {
				auto++
			}
		}
		if auto != s.Auto {
			t.Errorf("auto conversations = %d, want %d", auto, s.Auto)
		}
		if got := len(st.Browser.Records); got != s.Browser {
			t.Errorf("browser records = %d, want %d", got, s.Browser)
		}
		if got, want := len(st.Relay.Targets), min(s.RelayTargets, raftstore.MaxRelayTargets); got != want {
			t.Errorf("relay targets = %d, want %d", got, want)
		}
		if rt := st.Relay.Targets[raftstore.RecordKey("client-0", "platform_a", "user0@example.test")]; rt == nil || rt.Breaker != raftstore.BreakerOpen {
			t.Errorf("record 0's relay target = %+v, want one with its breaker open", rt)
		}
		if got := st.Jobs.Seq; got != uint64(s.Jobs) {
			t.Errorf("job seq = %d, want %d", got, s.Jobs)
		}
	})
}
