package raftstore

import (
	"context"
	"testing"
	"time"
)

// A delivery the plugin answered duplicate (typed before a crash) finishes
// the job done, marked duplicate, and counts as a renewal like any success;
// duplicate on a failed delivery is not kept.
func TestJobFinishDuplicate(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer func() { n.Shutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	apply := func(typ string, p any) any {
		v, err := n.Apply(ctx, typ, p)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return v
	}
	apply(CmdConvAutomation, ConvAutomation{ConvLink: ConvLink{LocalID: "c1"}, Status: AutoAuto})
	run := func(ok, dup bool) RenewalJob {
		j := apply(CmdJobCreate, JobCreate{LocalID: "c1", Message: "m", DueAt: time.Now()}).(RenewalJob)
		apply(CmdJobStart, JobRef{JobID: j.ID})
		return apply(CmdJobFinish, JobFinish{JobID: j.ID, OK: ok, Duplicate: dup, Error: map[bool]string{false: "x"}[ok]}).(RenewalJob)
	}
	if j := run(true, true); j.Status != JobDone || !j.Duplicate {
		t.Fatalf("duplicate delivery: %+v", j)
	}
	if j := run(false, true); j.Status != JobFailed || j.Duplicate {
		t.Fatalf("failed delivery: %+v", j)
	}
	if j := run(true, false); j.Duplicate {
		t.Fatalf("plain delivery: %+v", j)
	}
	var renewals int
	n.Read(func(st *State) { renewals = st.Conversations.ByID["c1"].RepeatedRenewalCount })
	if renewals != 2 {
		t.Fatalf("repeated_renewal_count %d, want 2 (both successes)", renewals)
	}
}
